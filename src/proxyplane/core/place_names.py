"""The comparable form of a place name (issue 36): what the username's -region-/-city- values are matched
as, in the gateway and in what the API lists."""

from __future__ import annotations

import unicodedata


def geo_key(name: str) -> str:
    """Accents dropped, lower case, letters and digits only (``São Paulo``, ``sao_paulo`` and ``SaoPaulo``
    all give ``saopaulo``)."""
    plain = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    return "".join(ch for ch in plain.lower() if ch.isalnum())
