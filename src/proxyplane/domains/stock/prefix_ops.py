"""The operator's IPv6 prefixes (`proxyplane admin stock add-prefix|prefixes|retire-prefix`, issue 16) as
registered operations served by the "cli" door only (Auth.NONE: the operator's authority is the host)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from pydantic import BaseModel

from proxyplane.core.errors import ValidationFailed
from proxyplane.domains.geo import service as geo
from proxyplane.domains.stock import subnets
from proxyplane.ops import OPERATOR_DOORS, Context, Effect, operator_op, register


class NewPrefix(BaseModel):
    prefix: str
    country: str
    ripe_country: str | None = None
    subnet_len: int = 64


class PrefixRef(BaseModel):
    prefix: str


class NoInput(BaseModel):
    pass


async def add_prefix(ctx: Context, data: NewPrefix) -> dict[str, Any]:
    try:
        row, added = await subnets.add_prefix(
            ctx.session, data.prefix, data.country, data.ripe_country or data.country, data.subnet_len
        )
    except ValueError as exc:
        raise ValidationFailed(str(exc), field="prefix") from None
    out = {
        "prefix": row.prefix,
        "subnet_len": row.subnet_len,
        "subnets": subnets.subnet_count(row.prefix, row.subnet_len),
        "country_maxmind": row.country_maxmind,
        "country_ripe": row.country_ripe,
        "added": added,
    }
    found = geo.readers()
    if found:  # issue 36: the prefix's place from the configured geo databases (by its first address)
        stored = await geo.locate(ctx.session, [row.prefix], found)
        out.update({f"located_{source}": n for source, n in stored.items()})
    return out


async def list_prefixes(ctx: Context, data: NoInput) -> dict[str, Any]:
    return {"prefixes": [asdict(p) for p in await subnets.list_prefixes(ctx.session)]}


async def retire_prefix(ctx: Context, data: PrefixRef) -> dict[str, Any]:
    try:
        done = await subnets.retire_prefix(ctx.session, data.prefix)
    except ValueError as exc:
        raise ValidationFailed(str(exc), field="prefix") from None
    return {"retired": int(done)}


_op = operator_op  # the CLI and the operator API; no customer API key (ops.operator_op)


ADD_PREFIX = _op("stock_add_prefix", add_prefix, NewPrefix, permission="stock.write")
LIST_PREFIXES = _op(
    "stock_prefixes", list_prefixes, NoInput, Effect.READ, permission="stock.read", doors=OPERATOR_DOORS
)
RETIRE_PREFIX = _op("stock_retire_prefix", retire_prefix, PrefixRef, permission="stock.write")
register(ADD_PREFIX, LIST_PREFIXES, RETIRE_PREFIX)
