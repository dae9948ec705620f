// The TypeScript SDK v2 client as the gateway's client: node ts_client.mjs URL MODE KEY
// (MODE: legacy or modern).  Lists the tools, calls example.add, example.elicit
// (answered by its elicitation handler on 2026-07-28) and an unknown connector's
// tool; prints one JSON report on stdout.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [url, mode, key] = process.argv.slice(2);
const negotiation = mode === "modern" ? { mode: { pin: "2026-07-28" } } : { mode: "legacy" };
const client = new Client(
  { name: "ts-gateway-test", version: "1.0.0" },
  { capabilities: { elicitation: { form: {} } }, versionNegotiation: negotiation },
);
client.setRequestHandler("elicitation/create", async (request) => ({
  action: "accept",
  content: { answer: `ts: ${request.params.message}` },
}));
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { authorization: `Bearer ${key}` } },
});
const report = {};
const settle = async (name, fn) => {
  try {
    report[name] = await fn();
  } catch (error) {
    report[name] = { error: { code: error.code, message: String(error.message) } };
  }
};
await client.connect(transport);
report.protocolVersion = client.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion;
await settle("tools", async () => (await client.listTools()).tools.map((t) => t.name));
await settle("add", () => client.callTool({ name: "example.add", arguments: { a: 2, b: 3 } }));
await settle("elicit", () =>
  client.callTool({ name: "example.elicit", arguments: { question: "colour?" } }),
);
await settle("unknown", () => client.callTool({ name: "nowhere.echo", arguments: {} }));
await client.close();
process.stdout.write(JSON.stringify(report) + "\n");
