"""The full MCP tool list as an inline snapshot (name -> required scopes | effect | labels), read over
Streamable HTTP: adding, removing, re-scoping or re-labelling a tool must change this file deliberately.
Labels (issue 21.4), from the tool's annotations and `_meta` on the wire: r readOnlyHint, d destructiveHint,
i idempotentHint, $ proxyplane/spends_money."""

from __future__ import annotations

import pytest
from fastapi import FastAPI

from tests.adapters.mcp.conftest import mcp_client
from tests.support import Account

pytestmark = pytest.mark.anyio

TOOLS = {
    "add_ips": "services:write wallet:spend | spends_money | i$",
    "add_proxy_whitelist": "services:write | write | -",
    "add_subuser_whitelist": "services:write | write | -",
    "add_traffic": "services:write wallet:spend | spends_money | i$",
    "auto_plan": "- | read | ri",
    "buy_addon": "services:write wallet:spend | spends_money | i$",
    "cancel_addon": "services:write | write | di",
    "cancel_service": "services:write | write | d",
    "change_member_role": "customer:write | write | -",
    "close_ticket": "tickets:write | write | -",
    "create_api_key": "customer:write | write | -",
    "create_service": "services:write wallet:spend | spends_money | i$",
    "create_subuser": "services:write | write | -",
    "create_webhook_endpoint": "webhooks | write | -",
    "delete_proxy_whitelist": "services:write | write | di",
    "delete_sticky_session": "services:write | write | di",
    "delete_subuser": "services:write | write | di",
    "delete_subuser_whitelist": "services:write | write | di",
    "delete_webhook_endpoint": "webhooks | write | di",
    "disable_webhook_endpoint": "webhooks | write | -",
    "enable_webhook_endpoint": "webhooks | write | -",
    "export_service_usage": "usage:read | read | ri",
    "get_account_activity": "customer:read | read | ri",
    "get_account_limits": "- | read | ri",
    "get_balance": "wallet:read | read | ri",
    "get_catalog_product": "catalog:read | read | ri",
    "get_client_ip_limit": "services:read | read | ri",
    "get_connection_limits": "services:read | read | ri",
    "get_deposit": "wallet:read | read | ri",
    "get_invoice": "wallet:read | read | ri",
    "get_invoice_pdf": "wallet:read | read | ri",
    "get_ledger": "wallet:read | read | ri",
    "get_login_history": "customer:read | read | ri",
    "get_notification_settings": "customer:read | read | ri",
    "get_pricing_info": "- | read | ri",
    "get_profile": "customer:read | read | ri",
    "get_proxy_auth": "services:read | read | ri",
    "get_proxy_config": "services:read | read | ri",
    "get_proxy_ips": "services:read | read | ri",
    "get_proxy_whitelist": "services:read | read | ri",
    "get_recommendations": "services:read usage:read | read | ri",
    "get_refresh_status": "services:read | read | ri",
    "get_service": "services:read | read | ri",
    "get_service_quota": "services:read | read | ri",
    "get_service_usage": "usage:read | read | ri",
    "get_speed_limit": "services:read | read | ri",
    "get_sticky_mode": "services:read | read | ri",
    "get_subuser": "services:read | read | ri",
    "get_ticket": "tickets:read | read | ri",
    "get_top_destinations": "usage:read | read | ri",
    "get_usage_errors": "usage:read | read | ri",
    "get_usage_series": "usage:read | read | ri",
    "get_webhook_delivery": "webhooks | read | ri",
    "get_webhook_endpoint": "webhooks | read | ri",
    "hand_over_account": "customer:write | write | -",
    "init_deposit": "wallet:deposit | write | i",
    "invite_member": "customer:write | write | -",
    "leave_account": "customer:read | write | -",
    "list_addons": "services:read | read | ri",
    "list_api_keys": "customer:read | read | ri",
    "list_available_addons": "services:write wallet:spend | read | ri",
    "list_catalog": "catalog:read | read | ri",
    "list_cities": "- | read | ri",
    "list_countries": "- | read | ri",
    "list_invoices": "wallet:read | read | ri",
    "list_members": "customer:read | read | ri",
    "list_payment_methods": "wallet:read | read | ri",
    "list_services": "services:read | read | ri",
    "list_sticky_sessions": "services:read | read | ri",
    "list_subusers": "services:read | read | ri",
    "list_tickets": "tickets:read | read | ri",
    "list_unpaid_orders": "services:read | read | ri",
    "list_webhook_deliveries": "webhooks | read | ri",
    "list_webhook_endpoints": "webhooks | read | ri",
    "list_webhook_event_types": "webhooks | read | ri",
    "open_ticket": "tickets:write | write | -",
    "order_composite": "wallet:spend | spends_money | i$",
    "preview_cancel": "services:read | read | ri",
    "purge_sticky_sessions": "services:write | write | d",
    "purge_subuser_sticky_sessions": "services:write | write | d",
    "quote_add_ips": "services:read | read | ri",
    "quote_composite": "- | read | ri",
    "redeliver_webhook": "webhooks | write | -",
    "refresh_ips": "services:write | spends_money | i$",
    "remove_member": "customer:write | write | di",
    "renew_service": "services:write wallet:spend | spends_money | i$",
    "reply_ticket": "tickets:write | write | -",
    "resume_service": "services:write wallet:spend | spends_money | i$",
    "revoke_api_key": "customer:write | write | di",
    "revoke_invitation": "customer:write | write | di",
    "rotate_sticky_session": "services:write | write | -",
    "rotate_subuser_password": "services:write | write | -",
    "rotate_subuser_sticky_session": "services:write | write | -",
    "rotate_webhook_secret": "webhooks | write | -",
    "send_webhook_test": "webhooks | write | -",
    "set_auto_renew": "services:write | write | i",
    "set_auto_topup": "services:write | write | i",
    "set_client_ip_limit": "services:write | write | i",
    "set_connection_limit": "services:write | write | i",
    "set_speed_limit": "services:write | write | i",
    "set_sticky_mode": "services:write | write | i",
    "set_sticky_ttl": "services:write | write | i",
    "update_notification_settings": "customer:write | write | -",
    "update_profile": "customer:write | write | -",
    "update_proxy_auth": "services:write | write | i",
    "update_subuser": "services:write | write | -",
    "update_webhook_endpoint": "webhooks | write | -",
    "whoami": "- | read | ri",
}


async def test_tool_list_snapshot(app: FastAPI, account: Account) -> None:
    async with mcp_client(app, await account.key()) as client:
        tools = (await client.list_tools()).tools
    listed = {}
    for tool in tools:
        meta = tool.meta or {}
        scopes = " ".join(meta["proxyplane/scopes"]) or "-"
        ann = tool.annotations
        assert ann is not None
        labels = (
            ("r", ann.read_only_hint),
            ("d", ann.destructive_hint),
            ("i", ann.idempotent_hint),
            ("$", meta["proxyplane/spends_money"]),
        )
        flags = "".join(c for c, on in labels if on) or "-"
        listed[tool.name] = f"{scopes} | {meta['proxyplane/effect']} | {flags}"
    assert listed == TOOLS
    assert len(tools) == len(TOOLS) >= 50
