"""The running platform's shared parts: settings, database, secret box, payment processors."""

from __future__ import annotations

from typing import Any

from proxyplane.core.security import SecretBox
from proxyplane.core.settings import Settings
from proxyplane.storage.engine import Database


class Platform:
    def __init__(self, settings: Settings, db: Database | None = None) -> None:
        self.settings = settings
        self.db = db or Database(settings.resolved_database_url())
        self.secret_key = settings.resolved_secret_key()
        self.secrets = SecretBox(self.secret_key)
        self.processors: dict[str, Any] = {}
        self.hooks: dict[str, list[Any]] = {}

    def processor(self) -> Any:
        """The configured payment processor (built-in test processor by default, or Stripe)."""
        name = self.settings.payment_processor
        if name not in self.processors:
            if name == "stripe":
                from proxyplane.processors.stripe import StripeProcessor

                self.processors[name] = StripeProcessor(self.settings)
            else:
                from proxyplane.processors.testpay import TestProcessor

                self.processors[name] = TestProcessor(
                    self.settings.base_url(), self.secret_key, self.settings.kyc_methods()
                )
        return self.processors[name]

    def on(self, name: str, callback: Any) -> None:
        """Subscribe to an in-process signal (e.g. 'entitlements_changed' for the gateway cache)."""
        self.hooks.setdefault(name, []).append(callback)

    def emit(self, name: str, *args: Any) -> None:
        for cb in self.hooks.get(name, []):
            cb(*args)

    async def close(self) -> None:
        await self.db.dispose()
