"""Import every domain's operations so that REGISTRY is complete."""

from proxyplane.domains.accounts import ops as _accounts  # noqa: F401
from proxyplane.domains.agent import ops as _agent  # noqa: F401
from proxyplane.domains.apikeys import ops as _apikeys  # noqa: F401
from proxyplane.domains.wallet import ops as _wallet  # noqa: F401
from proxyplane.ops import REGISTRY

__all__ = ["REGISTRY"]
