"""core/security.SecretBox: cryptography's Fernet tokens (issue 31 reverted issue 15's hand-written token
code): a token round-trips any text, is Fernet's with the box's key, and a token written by the reverted
code (the same bytes as Fernet's for its time and IV) still decrypts."""

from __future__ import annotations

import threading

import pytest
from cryptography.fernet import Fernet

from proxyplane.core.security import SecretBox

TEXTS = ["", "a", "x" * 15, "x" * 16, "x" * 17, "Ab3dEf7hJk9mNp2q", "pässwörd ✓ " * 7]
# written by issue 15's SecretBox.encrypt_at("pässwörd ✓", 1_795_000_000, bytes(range(16))),
# key "server secret"
WRITTEN_BEFORE = (
    "gAAAAABq_YbAAAECAwQFBgcICQoLDA0OD1gLfcVhSPDK_uvAYWuPJ9yWBlrPdv-yifnVEgIFXatbN01RjaQcP_yy5wBLncBgOg=="
)


@pytest.mark.parametrize("plain", TEXTS)
def test_the_token_is_a_fernet_token_of_the_box_key(plain: str) -> None:
    box = SecretBox("server secret")
    fernet: Fernet = box._fernet
    token = box.encrypt(plain)
    assert fernet.decrypt(token.encode()).decode() == plain == box.decrypt(token)
    assert box.encrypt(plain) != token  # a fresh IV each time


def test_a_token_of_the_reverted_code_still_decrypts() -> None:
    assert SecretBox("server secret").decrypt(WRITTEN_BEFORE) == "pässwörd ✓"


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
