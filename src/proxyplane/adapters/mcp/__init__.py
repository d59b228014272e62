"""MCP adapter: the registry served as MCP tools at /api/v1/mcp."""
