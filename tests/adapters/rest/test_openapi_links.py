"""Issue 19.4: the served description links each success response to the operations its identifiers fill,
so schemathesis's stateful phase chains create -> read/update/delete (adapters/rest/openapi.success_links)."""

from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.anyio


async def _links(client: httpx.AsyncClient) -> dict[str, dict[str, dict]]:
    spec = (await client.get("/api/v1/openapi.json")).json()
    found: dict[str, dict[str, dict]] = {}
    for item in spec["paths"].values():
        for operation in item.values():
            for response in operation.get("responses", {}).values():
                found.setdefault(operation["operationId"], {}).update(response.get("links", {}))
    return found


async def test_the_obvious_pairs_are_linked_by_name(client: httpx.AsyncClient) -> None:
    links = await _links(client)
    service = "$response.body#/service/service_id"
    for target in ("get_service", "renew_service", "cancel_service", "get_proxy_auth", "get_service_usage"):
        assert links["create_service"][target]["parameters"] == {"path.service_id": service}
    assert links["create_service"]["get_invoice"]["parameters"] == {
        "path.invoice_id": "$response.body#/invoice_id"
    }
    for target in ("get_webhook_endpoint", "update_webhook_endpoint", "delete_webhook_endpoint"):
        assert links["create_webhook_endpoint"][target]["parameters"] == {
            "path.endpoint_id": "$response.body#/endpoint_id"
        }
    assert links["create_api_key"]["revoke_api_key"]["parameters"] == {
        "path.key_id": "$response.body#/key_id"
    }
    for target in ("get_ticket", "reply_ticket", "close_ticket"):
        assert links["open_ticket"][target]["parameters"] == {"path.ticket_id": "$response.body#/ticket_id"}
    # a second path parameter comes from the request that produced the response
    assert links["list_sticky_sessions"]["rotate_sticky_session"]["parameters"] == {
        "path.service_id": "$request.path.service_id",
        "path.sid": "$response.body#/sessions/0/sid",
    }
    assert links["send_webhook_test"]["get_webhook_delivery"]["parameters"] == {
        "path.endpoint_id": "$request.path.endpoint_id",
        "path.delivery_id": "$response.body#/delivery_id",
    }
    assert links["init_deposit"]["get_deposit"]["operationId"] == "get_deposit"


async def test_links_name_real_operations_and_never_revoke_the_callers_key(client: httpx.AsyncClient) -> None:
    spec = (await client.get("/api/v1/openapi.json")).json()
    ids = {op["operationId"] for item in spec["paths"].values() for op in item.values()}
    links = await _links(client)
    assert sum(len(v) for v in links.values()) > 100
    for targets in links.values():
        for name, link in targets.items():
            assert link["operationId"] == name and name in ids
            assert link["parameters"] and all(k.startswith("path.") for k in link["parameters"])
    assert "revoke_api_key" not in links.get("whoami", {})
    assert "revoke_api_key" not in links.get("list_api_keys", {})
    # a link always brings a new identifier: get_service does not re-link every service operation
    assert "renew_service" not in links.get("get_service", {})
