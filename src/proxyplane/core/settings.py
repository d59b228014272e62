"""Settings from the environment (PROXYPLANE_*), with embedded defaults for one machine."""

import os
import secrets
from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PROXYPLANE_", extra="ignore")

    home: Path = Path(".proxyplane")
    database_url: str = ""
    api_host: str = "127.0.0.1"
    api_port: int = 8000
    public_base_url: str = ""
    secret_key: str = ""
    payment_processor: str = Field(default="test", pattern="^(test|stripe)$")
    kyc_required_methods: str = "bank_transfer"
    stripe_secret_key: str = ""
    stripe_webhook_secret: str = ""
    min_deposit_cents: int = 500
    max_deposit_cents: int = 1_000_000
    # webhooks (see docs/decisions/events-webhooks.md "Webhooks, events and tickets")
    webhooks_allow_http_loopback: bool = False  # development only: http:// and loopback targets allowed
    webhook_timeout_seconds: float = 10.0
    webhook_max_attempts: int = 20
    webhook_retry_base_seconds: float = 5.0
    webhook_retry_max_seconds: float = 3600.0
    webhook_disable_after_failures: int = 15
    webhook_disable_after_seconds: float = 86400.0
    worker_poll_seconds: float = 1.0
    upstream_check_seconds: float = 300.0  # the job worker health-checks upstream suppliers (0: never)
    worker_in_serve: bool = True
    oauth_allow_http_client_ids: bool = False  # development/tests: http://127.0.0.1 client ID documents
    # sign-ups (issue 30.4, docs/decisions/throttling.md): bursts per client address (then that many an hour)
    # and over the platform (then that many per 5 minutes)
    signup_per_address: int = 5
    signup_total: int = 100
    # email (issue 34, docs/decisions/accounts-email.md): smtp://host:25, smtp+starttls://user:pass@host:587,
    # smtps://user:pass@host:465; empty: messages stay in the outbox (`proxyplane admin outbox`)
    smtp_url: str = ""
    mail_from: str = "ProxyPlane <no-reply@proxyplane.localhost>"
    smtp_timeout_seconds: float = 30.0
    mail_max_attempts: int = 12
    mail_retry_base_seconds: float = 30.0
    mail_retry_max_seconds: float = 3600.0
    mail_notify_lag_seconds: float = 10.0  # events are mailed once this old (late commits: decisions)

    def resolved_database_url(self) -> str:
        url = self.database_url or os.environ.get("DATABASE_URL", "")
        if not url:
            return f"sqlite+aiosqlite:///{(self.home / 'proxyplane.db').resolve()}"
        if url.startswith("postgres://"):
            url = "postgresql://" + url[len("postgres://") :]
        if url.startswith("postgresql://"):
            url = "postgresql+asyncpg://" + url[len("postgresql://") :]
        if url.startswith("sqlite:///"):
            url = "sqlite+aiosqlite:///" + url[len("sqlite:///") :]
        return url

    def base_url(self) -> str:
        return (self.public_base_url or f"http://{self.api_host}:{self.api_port}").rstrip("/")

    def resolved_secret_key(self) -> str:
        """The server secret (signing, encryption). Generated once into PROXYPLANE_HOME when not set."""
        if self.secret_key:
            return self.secret_key
        path = self.home / "secret.key"
        if path.exists():
            return path.read_text().strip()
        self.home.mkdir(parents=True, exist_ok=True)
        key = secrets.token_urlsafe(32)
        path.write_text(key)
        path.chmod(0o600)
        return key

    def kyc_methods(self) -> frozenset[str]:
        return frozenset(m.strip() for m in self.kyc_required_methods.split(",") if m.strip())


@lru_cache
def get_settings() -> Settings:
    return Settings()
