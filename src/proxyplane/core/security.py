"""Secrets: API keys (sha256 of a 256-bit token), human passwords (argon2id), revealable secrets (Fernet)."""

import base64
import hashlib
import hmac
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from cryptography.fernet import Fernet, InvalidToken

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
    """Encrypts secrets that must be shown again (proxy passwords), keyed from the server secret: Fernet
    tokens of cryptography's own Fernet (issue 31: the hand-written token code of issue 15 reverted; it
    saved 2.6 us per order and wrote the same bytes, so every token it wrote still decrypts)."""

    def __init__(self, secret_key: str) -> None:
        digest = hashlib.sha256(b"proxyplane-secretbox:" + secret_key.encode()).digest()
        self._fernet = Fernet(base64.urlsafe_b64encode(digest))

    def encrypt(self, plain: str) -> str:
        return self._fernet.encrypt(plain.encode()).decode()

    def decrypt(self, token: str) -> str:
        try:
            return self._fernet.decrypt(token.encode()).decode()
        except InvalidToken as exc:
            raise ValueError("secret cannot be decrypted with this server key") from exc
