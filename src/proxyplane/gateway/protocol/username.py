"""Options riding in the proxy username: ``login-country-de-city-berlin-session-abc123-ttl-24h-strict-1``.

The login is everything before the first ``-``; then ``key-value`` pairs follow, in any order. Keys:

- ``session`` (alias ``sid``): 1-64 letters, digits or ``_``;
- ``ttl``: the session's lifetime, 1 minute to 24 hours, with a unit (``30m``, ``2h``, ``1d``; a bare
  number is minutes, as before);
- ``strict``: ``1``/``true``/``yes`` (or ``0``/``false``/``no``): a sticky session whose exit is gone is
  answered with an error instead of moving to another exit;
- ``country``: ISO 3166-1 alpha-2; ``region`` (alias ``state``) and ``city``: a name written without
  spaces or with ``_`` for them (``new_york``, ``newyork``), or a region's ISO 3166-2 code without its
  country part (``ca`` in the US); both need ``country``; ``asn``: ``13335`` or ``as13335``.

A malformed, repeated or unknown option raises ``UsernameError`` naming the option. The result is one flat,
typed ``UsernameOptions``; ``region``/``city`` are kept as ``geo_key`` strings (lower case, letters and
digits only), the form the gateway's exit geo compares.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from proxyplane.core.place_names import geo_key

from .errors import ProtocolError

TTL_MIN_MINUTES = 1
TTL_MAX_MINUTES = 24 * 60
_UNITS = {"": 1, "m": 1, "h": 60, "d": 24 * 60}
_SID_RE = re.compile(r"[A-Za-z0-9_]{1,64}")
_TTL_RE = re.compile(r"(\d{1,5})([mhd]?)")
_PLACE_RE = re.compile(r"[A-Za-z0-9_.]{1,64}")
_ASN_RE = re.compile(r"(?:as)?(\d{1,10})")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
KNOWN = ("session", "ttl", "strict", "country", "region", "city", "asn")
_ALIASES = {"sid": "session", "state": "region"}
ASN_MAX = 4_294_967_295
__all__ = ["UsernameError", "UsernameOptions", "geo_key", "parse_ttl", "parse_username"]


ISO_COUNTRIES = frozenset(
    """
    ad ae af ag ai al am ao aq ar as at au aw ax az ba bb bd be bf bg bh bi bj bl bm bn bo bq br bs bt bv bw
    by bz ca cc cd cf cg ch ci ck cl cm cn co cr cu cv cw cx cy cz de dj dk dm do dz ec ee eg eh er es et fi
    fj fk fm fo fr ga gb gd ge gf gg gh gi gl gm gn gp gq gr gs gt gu gw gy hk hm hn hr ht hu id ie il im in
    io iq ir is it je jm jo jp ke kg kh ki km kn kp kr kw ky kz la lb lc li lk lr ls lt lu lv ly ma mc md me
    mf mg mh mk ml mm mn mo mp mq mr ms mt mu mv mw mx my mz na nc ne nf ng ni nl no np nr nu nz om pa pe pf
    pg ph pk pl pm pn pr ps pt pw py qa re ro rs ru rw sa sb sc sd se sg sh si sj sk sl sm sn so sr ss st sv
    sx sy sz tc td tf tg th tj tk tl tm tn to tr tt tv tw tz ua ug um us uy uz va vc ve vg vi vn vu wf ws ye
    yt za zm zw
    """.split()
)


class UsernameError(ProtocolError):
    """A username option is malformed or names what does not exist; ``option`` names it."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"username option '{option}': {message}", status=407, reply=1)
        self.option = option


@dataclass(slots=True, frozen=True)
class UsernameOptions:
    """What a username asks for. ``country`` lower-case alpha-2; ``region``/``city`` geo keys;
    ``ttl_minutes`` 1..1440; ``strict`` only means something for a sticky session."""

    login: str
    sid: str | None = None
    ttl_minutes: int | None = None
    country: str | None = None
    region: str | None = None
    city: str | None = None
    asn: int | None = None
    strict: bool = False

    @property
    def has_options(self) -> bool:
        return (self.sid is not None or self.ttl_minutes is not None or self.country is not None
                or self.region is not None or self.city is not None or self.asn is not None or self.strict)

    @property
    def targets_place(self) -> bool:
        """Narrower than a country: region, city or ASN."""
        return self.region is not None or self.city is not None or self.asn is not None


def _pairs(rest: str) -> tuple[dict[str, str], dict[str, str]]:
    """{option: value} and {option: the key as written} (an alias is named as the client wrote it)."""
    parts = rest.split("-")
    if len(parts) % 2:
        raise UsernameError(parts[-1] or "-", "option without a value")
    seen: dict[str, str] = {}
    written: dict[str, str] = {}
    for key, value in zip(parts[0::2], parts[1::2], strict=True):
        name = _ALIASES.get(key.lower(), key.lower())
        if name not in KNOWN:
            raise UsernameError(key, f"unknown option (known: {', '.join(KNOWN)})")
        if name in seen:
            raise UsernameError(key, "given twice")
        if not value:
            raise UsernameError(key, "empty value")
        seen[name], written[name] = value, key
    return seen, written


def parse_ttl(text: str) -> int:
    """Minutes of a TTL written ``30``, ``30m``, ``2h`` or ``1d`` (1 minute .. 24 hours)."""
    m = _TTL_RE.fullmatch(text.lower())
    minutes = int(m.group(1)) * _UNITS[m.group(2)] if m is not None else 0
    if not TTL_MIN_MINUTES <= minutes <= TTL_MAX_MINUTES:
        raise UsernameError("ttl", f"'{text}' is not 1 minute to 24 hours (e.g. 30m, 2h, 24h)")
    return minutes


def _place(seen: dict[str, str], written: dict[str, str], name: str, country: str | None) -> str | None:
    value = seen.get(name)
    if value is None:
        return None
    name = written[name]
    if country is None:
        raise UsernameError(name, f"needs a country option too (login-country-us-{name}-...)")
    key = geo_key(value) if _PLACE_RE.fullmatch(value) else ""
    if not key:
        raise UsernameError(name, f"'{value}' is not a place name (letters, digits, _ for spaces)")
    return key


def parse_username(username: str) -> UsernameOptions:
    login, sep, rest = username.partition("-")
    if not login:
        raise UsernameError("login", "empty login")
    if not sep:
        return UsernameOptions(login)
    seen, written = _pairs(rest)
    sid = seen.get("session")
    if sid is not None and not _SID_RE.fullmatch(sid):
        raise UsernameError("session", "must be 1-64 letters, digits or _")
    ttl = parse_ttl(seen["ttl"]) if "ttl" in seen else None
    strict = False
    if "strict" in seen:
        flag = seen["strict"].lower()
        if flag not in _TRUE + _FALSE:
            raise UsernameError("strict", f"'{seen['strict']}' is not 1/true/yes or 0/false/no")
        strict = flag in _TRUE
    country = None
    if "country" in seen:
        country = seen["country"].lower()
        if country not in ISO_COUNTRIES:
            raise UsernameError("country", f"'{seen['country']}' is not an ISO 3166-1 alpha-2 code")
    region, city = _place(seen, written, "region", country), _place(seen, written, "city", country)
    asn = None
    if "asn" in seen:
        m = _ASN_RE.fullmatch(seen["asn"].lower())
        asn = int(m.group(1)) if m is not None else 0
        if not 1 <= asn <= ASN_MAX:
            raise UsernameError("asn", f"'{seen['asn']}' is not an AS number (13335 or as13335)")
    return UsernameOptions(login, sid, ttl, country, region, city, asn, strict)
