"""ISO 3166-1 countries: alpha-2 code -> (numeric id, English short name). Enough for stock imports;
an operator importing a code missing here gets a clear error (add it to this table)."""

from __future__ import annotations

COUNTRIES: dict[str, tuple[int, str]] = {
    "AE": (784, "United Arab Emirates"),
    "AR": (32, "Argentina"),
    "AT": (40, "Austria"),
    "AU": (36, "Australia"),
    "BE": (56, "Belgium"),
    "BG": (100, "Bulgaria"),
    "BR": (76, "Brazil"),
    "CA": (124, "Canada"),
    "CH": (756, "Switzerland"),
    "CL": (152, "Chile"),
    "CN": (156, "China"),
    "CO": (170, "Colombia"),
    "CZ": (203, "Czechia"),
    "DE": (276, "Germany"),
    "DK": (208, "Denmark"),
    "EE": (233, "Estonia"),
    "EG": (818, "Egypt"),
    "ES": (724, "Spain"),
    "FI": (246, "Finland"),
    "FR": (250, "France"),
    "GB": (826, "United Kingdom"),
    "GR": (300, "Greece"),
    "HK": (344, "Hong Kong"),
    "HU": (348, "Hungary"),
    "ID": (360, "Indonesia"),
    "IE": (372, "Ireland"),
    "IL": (376, "Israel"),
    "IN": (356, "India"),
    "IS": (352, "Iceland"),
    "IT": (380, "Italy"),
    "JP": (392, "Japan"),
    "KR": (410, "Korea, Republic of"),
    "KZ": (398, "Kazakhstan"),
    "LT": (440, "Lithuania"),
    "LU": (442, "Luxembourg"),
    "LV": (428, "Latvia"),
    "MD": (498, "Moldova"),
    "MX": (484, "Mexico"),
    "MY": (458, "Malaysia"),
    "NG": (566, "Nigeria"),
    "NL": (528, "Netherlands"),
    "NO": (578, "Norway"),
    "NZ": (554, "New Zealand"),
    "PH": (608, "Philippines"),
    "PK": (586, "Pakistan"),
    "PL": (616, "Poland"),
    "PT": (620, "Portugal"),
    "RO": (642, "Romania"),
    "RS": (688, "Serbia"),
    "SA": (682, "Saudi Arabia"),
    "SE": (752, "Sweden"),
    "SG": (702, "Singapore"),
    "SK": (703, "Slovakia"),
    "TH": (764, "Thailand"),
    "TR": (792, "Türkiye"),
    "TW": (158, "Taiwan"),
    "UA": (804, "Ukraine"),
    "US": (840, "United States"),
    "VN": (704, "Viet Nam"),
    "ZA": (710, "South Africa"),
}


def normalize_country(code: str) -> str:
    """Upper-case ISO alpha-2 code, or ValueError."""
    c = code.strip().upper()
    if c not in COUNTRIES:
        raise ValueError(f"unknown country code {code!r} (ISO 3166-1 alpha-2 expected)")
    return c


def numeric_id(code: str) -> int:
    return COUNTRIES[code][0]


def country_name(code: str) -> str:
    return COUNTRIES[code][1]
