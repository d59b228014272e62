"""Options riding in the proxy username: ``login-session-abc123-ttl-10m-country-de``.

The login is everything before the first ``-``; then ``key-value`` pairs follow. Keys: ``session`` (alias
``sid``), ``ttl`` (1, 2, 3, 5, 10 or 15 minutes, written ``10m`` or ``10``) and ``country`` (ISO 3166-1
alpha-2). A malformed, repeated or unknown option raises ``UsernameError`` naming the option.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import ProtocolError

ALLOWED_TTL_MINUTES = (1, 2, 3, 5, 10, 15)
_SID_RE = re.compile(r"[A-Za-z0-9_]{1,64}")
_TTL_RE = re.compile(r"(\d{1,2})m?")

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
    """A username option is malformed; ``option`` names it."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"username option '{option}': {message}", status=407, reply=1)
        self.option = option


@dataclass(slots=True, frozen=True)
class UsernameOptions:
    login: str
    sid: str | None = None
    ttl_minutes: int | None = None
    country: str | None = None

    @property
    def has_options(self) -> bool:
        return self.sid is not None or self.ttl_minutes is not None or self.country is not None


def parse_username(username: str) -> UsernameOptions:
    login, sep, rest = username.partition("-")
    if not login:
        raise UsernameError("login", "empty login")
    if not sep:
        return UsernameOptions(login)
    parts = rest.split("-")
    if len(parts) % 2:
        raise UsernameError(parts[-1] or "-", "option without a value")
    seen: dict[str, str] = {}
    for key, value in zip(parts[0::2], parts[1::2], strict=True):
        name = "session" if key.lower() == "sid" else key.lower()
        if name not in ("session", "ttl", "country"):
            raise UsernameError(key, "unknown option (known: session, ttl, country)")
        if name in seen:
            raise UsernameError(key, "given twice")
        if not value:
            raise UsernameError(key, "empty value")
        seen[name] = value
    sid = seen.get("session")
    if sid is not None and not _SID_RE.fullmatch(sid):
        raise UsernameError("session", "must be 1-64 letters, digits or _")
    ttl = None
    if "ttl" in seen:
        m = _TTL_RE.fullmatch(seen["ttl"].lower())
        if m is None or int(m.group(1)) not in ALLOWED_TTL_MINUTES:
            allowed = ", ".join(str(t) for t in ALLOWED_TTL_MINUTES)
            raise UsernameError("ttl", f"'{seen['ttl']}' is not one of {allowed} minutes")
        ttl = int(m.group(1))
    country = None
    if "country" in seen:
        country = seen["country"].lower()
        if country not in ISO_COUNTRIES:
            raise UsernameError("country", f"'{seen['country']}' is not an ISO 3166-1 alpha-2 code")
    return UsernameOptions(login, sid, ttl, country)
