"""TOTP second factor (RFC 6238 through pyotp), its QR code (segno) and single-use recovery codes.

Shared by customers' and operators' sign-in. Pure: no storage, no web framework. The caller stores the
secret (encrypted with the platform's SecretBox), the recovery codes' hashes, and the last accepted time
step (`verify` returns it so a code cannot be replayed within its window).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

import pyotp
import segno

DIGITS = 6
INTERVAL = 30
# one step either side: a phone clock 30 s off still signs in
VALID_WINDOW = 1
RECOVERY_CODES = 10


def new_secret() -> str:
    """A base32 secret of 160 bits (RFC 4226's recommended length)."""
    return pyotp.random_base32(length=32)


def provisioning_uri(secret: str, account: str, issuer: str) -> str:
    """The otpauth:// URI an authenticator app reads from the QR code."""
    return pyotp.TOTP(secret, digits=DIGITS, interval=INTERVAL).provisioning_uri(
        name=account, issuer_name=issuer
    )


def qr_svg(uri: str) -> str:
    """The URI as an inline SVG QR code (no external request, no image file)."""
    return str(segno.make(uri, error="m").svg_inline(scale=4, border=2))


def verify(secret: str, code: str, *, last_step: int | None = None, now: float | None = None) -> int | None:
    """The time step `code` is valid for (within VALID_WINDOW), or None. A step not after `last_step`
    is refused: each code signs in once."""
    code = "".join(code.split())
    if len(code) != DIGITS or not code.isdigit():
        return None
    at = time.time() if now is None else now
    totp = pyotp.TOTP(secret, digits=DIGITS, interval=INTERVAL)
    current = int(at // INTERVAL)
    for step in range(current - VALID_WINDOW, current + VALID_WINDOW + 1):
        if last_step is not None and step <= last_step:
            continue
        if hmac.compare_digest(totp.at(step * INTERVAL), code):
            return step
    return None


def new_recovery_codes(count: int = RECOVERY_CODES) -> list[str]:
    """`count` codes like `k7qm-2xdp-9fha` (60 bits each), shown once; store only `recovery_hash`."""
    alphabet = "abcdefghjkmnpqrstuvwxyz23456789"
    return [
        "-".join("".join(secrets.choice(alphabet) for _ in range(4)) for _ in range(3)) for _ in range(count)
    ]


def recovery_hash(code: str) -> str:
    """A recovery code's stored form (SHA-256 of the normalised code: the code has 60 random bits, so a
    slow hash adds nothing)."""
    normal = "".join(code.lower().split()).replace("-", "")
    return hashlib.sha256(normal.encode()).hexdigest()
