// The official MCP TypeScript SDK as a client of ProxyPlane (issue 21.1): list the tools and quote, then
// print one JSON line for the Python test to check. Usage: MCP_URL=... MCP_KEY=... node client.mjs '<quote args json>'
// The SDK (1.32.x) speaks the 2025-11-25 handshake era; it has no 2026-07-28 client yet, so the stateless
// era is reached with a plain `server/discover` POST (docs/decisions.md "MCP protocol eras").
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL(process.env.MCP_URL);
const headers = { Authorization: `Bearer ${process.env.MCP_KEY}` };
const client = new Client({ name: "proxyplane-ts-test", version: "1.0.0" });
await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
const tools = (await client.listTools()).tools;
const quote = await client.callTool({ name: "quote_composite", arguments: JSON.parse(process.argv[2]) });
const negotiated = client.getServerVersion();
await client.close();

const discover = await fetch(url, {
  method: "POST",
  headers: {
    ...headers,
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "server/discover",
  },
  body: JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "server/discover",
    params: {
      _meta: {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { name: "proxyplane-ts-test", version: "1.0.0" },
      },
    },
  }),
});
const discovered = await discover.json();

console.log(
  JSON.stringify({
    server: negotiated,
    tools: tools.map((t) => t.name),
    quote: quote.structuredContent,
    quote_error: quote.isError ?? false,
    discover_status: discover.status,
    discover: discovered.result ?? discovered.error,
  }),
);
