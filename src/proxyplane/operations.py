"""Import every domain's operations so that REGISTRY is complete."""

from proxyplane.domains.accounts import logins as _logins  # noqa: F401
from proxyplane.domains.accounts import operator_ops as _operator_accounts  # noqa: F401
from proxyplane.domains.accounts import ops as _accounts  # noqa: F401
from proxyplane.domains.accounts import recovery as _recovery  # noqa: F401  (issue 34)
from proxyplane.domains.accounts import session_ops as _session_ops  # noqa: F401  (issue 34)
from proxyplane.domains.accounts import two_factor as _two_factor  # noqa: F401  (issue 34)
from proxyplane.domains.accounts import web_ops as _web_accounts  # noqa: F401
from proxyplane.domains.addons import ops as _addons  # noqa: F401
from proxyplane.domains.agent import limits as _limits  # noqa: F401
from proxyplane.domains.agent import mcp_state as _mcp_state  # noqa: F401  (issue 35.3)
from proxyplane.domains.agent import ops as _agent  # noqa: F401
from proxyplane.domains.apikeys import ops as _apikeys  # noqa: F401
from proxyplane.domains.catalog import ops as _catalog  # noqa: F401
from proxyplane.domains.connections import client_ip_ops as _client_ips  # noqa: F401  (issue 32.5)
from proxyplane.domains.connections import ops as _connections  # noqa: F401
from proxyplane.domains.events import ops as _events  # noqa: F401
from proxyplane.domains.geo import cities_ops as _cities  # noqa: F401  (issue 36)
from proxyplane.domains.geo import ops as _geo  # noqa: F401  (issue 36)
from proxyplane.domains.invoices import ops as _invoices  # noqa: F401
from proxyplane.domains.ips import ops as _ips  # noqa: F401
from proxyplane.domains.legacy import ops as _legacy  # noqa: F401
from proxyplane.domains.mail import operator_ops as _operator_mail  # noqa: F401  (issue 34)
from proxyplane.domains.oauth import consent_ops as _oauth_consent  # noqa: F401
from proxyplane.domains.oauth import ops as _oauth  # noqa: F401
from proxyplane.domains.operators import console_ops as _console  # noqa: F401  (issue 33)
from proxyplane.domains.operators import desk_ops as _operator_desk  # noqa: F401  (issue 33)
from proxyplane.domains.operators import email_ops as _operator_emails  # noqa: F401  (issue 33)
from proxyplane.domains.operators import list_ops as _operator_lists  # noqa: F401  (issue 33)
from proxyplane.domains.operators import ops as _operators  # noqa: F401  (issue 33)
from proxyplane.domains.operators import reseller_ops as _resellers  # noqa: F401  (issue 33.4)
from proxyplane.domains.operators import view_as as _operator_view_as  # noqa: F401  (issue 33)
from proxyplane.domains.orders import ops as _orders  # noqa: F401
from proxyplane.domains.orders import unpaid as _unpaid  # noqa: F401
from proxyplane.domains.proxy import ops as _proxy  # noqa: F401
from proxyplane.domains.proxy import sticky_ops as _sticky  # noqa: F401
from proxyplane.domains.quotas import operator_ops as _operator_quotas  # noqa: F401  (issue 32)
from proxyplane.domains.quotas import ops as _quotas  # noqa: F401  (metered traffic: issue 32)
from proxyplane.domains.renewals import ops as _renewals  # noqa: F401
from proxyplane.domains.services import ops as _services  # noqa: F401
from proxyplane.domains.stock import operator_ops as _operator_stock  # noqa: F401
from proxyplane.domains.stock import prefix_ops as _prefix_ops  # noqa: F401  (IPv6: issue 16)
from proxyplane.domains.subusers import ops as _subusers  # noqa: F401
from proxyplane.domains.team import ops as _team  # noqa: F401  (team accounts: issue 34.5)
from proxyplane.domains.team import web_ops as _team_web  # noqa: F401  (issue 34.5)
from proxyplane.domains.tickets import operator_ops as _operator_tickets  # noqa: F401
from proxyplane.domains.tickets import ops as _tickets  # noqa: F401
from proxyplane.domains.upstreams import ops as _upstreams  # noqa: F401  (upstream pools: issue 36)
from proxyplane.domains.usage import ops as _usage  # noqa: F401
from proxyplane.domains.wallet import checkout_page as _checkout_page  # noqa: F401
from proxyplane.domains.wallet import ops as _wallet  # noqa: F401
from proxyplane.domains.wallet import payment_callback as _payment_callback  # noqa: F401
from proxyplane.domains.webhooks import ops as _webhooks  # noqa: F401
from proxyplane.ops import REGISTRY

__all__ = ["REGISTRY"]
