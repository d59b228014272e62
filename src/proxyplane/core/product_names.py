"""What a person reads for a product kind (pages, invoices, MCP texts), never the internal `proxy_*` id."""

from __future__ import annotations

PRODUCT_NAMES = {
    "proxy_datacenter": "Datacenter proxies",
    "proxy_isp": "ISP proxies (static residential)",
    "proxy_personal": "Personal proxies",
    "proxy_rotating": "Rotating proxies",
}


def product_name(kind: str) -> str:
    """The display name of ``kind``; an unknown one reads as its words ("proxy_mobile": "Mobile proxies")."""
    known = PRODUCT_NAMES.get(kind)
    if known is not None:
        return known
    words = kind.removeprefix("proxy_").replace("_", " ").strip()
    return f"{words.capitalize()} proxies" if words else "Proxies"
