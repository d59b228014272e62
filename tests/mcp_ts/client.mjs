// The official MCP TypeScript SDK as a client of ProxyPlane (issue 21.1), in both protocol eras: list the
// tools and quote with `@modelcontextprotocol/sdk` 1.32.x (the 2025-11-25 handshake era) and with
// `@modelcontextprotocol/client` 2.x pinned to the 2026-07-28 era (`server/discover`, stateless core),
// then print one JSON line for the Python test to check.
// Usage: MCP_URL=... MCP_KEY=... node client.mjs '<quote args json>'
import { Client as LegacyClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as LegacyTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const url = new URL(process.env.MCP_URL);
const headers = { Authorization: `Bearer ${process.env.MCP_KEY}` };
const quoteArgs = JSON.parse(process.argv[2]);
const info = { name: "proxyplane-ts-test", version: "1.0.0" };

async function listAndQuote(client) {
  const tools = (await client.listTools()).tools;
  const quote = await client.callTool({ name: "quote_composite", arguments: quoteArgs });
  return { tools: tools.map((t) => t.name), quote: quote.structuredContent, quote_error: quote.isError ?? false };
}

const legacy = new LegacyClient(info);
await legacy.connect(new LegacyTransport(url, { requestInit: { headers } }));
const legacySeen = { server: legacy.getServerVersion(), ...(await listAndQuote(legacy)) };
await legacy.close();

const modern = new Client(info, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
await modern.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
const modernSeen = {
  server: modern.getServerVersion(),
  era: modern.getProtocolEra(),
  version: modern.getNegotiatedProtocolVersion(),
  ...(await listAndQuote(modern)),
};
await modern.close();

console.log(JSON.stringify({ legacy: legacySeen, modern: modernSeen }));
