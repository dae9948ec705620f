// The TypeScript SDK v2 client at 2026-07-28 through a load balancer:
// node ts_round_robin_client.mjs URL MODE (MODE: pin or auto).  Lists the tools, calls
// add, elicit and survey (answered by its elicitation handler, one MRTR round each);
// prints one JSON report on stdout, errors included.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [url, mode] = process.argv.slice(2);
const negotiation = mode === "pin" ? { mode: { pin: "2026-07-28" } } : { mode: "auto" };
const client = new Client(
  { name: "ts-round-robin-test", version: "1.0.0" },
  { capabilities: { elicitation: { form: {} } }, versionNegotiation: negotiation },
);
const asked = [];
client.setRequestHandler("elicitation/create", async (request) => {
  asked.push(request.params.message);
  return { action: "accept", content: { answer: `ts: ${request.params.message}` } };
});
const report = { asked };
const settle = async (name, fn) => {
  try {
    report[name] = await fn();
  } catch (error) {
    report[name] = { error: { code: error.code, message: String(error.message) } };
  }
};
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
report.protocolVersion = client.getNegotiatedProtocolVersion?.();
await settle("tools", async () => (await client.listTools()).tools.map((t) => t.name));
await settle("add", () => client.callTool({ name: "add", arguments: { a: 2, b: 3 } }));
await settle("elicit", () => client.callTool({ name: "elicit", arguments: { question: "colour?" } }));
await settle("survey", () =>
  client.callTool({ name: "survey", arguments: { questions: ["one?", "two?", "three?"] } }),
);
await client.close();
process.stdout.write(JSON.stringify(report) + "\n");
