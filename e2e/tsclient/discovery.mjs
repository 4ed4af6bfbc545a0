// discovery.mjs drives a gateway in discovery mode with the TypeScript SDK
// v1 client (2025-11-25): tools/list, search, describe, then call of a
// destructive tool (the gateway asks to confirm through elicitation, which
// this client accepts), and prints one JSON line with what it saw.
//
//   node discovery.mjs MCP_URL BEARER QUERY TOOL ARGS_JSON
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, bearer, query, tool, argsJSON] = process.argv.slice(2);
const elicitations = [];
const client = new Client(
  { name: "mcpgate-e2e-discovery", version: "0.0.0" },
  { capabilities: { elicitation: { form: {} } } },
);
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  elicitations.push(req.params.message);
  return { action: "accept", content: { confirm: true } };
});
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: "Bearer " + bearer } },
});
const text = (res) => (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
try {
  await client.connect(transport);
  const tools = await client.listTools();
  const search = await client.callTool({ name: "search", arguments: { query, limit: 5 } });
  const describe = await client.callTool({ name: "describe", arguments: { names: [tool] } });
  const call = await client.callTool({ name: "call", arguments: { name: tool, arguments: JSON.parse(argsJSON) } });
  console.log(JSON.stringify({
    tools: tools.tools.map((t) => t.name),
    search: search.structuredContent ?? null,
    describe: text(describe),
    call: { isError: call.isError === true, text: text(call) },
    elicitations,
  }));
  await client.close();
} catch (err) {
  console.error(String(err?.stack ?? err));
  process.exit(1);
}
