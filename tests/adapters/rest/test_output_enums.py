"""Enum-like response fields carry `enum` in the published schemas (issue 22.10): OpenAPI components and
the MCP tools' output schemas (both built from the same models)."""

from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.anyio

EXPECTED = {
    ("ServiceOut", "status"): ["pending", "active", "suspended", "expired", "cancelled"],
    ("InvoiceOut", "kind"): [
        "order",
        "renewal",
        "add_ips",
        "addon",
        "refresh",
        "deposit",
        "catalog",
        "traffic",
    ],
    ("InvoiceOut", "status"): ["open", "paid", "partially_refunded", "refunded", "void"],
    ("InvoiceOut", "legacy_status"): ["Unpaid", "Paid", "Partially Refunded", "Refunded", "Cancelled"],
    ("ProductOut", "kind"): [
        "proxy_datacenter",
        "proxy_isp",
        "proxy_personal",
        "proxy_ipv6",
        "proxy_rotating",
    ],
    ("LoginRecord", "channel"): ["web", "legacy"],
    ("RecommendationOut", "severity"): ["high", "medium", "low"],
    ("TicketSummary", "status"): ["open", "answered", "closed"],
    ("MessageRecord", "author"): ["customer", "support"],
    ("QuoteError", "error"): ["insufficient_stock", "unknown_country", "order_below_minimum"],
    ("AddonOut", "status"): ["active", "canceled"],
}


async def test_enum_like_response_fields_publish_their_values(client: httpx.AsyncClient) -> None:
    schemas = (await client.get("/api/v1/openapi.json")).json()["components"]["schemas"]
    for (model, field), values in EXPECTED.items():
        assert schemas[model]["properties"][field]["enum"] == values, (model, field)
