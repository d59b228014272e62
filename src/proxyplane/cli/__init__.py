"""The `proxyplane` command. One module per command group; each defines its commands without importing
this package (no import circle), and `main` adds them here:

- serve.py: `migrate`, `serve` (server.py starts the app under uvicorn with the gateway and jobs)
- gateway.py: `gateway` (one node per host, N workers); worker.py: `worker`; renewals.py: `renewals`
- doctor.py: `doctor`
- admin.py: `admin` (customers, keys, wallets, KYC, partner discounts) with admin_stock.py
  (stock, product, price) and admin_tickets.py (ticket)
Shared helpers (one unit of work per admin command, errors on one line, JSON output) are in common.py."""

from __future__ import annotations

import click

# admin_stock and admin_tickets add their groups to `admin` when imported
from proxyplane.cli import admin_stock, admin_tickets, doctor, gateway, renewals, serve, worker  # noqa: F401
from proxyplane.cli.admin import admin

__all__ = ["main"]


@click.group()
def main() -> None:
    """ProxyPlane: the software of a proxy provider."""


for command in (
    serve.migrate,
    serve.serve,
    gateway.gateway,
    worker.worker,
    renewals.renewals,
    doctor.doctor,
    admin,
):
    main.add_command(command)
