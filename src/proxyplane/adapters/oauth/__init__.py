"""OAuth 2.1 door for the MCP server: metadata (RFC 8414, RFC 9728), authorize, token, register, revoke."""
