"""OAuth clients: client ID metadata documents (the client_id is the URL of its JSON document) and
dynamically registered clients (RFC 7591), kept in `oauth_clients` as JSON.

`check_client_id_url` and `validate_document` are pure; fetching the document is the adapter's job (I/O).
A fetched document is reused for DOCUMENT_CACHE_SECONDS, then fetched again."""

from __future__ import annotations

import ipaddress
import json
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy.ext.asyncio import AsyncSession

from proxyplane.core.clock import utcnow
from proxyplane.storage.models.oauth import OAuthClient
from proxyplane.storage.repos import oauth as oauth_rows

DOCUMENT_CACHE_SECONDS = 300
MAX_DOCUMENT_BYTES = 5_000
PUBLIC_AUTH_METHODS = (None, "none")


class ClientDocumentError(ValueError):
    """The client_id URL or its document is not acceptable (the message says why)."""


def is_loopback_host(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_url_client_id(client_id: str) -> bool:
    return client_id.startswith("https://") or client_id.startswith("http://")


def check_client_id_url(client_id: str, allow_http_loopback: bool) -> None:
    """An https URL with a path (not the root), no fragment, no credentials; http only to a loopback host
    when the setting allows it (development and tests)."""
    parts = urlsplit(client_id)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ClientDocumentError("client_id must be an https URL")
    if parts.scheme == "http" and not (allow_http_loopback and is_loopback_host(parts.hostname)):
        raise ClientDocumentError("client_id must be an https URL (http only for loopback, when allowed)")
    if parts.path in ("", "/") or parts.fragment or parts.username or parts.password:
        raise ClientDocumentError("client_id URL needs a path and no fragment or credentials")


def validate_document(client_id: str, raw: bytes) -> dict[str, Any]:
    """The client's metadata from its document, or ClientDocumentError: JSON object, `client_id` equal to
    the URL, non-empty `redirect_uris` (absolute URLs), a public client (no secret, auth method none)."""
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise ClientDocumentError(f"client metadata document larger than {MAX_DOCUMENT_BYTES} bytes")
    try:
        doc = json.loads(raw)
    except ValueError:
        raise ClientDocumentError("client metadata document is not JSON") from None
    if not isinstance(doc, dict):
        raise ClientDocumentError("client metadata document is not a JSON object")
    if doc.get("client_id") != client_id:
        raise ClientDocumentError("the document's client_id is not the URL it was fetched from")
    uris = doc.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
        raise ClientDocumentError("redirect_uris must be a non-empty list of URLs")
    for uri in uris:
        parts = urlsplit(uri)
        if not parts.scheme or not (parts.netloc or parts.scheme not in ("http", "https")) or parts.fragment:
            raise ClientDocumentError(f"redirect_uri {uri!r} is not an absolute URL without fragment")
    name = doc.get("client_name")
    if name is not None and (not isinstance(name, str) or not name.strip() or len(name) > 200):
        raise ClientDocumentError("client_name must be a short text")
    if doc.get("token_endpoint_auth_method") not in PUBLIC_AUTH_METHODS:
        raise ClientDocumentError("only public clients (token_endpoint_auth_method none) are supported")
    if "client_secret" in doc or "client_secret_expires_at" in doc:
        raise ClientDocumentError("a client metadata document must not carry a client secret")
    return {
        "client_id": client_id,
        "client_name": (name or urlsplit(client_id).hostname or client_id).strip(),
        "redirect_uris": uris,
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        **({"client_uri": doc["client_uri"]} if isinstance(doc.get("client_uri"), str) else {}),
    }


async def cached_client(session: AsyncSession, client_id: str) -> tuple[str, dict[str, Any]] | None:
    """(kind, metadata) of a stored client; a document fetched too long ago counts as absent."""
    row = await session.get(OAuthClient, client_id)
    if row is None:
        return None
    if row.kind == "cimd" and utcnow() - row.fetched_at > timedelta(seconds=DOCUMENT_CACHE_SECONDS):
        return None
    doc: dict[str, Any] = json.loads(row.document)
    return row.kind, doc


async def store_client(session: AsyncSession, client_id: str, kind: str, metadata: dict[str, Any]) -> None:
    row = await session.get(OAuthClient, client_id)
    if row is None:
        oauth_rows.add_client(session, client_id, kind, json.dumps(metadata))
    else:
        row.kind, row.document, row.fetched_at = kind, json.dumps(metadata), utcnow()
    await session.flush()
