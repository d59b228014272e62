"""Secrets: API keys (sha256 of a 256-bit token), human passwords (argon2id), revealable secrets (Fernet)."""

import base64
import hashlib
import hmac
import os
import secrets
import threading
import time

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

API_KEY_PREFIX = "ppk_"
_hasher = PasswordHasher()


def new_api_key() -> str:
    return API_KEY_PREFIX + secrets.token_urlsafe(32)


def hash_api_key(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(stored_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(stored_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def mask(secret: str, keep: int = 2) -> str:
    if len(secret) <= keep * 2:
        return "*" * len(secret)
    return secret[:keep] + "*" * (len(secret) - keep * 2) + secret[-keep:]


def sign(secret_key: str, message: bytes) -> str:
    return hmac.new(secret_key.encode(), message, hashlib.sha256).hexdigest()


def verify_signature(secret_key: str, message: bytes, signature: str) -> bool:
    return hmac.compare_digest(sign(secret_key, message), signature)


class SecretBox:
    """Encrypts secrets that must be shown again (proxy passwords), keyed from the server secret.

    Tokens are Fernet tokens. `encrypt` writes them itself (issue 15: one per order; cryptography's Fernet
    builds a cipher, a padder and an HMAC object per call): the same bytes as `Fernet._encrypt_from_parts`
    for the same time and IV (AES-128-CBC as CBC chaining over one reused AES block encryptor per thread,
    PKCS7 padding, HMAC-SHA256), decrypted by Fernet as before."""

    def __init__(self, secret_key: str) -> None:
        digest = hashlib.sha256(b"proxyplane-secretbox:" + secret_key.encode()).digest()
        self._fernet = Fernet(base64.urlsafe_b64encode(digest))
        self._signing_key, self._encryption_key = digest[:16], digest[16:]
        self._local = threading.local()  # one block encryptor per thread (it is not shareable)

    def encrypt(self, plain: str) -> str:
        return self.encrypt_at(plain, int(time.time()), os.urandom(16))

    def encrypt_at(self, plain: str, at: int, iv: bytes) -> str:
        """The Fernet token of `plain` made at `at` (Unix seconds) with the 16-byte `iv`."""
        blocks = getattr(self._local, "blocks", None)
        if blocks is None:
            cipher = Cipher(algorithms.AES(self._encryption_key), modes.ECB())  # noqa: S305 (CBC below)
            blocks = self._local.blocks = cipher.encryptor()
        data = plain.encode()
        pad = 16 - len(data) % 16
        data += bytes((pad,)) * pad
        previous = int.from_bytes(iv, "big")
        out = bytearray(b"\x80" + at.to_bytes(8, "big") + iv)
        for i in range(0, len(data), 16):  # CBC: each block XORed with the previous ciphertext block
            block = blocks.update((int.from_bytes(data[i : i + 16], "big") ^ previous).to_bytes(16, "big"))
            previous = int.from_bytes(block, "big")
            out += block
        out += hmac.digest(self._signing_key, bytes(out), "sha256")
        return base64.urlsafe_b64encode(bytes(out)).decode()

    def decrypt(self, token: str) -> str:
        try:
            return self._fernet.decrypt(token.encode()).decode()
        except InvalidToken as exc:
            raise ValueError("secret cannot be decrypted with this server key") from exc
