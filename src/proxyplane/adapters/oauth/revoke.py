"""RFC 7009 revocation. The SDK's RevocationHandler requires a `client_secret` form field even from a
public client (its request model has no default), which RFC 7009 clients do not send; this endpoint is
the same steps (client authentication by the SDK's ClientAuthenticator, then either token type, only
the client's own, 200 whatever the outcome) with client_secret optional."""

from __future__ import annotations

from dataclasses import dataclass

from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.server.auth.provider import AccessToken, RefreshToken
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from proxyplane.adapters.oauth.provider import Provider

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


@dataclass
class Revocation:
    provider: Provider
    authenticator: ClientAuthenticator

    async def handle(self, request: Request) -> Response:
        try:
            client = await self.authenticator.authenticate_request(request)
        except AuthenticationError as exc:
            body = {"error": "invalid_client", "error_description": exc.message}
            return JSONResponse(body, status_code=401, headers=NO_STORE)
        form = await request.form()
        raw = form.get("token")
        if not isinstance(raw, str) or not raw:
            body = {"error": "invalid_request", "error_description": "token is required"}
            return JSONResponse(body, status_code=400, headers=NO_STORE)
        token: AccessToken | RefreshToken | None = await self.provider.load_access_token(raw)
        if token is None:
            token = await self.provider.load_refresh_token(client, raw)
        if token is not None and token.client_id == client.client_id:
            await self.provider.revoke_token(token)
        return Response(status_code=200, headers=NO_STORE)
