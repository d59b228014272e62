"""Client ID metadata documents: which client_id URLs are accepted and what a document must hold."""

from __future__ import annotations

import json

import pytest

from proxyplane.domains.oauth.clients import ClientDocumentError, check_client_id_url, validate_document

URL = "https://agent.example/oauth/client.json"


def doc(**fields: object) -> bytes:
    return json.dumps({"client_id": URL, "redirect_uris": ["http://127.0.0.1:9/cb"], **fields}).encode()


def test_https_with_a_path_is_accepted_http_only_for_loopback_when_allowed() -> None:
    check_client_id_url(URL, allow_http_loopback=False)
    check_client_id_url("http://127.0.0.1:8080/c.json", allow_http_loopback=True)
    check_client_id_url("http://localhost/c.json", allow_http_loopback=True)
    for bad, allow in [
        ("http://127.0.0.1:8080/c.json", False),  # http without the setting
        ("http://agent.example/c.json", True),  # http to a non-loopback host, even with it
        ("https://agent.example/", False),  # no path
        ("https://agent.example/c.json#x", False),  # fragment
        ("https://user:pw@agent.example/c.json", False),  # credentials
        ("ftp://agent.example/c.json", False),
    ]:
        with pytest.raises(ClientDocumentError):
            check_client_id_url(bad, allow_http_loopback=allow)


def test_a_document_names_itself_lists_redirects_and_is_a_public_client() -> None:
    meta = validate_document(URL, doc(client_name="Agent"))
    assert meta["client_name"] == "Agent" and meta["token_endpoint_auth_method"] == "none"
    assert validate_document(URL, doc())["client_name"] == "agent.example"
    for bad in [
        b"not json",
        b"[]",
        doc(client_id="https://other.example/c.json"),
        doc(redirect_uris=[]),
        doc(redirect_uris=["/relative"]),
        doc(token_endpoint_auth_method="client_secret_basic"),
        doc(client_secret="s"),
        doc(client_name=""),
        doc(padding="x" * 6000),
    ]:
        with pytest.raises(ClientDocumentError):
            validate_document(URL, bad)
