"""OAuth 2.1 authorization for the MCP server (issue 21.2): ProxyPlane as the authorization server."""
