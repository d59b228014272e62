"""`/api/v1/docs`: Swagger UI served from the installed package `swagger-ui-bundle-v2` (Swagger UI 5, which
renders FastAPI's OpenAPI 3.1), so the page works without internet: no CDN, every asset under
`/api/v1/docs/assets/`."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from starlette.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path

ASSETS = ("swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png")


def install_docs(app: FastAPI, prefix: str, title: str) -> None:
    """The docs page at `{prefix}/docs` (register with `docs_url=None` on the app), assets beside it."""
    assets = f"{prefix}/docs/assets"
    app.mount(assets, StaticFiles(directory=swagger_ui_path), name="swagger-ui-assets")

    @app.get(f"{prefix}/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or f"{prefix}/openapi.json",
            title=f"{title} - docs",
            swagger_js_url=f"{assets}/swagger-ui-bundle.js",
            swagger_css_url=f"{assets}/swagger-ui.css",
            swagger_favicon_url=f"{assets}/favicon-32x32.png",
            swagger_ui_parameters={"validatorUrl": None},  # no badge fetched from the online validator
        )
