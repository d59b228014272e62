"""Logs: one line per event, JSON when PROXYPLANE_LOG_FORMAT=json, the API request id on every line logged
while a request runs, and no secret ever written (``Redactor``, a filter on every handler we install).

What is redacted, wherever it appears in a formatted line (message, arguments and traceback alike): API
keys (``ppk_...``), webhook secrets (``whsec_...``), ``Authorization`` / ``Proxy-Authorization`` values,
``password=``, ``key=``, ``token=``, ``secret=`` ... pairs (query strings, form bodies, key=value text),
the same names as JSON fields, and the password of a ``scheme://user:password@host`` URL. Code never logs
a proxy password on purpose; the filter is the net under it."""

from __future__ import annotations

import contextvars
import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import IO, Any

REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("proxyplane_request_id", default=None)

_NAMES = r"(?:password|passwd|pass|pwd|secret|token|api_key|apikey|key|access_token|client_secret|signature)"
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"ppk_[A-Za-z0-9_\-]+"), "ppk_***"),
    (re.compile(r"whsec_[A-Za-z0-9+/=_\-]+"), "whsec_***"),
    (
        re.compile(
            r"(?i)\b((?:proxy-)?authorization['\"]?\s*[:=]\s*['\"]?)(?:(?:basic|bearer)\s+)?[^\s'\",}]+"
        ),
        r"\1***",
    ),
    (re.compile(r"(?i)(\"" + _NAMES + r"\"\s*:\s*\")[^\"]*(\")"), r"\1***\2"),
    (re.compile(r"(?i)('" + _NAMES + r"'\s*:\s*')[^']*(')"), r"\1***\2"),
    (re.compile(r"(?i)(\b" + _NAMES + r"=)[^&\s'\",;]+"), r"\1***"),
    (re.compile(r"(\b[a-z][a-z0-9+.\-]*://[^:/@\s]+:)[^@\s/]+(@)"), r"\1***\2"),
]


# a record attribute set by code whose message cannot hold a secret (http.py's access line of a matched
# route: a method, a route template, a status, a duration): the filter skips its regexes
PLAIN = "proxyplane_plain"


def redact(text: str) -> str:
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


class Redactor(logging.Filter):
    """Formats the record's message once, redacted (arguments included), and drops the arguments."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: keep what there is
            message = str(record.msg)
        record.msg, record.args = (message if getattr(record, PLAIN, False) else redact(message)), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        record.request_id = REQUEST_ID.get()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        event: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        request_id = getattr(record, "request_id", None)
        if request_id:
            event["request_id"] = request_id
        for name in ("method", "route", "path", "status", "duration_ms", "client"):
            if hasattr(record, name):
                event[name] = getattr(record, name)
        if record.exc_text:
            event["exc"] = record.exc_text
        return json.dumps(event, default=str)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        request_id = getattr(record, "request_id", None)
        return f"{line} [request_id={request_id}]" if request_id else line


def configure(
    log_format: str = "text", level: str = "INFO", stream: IO[str] | None = None
) -> logging.Handler:
    """Route every logger (uvicorn's included) to one handler on ``stream`` (stderr) with the redaction
    filter; JSON lines when ``log_format`` is "json". Returns the handler (tests capture with it)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.addFilter(Redactor())
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, "proxyplane", False):
            root.removeHandler(old)
    handler.proxyplane = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
    return handler


def from_env() -> logging.Handler:
    """``configure`` from PROXYPLANE_LOG_FORMAT / PROXYPLANE_LOG_LEVEL (the long-running commands call it)."""
    from .settings import ObservabilitySettings

    settings = ObservabilitySettings()
    return configure(settings.log_format, settings.log_level)
