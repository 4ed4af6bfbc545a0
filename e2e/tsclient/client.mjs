// client.mjs drives mcpgate with the official TypeScript SDK v1 client,
// which speaks only 2025-11-25 (the initialize handshake and sessions).
//
//   node client.mjs http://127.0.0.1:PORT/mcp
//
// It declares the elicitation capability and accepts every confirmation
// with {confirm: true}, lists the tools, calls getPet (pet 1) and deletePet
// (pet 2: the gateway asks for confirmation through elicitation/create on
// the POST's SSE stream first), getPet (pet 2) again and listCategories, and
// prints one JSON line with what it saw. Any other failure exits 1 with the error on
// stderr.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, ResultSchema } from "@modelcontextprotocol/sdk/types.js";

const url = process.argv[2];
if (!url) {
  console.error("usage: node client.mjs MCP_URL");
  process.exit(2);
}

const elicitations = [];
const client = new Client(
  { name: "mcpgate-e2e-tsclient", version: "0.0.0" },
  { capabilities: { elicitation: { form: {} } } },
);
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  elicitations.push({ message: req.params.message, schema: req.params.requestedSchema });
  return { action: "accept", content: { confirm: true } };
});

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: "Bearer demo-token" } },
});

function summary(res) {
  return {
    isError: res.isError === true,
    text: (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n"),
    structuredContent: res.structuredContent ?? null,
  };
}

try {
  await client.connect(transport);
  // client.listTools validates the result with the SDK's own schemas. When
  // that fails, the error is reported and the list is fetched again without
  // validation so that the calls below still run.
  let tools;
  let listToolsError = null;
  try {
    tools = await client.listTools();
  } catch (err) {
    listToolsError = String(err?.message ?? err).replace(/\s+/g, " ");
    tools = await client.request({ method: "tools/list", params: {} }, ResultSchema);
  }
  const getPet = await client.callTool({ name: "getPet", arguments: { petId: 1 } });
  const deletePet = await client.callTool({ name: "deletePet", arguments: { petId: 2 } });
  const afterDelete = await client.callTool({ name: "getPet", arguments: { petId: 2 } });
  // listCategories answers a JSON array: 2025-11-25 wants structuredContent
  // to be an object, and the SDK checks it.
  let listCategories = null;
  let listCategoriesError = null;
  try {
    listCategories = summary(await client.callTool({ name: "listCategories", arguments: {} }));
  } catch (err) {
    listCategoriesError = String(err?.message ?? err).replace(/\s+/g, " ");
  }
  const out = {
    protocolVersion: transport.protocolVersion ?? null,
    sessionId: transport.sessionId ?? null,
    server: client.getServerVersion() ?? null,
    tools: tools.tools.map((t) => t.name),
    listToolsError,
    getPet: summary(getPet),
    deletePet: summary(deletePet),
    afterDelete: summary(afterDelete),
    listCategories,
    listCategoriesError,
    elicitations,
  };
  process.stdout.write(JSON.stringify(out) + "\n");
  await client.close();
} catch (err) {
  console.error(err?.stack ?? String(err));
  process.exit(1);
}
