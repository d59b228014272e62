"""core/security.SecretBox (issue 15): its own Fernet encryption writes exactly cryptography's Fernet token
for the same time and IV (so every existing token and reader stays valid), and round-trips any text."""

from __future__ import annotations

import os
import threading

import pytest
from cryptography.fernet import Fernet

from proxyplane.core.security import SecretBox

TEXTS = ["", "a", "x" * 15, "x" * 16, "x" * 17, "Ab3dEf7hJk9mNp2q", "pässwörd ✓ " * 7]


@pytest.mark.parametrize("plain", TEXTS)
def test_the_token_is_fernets_own_bytes(plain: str) -> None:
    box = SecretBox("server secret")
    iv = os.urandom(16)
    fernet: Fernet = box._fernet
    assert (
        box.encrypt_at(plain, 1_795_000_000, iv)
        == fernet._encrypt_from_parts(plain.encode(), 1_795_000_000, iv).decode()
    )
    token = box.encrypt(plain)
    assert fernet.decrypt(token.encode()).decode() == plain == box.decrypt(token)
    assert box.encrypt(plain) != token  # a fresh IV each time


def test_another_key_cannot_decrypt_and_threads_share_one_box() -> None:
    box = SecretBox("server secret")
    with pytest.raises(ValueError):
        SecretBox("another secret").decrypt(box.encrypt("hidden"))
    tokens: list[str] = []
    workers = [threading.Thread(target=lambda: tokens.extend(box.encrypt(f"t{i}") for i in range(50)))]
    workers.append(threading.Thread(target=lambda: tokens.extend(box.encrypt("u") for _ in range(50))))
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert sorted(box.decrypt(t) for t in tokens) == sorted([f"t{i}" for i in range(50)] + ["u"] * 50)
