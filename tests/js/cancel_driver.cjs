// Drives the agent-tools MCP server with the official TypeScript SDK and cancels a call with
// the SDK's own cancel (an AbortSignal: the SDK sends `notifications/cancelled`).
//
// Usage: NODE_PATH=<npm prefix>/node_modules node cancel_driver.cjs SCRIPT.json
// The script: {"server": [argv...], "env": {...}, "setup": ARGS, "busy": ARGS,
//              "cancel_after_ms": N, "next": [ARGS...]}, each ARGS an `eval` argument object.
// Prints {"sdk": VERSION, "setup": TEXT, "cancelled": {...}, "next": [{isError, text}...]}.

const fs = require("fs");
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");

const text = (result) => (result.content || []).map((c) => c.text || "").join("\n");

async function main() {
  const script = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
  const transport = new StdioClientTransport({
    command: script.server[0],
    args: script.server.slice(1),
    env: { ...process.env, ...(script.env || {}) },
  });
  const client = new Client({ name: "ts-cancel-e2e", version: "0" });
  await client.connect(transport);
  const out = {};
  out.setup = text(await client.callTool({ name: "eval", arguments: script.setup }));
  const abort = new AbortController();
  setTimeout(() => abort.abort("test cancel"), script.cancel_after_ms);
  try {
    const late = await client.callTool({ name: "eval", arguments: script.busy }, undefined, {
      signal: abort.signal,
    });
    out.cancelled = { answered: true, text: text(late) };
  } catch (e) {
    out.cancelled = { answered: false, error: String(e && e.message) };
  }
  out.next = [];
  for (const args of script.next) {
    const result = await client.callTool({ name: "eval", arguments: args });
    out.next.push({ isError: !!result.isError, text: text(result) });
  }
  await client.close();
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
