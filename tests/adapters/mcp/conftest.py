"""MCP fixtures: the real app with its lifespan running, and the official MCP client over
Streamable HTTP through httpx2's in-process ASGI transport."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import httpx
import httpx2
import pytest
from fastapi import FastAPI
from mcp import Client
from mcp.client.session import ElicitationFnT, LoggingFnT
from mcp.client.streamable_http import streamable_http_client

from proxyplane.platform import Platform
from tests.support import bearer

CLIENT_IP = "127.0.0.9"
MCP_URL = "http://127.0.0.1/api/v1/mcp"


@pytest.fixture
async def app(platform: Platform) -> AsyncIterator[FastAPI]:
    from proxyplane.app import create_app

    application = create_app(platform)
    async with application.router.lifespan_context(application):
        yield application


def http_client(app: FastAPI, key: str | None) -> httpx2.AsyncClient:
    transport = httpx2.ASGITransport(app=app, client=(CLIENT_IP, 50000))
    headers = {**bearer(key), "User-Agent": "mcp-test-agent"} if key else {}
    return httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1", headers=headers)


ERAS = ("legacy", "2026-07-28")  # the 2025-11-25 initialize handshake; the stateless 2026-07-28 core


@contextlib.asynccontextmanager
async def mcp_client(
    app: FastAPI,
    key: str,
    mode: str = "auto",
    query: str = "",
    elicitation_callback: ElicitationFnT | None = None,
    logging_callback: LoggingFnT | None = None,
) -> AsyncIterator[Client]:
    async with http_client(app, key) as hc:
        transport = streamable_http_client(MCP_URL + query, http_client=hc)
        async with Client(
            transport, mode=mode, elicitation_callback=elicitation_callback, logging_callback=logging_callback
        ) as client:
            yield client


@pytest.fixture
async def rest(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, client=(CLIENT_IP, 50000))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c
