"""The full MCP tool list as an inline snapshot (name -> required scopes | effect), read over Streamable
HTTP: adding, removing or re-scoping a tool must change this file deliberately."""

from __future__ import annotations

import pytest
from fastapi import FastAPI

from tests.adapters.mcp.conftest import mcp_client
from tests.support import Account

pytestmark = pytest.mark.anyio

TOOLS = {
    "add_ips": "services:write wallet:spend | spends_money",
    "add_proxy_whitelist": "services:write | write",
    "add_subuser_whitelist": "services:write | write",
    "auto_plan": "- | read",
    "buy_addon": "services:write wallet:spend | spends_money",
    "cancel_addon": "services:write | write",
    "cancel_service": "services:write | write",
    "close_ticket": "tickets:write | write",
    "create_api_key": "customer:write | write",
    "create_service": "services:write wallet:spend | spends_money",
    "create_subuser": "services:write | write",
    "create_webhook_endpoint": "webhooks | write",
    "delete_proxy_whitelist": "services:write | write",
    "delete_sticky_session": "services:write | write",
    "delete_subuser": "services:write | write",
    "delete_subuser_whitelist": "services:write | write",
    "delete_webhook_endpoint": "webhooks | write",
    "disable_webhook_endpoint": "webhooks | write",
    "enable_webhook_endpoint": "webhooks | write",
    "export_service_usage": "usage:read | read",
    "get_balance": "wallet:read | read",
    "get_catalog_product": "catalog:read | read",
    "get_connection_limits": "services:read | read",
    "get_deposit": "wallet:read | read",
    "get_invoice": "wallet:read | read",
    "get_invoice_pdf": "wallet:read | read",
    "get_ledger": "wallet:read | read",
    "get_login_history": "customer:read | read",
    "get_notification_settings": "customer:read | read",
    "get_pricing_info": "- | read",
    "get_profile": "customer:read | read",
    "get_proxy_auth": "services:read | read",
    "get_proxy_config": "services:read | read",
    "get_proxy_ips": "services:read | read",
    "get_proxy_whitelist": "services:read | read",
    "get_recommendations": "services:read usage:read | read",
    "get_refresh_status": "services:read | read",
    "get_service": "services:read | read",
    "get_service_usage": "usage:read | read",
    "get_sticky_mode": "services:read | read",
    "get_subuser": "services:read | read",
    "get_ticket": "tickets:read | read",
    "get_top_destinations": "usage:read | read",
    "get_usage_errors": "usage:read | read",
    "get_usage_series": "usage:read | read",
    "get_webhook_delivery": "webhooks | read",
    "get_webhook_endpoint": "webhooks | read",
    "init_deposit": "wallet:deposit | write",
    "list_addons": "services:read | read",
    "list_api_keys": "customer:read | read",
    "list_available_addons": "services:write wallet:spend | read",
    "list_catalog": "catalog:read | read",
    "list_countries": "- | read",
    "list_invoices": "wallet:read | read",
    "list_payment_methods": "wallet:read | read",
    "list_services": "services:read | read",
    "list_sticky_sessions": "services:read | read",
    "list_subusers": "services:read | read",
    "list_tickets": "tickets:read | read",
    "list_unpaid_orders": "services:read | read",
    "list_webhook_deliveries": "webhooks | read",
    "list_webhook_endpoints": "webhooks | read",
    "list_webhook_event_types": "webhooks | read",
    "open_ticket": "tickets:write | write",
    "order_composite": "wallet:spend | spends_money",
    "preview_cancel": "services:read | read",
    "purge_sticky_sessions": "services:write | write",
    "quote_add_ips": "services:read | read",
    "quote_composite": "- | read",
    "redeliver_webhook": "webhooks | write",
    "refresh_ips": "services:write | spends_money",
    "renew_service": "services:write wallet:spend | spends_money",
    "reply_ticket": "tickets:write | write",
    "resume_service": "services:write wallet:spend | spends_money",
    "revoke_api_key": "customer:write | write",
    "rotate_sticky_session": "services:write | write",
    "rotate_subuser_password": "services:write | write",
    "rotate_webhook_secret": "webhooks | write",
    "send_webhook_test": "webhooks | write",
    "set_auto_renew": "services:write | write",
    "set_connection_limit": "services:write | write",
    "set_sticky_mode": "services:write | write",
    "set_sticky_ttl": "services:write | write",
    "update_notification_settings": "customer:write | write",
    "update_profile": "customer:write | write",
    "update_proxy_auth": "services:write | write",
    "update_subuser": "services:write | write",
    "update_webhook_endpoint": "webhooks | write",
    "whoami": "- | read",
}


async def test_tool_list_snapshot(app: FastAPI, account: Account) -> None:
    async with mcp_client(app, await account.key()) as client:
        tools = (await client.list_tools()).tools
    listed = {}
    for tool in tools:
        meta = tool.meta or {}
        scopes = " ".join(meta["proxyplane/scopes"]) or "-"
        listed[tool.name] = f"{scopes} | {meta['proxyplane/effect']}"
    assert listed == TOOLS
    assert len(tools) == len(TOOLS) >= 50
