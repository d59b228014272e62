"""The `proxyplane` command. One module per command group; each defines its commands without importing
this package (no import circle), and `main` imports each one when its command runs (COMMANDS below):

- serve.py: `migrate`, `serve` (server.py starts the app under uvicorn with the gateway and jobs)
- gateway.py: `gateway` (one node per host, N workers); worker.py: `worker`; renewals.py: `renewals`
- doctor.py: `doctor`
- admin.py: `admin` (customers, keys, wallets, KYC, partner discounts) with admin_stock.py
  (stock, product, price) and admin_tickets.py (ticket)
Shared helpers (one unit of work per admin command, errors on one line, JSON output) are in common.py."""

from __future__ import annotations

import click

from proxyplane.cli.common import LazyGroup

__all__ = ["main"]

# each command's module is imported only when that command runs (or for --help): an admin command does
# not pay for the gateway, the server or the whole registry at start-up (issue 20.3)
COMMANDS = {
    "migrate": "proxyplane.cli.serve:migrate",
    "serve": "proxyplane.cli.serve:serve",
    "gateway": "proxyplane.cli.gateway:gateway",
    "worker": "proxyplane.cli.worker:worker",
    "renewals": "proxyplane.cli.renewals:renewals",
    "doctor": "proxyplane.cli.doctor:doctor",
    "admin": "proxyplane.cli.admin:admin",
}


@click.group(cls=LazyGroup, lazy=COMMANDS)
def main() -> None:
    """ProxyPlane: the software of a proxy provider."""
