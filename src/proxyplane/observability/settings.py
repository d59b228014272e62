"""Observability settings (environment, PROXYPLANE_*): LOG_FORMAT text|json, LOG_LEVEL (INFO),
METRICS_ON_API true (/metrics, /livez, /readyz on the API app), METRICS_HOST 127.0.0.1 and METRICS_PORT -1
(a separate metrics/health port for the API process; -1: none; the API's /metrics path can then be turned
off with METRICS_ON_API=false so that nothing but the private port serves it), GRACEFUL_SHUTDOWN_SECONDS 30
(uvicorn: in-flight API requests get this long to finish after SIGTERM)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ObservabilitySettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PROXYPLANE_", extra="ignore")

    log_format: str = Field(default="text", pattern="^(text|json)$")
    log_level: str = "INFO"
    metrics_on_api: bool = True
    metrics_host: str = "127.0.0.1"
    metrics_port: int = -1
    graceful_shutdown_seconds: int = 30
