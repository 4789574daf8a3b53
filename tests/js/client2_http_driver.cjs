// Drives `agent-tools mcp --http` with the TypeScript client SDK 2.x (`@modelcontextprotocol/client`)
// in a given version negotiation mode, over Streamable HTTP.
//
// Usage: NODE_PATH=<npm prefix>/node_modules node client2_http_driver.cjs SCRIPT.json
// The script: {"url": "...", "token": null | "...", "mode": "legacy" | "auto" | "2026-07-28",
//              "calls": [{"tool": "...", "args": {...}}, ...]}
// Prints {"sdk": VERSION, "protocol": the negotiated version, "tools": [names],
//         "results": [{isError, text}...]} or {"error": "..."}.

const fs = require("fs");
const { Client, StreamableHTTPClientTransport } = require("@modelcontextprotocol/client");

const text = (result) => (result.content || []).map((c) => c.text || "").join("\n");

async function main() {
  const script = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
  const headers = script.token ? { Authorization: `Bearer ${script.token}` } : {};
  const transport = new StreamableHTTPClientTransport(new URL(script.url), {
    requestInit: { headers },
  });
  const mode = script.mode === "legacy" || script.mode === "auto" ? script.mode : { pin: script.mode };
  const client = new Client(
    { name: "ts-client2-e2e", version: "0" },
    { versionNegotiation: { mode } },
  );
  const path = require("path");
  const main = require.resolve("@modelcontextprotocol/client");
  const manifest = path.join(path.dirname(main), "..", "package.json");
  const sdk = JSON.parse(fs.readFileSync(manifest, "utf8")).version;
  const out = { sdk };
  try {
    await client.connect(transport);
    out.protocol = transport.protocolVersion ?? null;
    const listed = await client.listTools();
    out.tools = listed.tools.map((t) => t.name);
    out.results = [];
    for (const call of script.calls) {
      const result = await client.callTool({ name: call.tool, arguments: call.args });
      out.results.push({ isError: !!result.isError, text: text(result) });
    }
  } catch (e) {
    out.error = String((e && e.stack) || e);
  }
  try {
    await client.close();
  } catch (e) {
    out.closeError = String(e && e.message);
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stdout.write(JSON.stringify({ error: String(e && e.stack) }) + "\n");
    process.exit(1);
  },
);
