"""The TOTP helper against pyotp's own clock, replay refusal and recovery codes."""

from __future__ import annotations

import pyotp

from proxyplane.core import totp


def test_code_of_now_verifies_once() -> None:
    secret = totp.new_secret()
    now = 1_800_000_000.0
    code = pyotp.TOTP(secret).at(int(now))
    step = totp.verify(secret, code, now=now)
    assert step == int(now // 30)
    assert totp.verify(secret, code, last_step=step, now=now) is None


def test_neighbour_step_accepted_far_refused() -> None:
    secret = totp.new_secret()
    now = 1_800_000_000.0
    assert totp.verify(secret, pyotp.TOTP(secret).at(int(now) - 30), now=now) is not None
    assert totp.verify(secret, pyotp.TOTP(secret).at(int(now) - 300), now=now) is None
    assert totp.verify(secret, "12345", now=now) is None
    assert totp.verify(secret, "abcdef", now=now) is None


def test_uri_and_qr() -> None:
    secret = totp.new_secret()
    uri = totp.provisioning_uri(secret, "ana@example.com", "ProxyPlane")
    assert uri.startswith("otpauth://totp/ProxyPlane:ana%40example.com?secret=" + secret)
    svg = totp.qr_svg(uri)
    assert svg.startswith("<svg") and "path" in svg


def test_recovery_codes_unique_and_hash_normalised() -> None:
    codes = totp.new_recovery_codes()
    assert len(set(codes)) == 10
    assert totp.recovery_hash(codes[0]) == totp.recovery_hash(codes[0].upper().replace("-", " "))
    assert totp.recovery_hash(codes[0]) != totp.recovery_hash(codes[1])
