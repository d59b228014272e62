"""What a person reads for a product kind (pages, invoices, MCP texts), never the internal `proxy_*` id."""

from __future__ import annotations

import re

PRODUCT_NAMES = {
    "proxy_datacenter": "Datacenter proxies",
    "proxy_isp": "ISP proxies (static residential)",
    "proxy_personal": "Personal proxies",
    "proxy_rotating": "Rotating proxies",
    "proxy_ipv6": "IPv6 proxies",
}


def product_name(kind: str) -> str:
    """The display name of ``kind``; an unknown one reads as its words ("proxy_mobile": "Mobile proxies")."""
    known = PRODUCT_NAMES.get(kind)
    if known is not None:
        return known
    words = kind.removeprefix("proxy_").replace("_", " ").strip()
    return f"{words.capitalize()} proxies" if words else "Proxies"


IP_NOUNS = {
    "proxy_datacenter": "datacenter",
    "proxy_isp": "ISP",
    "proxy_personal": "personal",
    "proxy_rotating": "rotating",
    "proxy_ipv6": "IPv6",
}
_KIND = re.compile(r"\b(?:" + "|".join(PRODUCT_NAMES) + r")\b")
_MONTHS = re.compile(r"\b(\d+) month\(s\)")


def months(count: int) -> str:
    """ "1 month", "3 months" (issue 30.13: no "month(s)")."""
    return f"{count} month" if count == 1 else f"{count} months"


def humanize(text: str) -> str:
    """A stored text (invoice line, ledger entry) with internal kind ids read as words: "30 proxy_isp IPs"
    -> "30 ISP IPs", "Service #4 (proxy_rotating)" -> "Service #4 (Rotating proxies)"; "1 month(s)" ->
    "1 month", "3 month(s)" -> "3 months"."""

    def word(match: re.Match[str]) -> str:
        kind = match.group(0)
        if text[match.end() : match.end() + 4] == " IPs":
            return IP_NOUNS.get(kind, kind.removeprefix("proxy_").replace("_", " "))
        return product_name(kind)

    text = _MONTHS.sub(lambda m: months(int(m.group(1))), text)  # lines stored before issue 30.13
    return _KIND.sub(word, text)
