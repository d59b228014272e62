"""`/api/v1/docs` works offline (issue 22.9): the page references only local URLs, and they answer."""

from __future__ import annotations

import re

import httpx
import pytest

pytestmark = pytest.mark.anyio

URL = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']|url:\s*["']([^"']+)["']""")


async def test_docs_page_uses_only_local_assets(client: httpx.AsyncClient) -> None:
    page = await client.get("/api/v1/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "http://" not in page.text and "https://" not in page.text and "//cdn" not in page.text
    urls = {a or b for a, b in URL.findall(page.text)}
    assert {
        "/api/v1/docs/assets/swagger-ui-bundle.js",
        "/api/v1/docs/assets/swagger-ui.css",
        "/api/v1/openapi.json",
    } <= urls
    assert '"validatorUrl": null' in page.text
    kinds = {".js": "javascript", ".css": "text/css", ".png": "image/png", ".json": "application/json"}
    for url in urls:
        assert url.startswith("/") and not url.startswith("//"), url
        r = await client.get(url)
        assert r.status_code == 200, url
        kind = next(v for k, v in kinds.items() if url.endswith(k))
        assert kind in r.headers["content-type"], (url, r.headers["content-type"])
        assert len(r.content) > 100, url
    bundle = (await client.get("/api/v1/docs/assets/swagger-ui-bundle.js")).text
    assert "SwaggerUIBundle" in bundle
    assert (await client.get("/api/v1/openapi.json")).json()["openapi"].startswith("3.1")
