// The TypeScript SDK v2 client at 2025-11-25 (a handshake session, Mcp-Session-Id)
// through a load balancer: node ts_handshake_round_robin_client.mjs URL ROUNDS.  Each
// round lists the tools and calls add and elicit (answered by its elicitation handler);
// prints one JSON report on stdout, errors included.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [url, rounds] = process.argv.slice(2);
const client = new Client(
  { name: "ts-handshake-round-robin-test", version: "1.0.0" },
  { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: "legacy" } },
);
const asked = [];
client.setRequestHandler("elicitation/create", async (request) => {
  asked.push(request.params.message);
  return { action: "accept", content: { answer: `ts: ${request.params.message}` } };
});
const report = { asked, rounds: [] };
const settle = async (fn) => {
  try {
    return await fn();
  } catch (error) {
    return { error: { code: error.code, message: String(error.message) } };
  }
};
const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);
report.protocolVersion = client.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion;
report.sessionId = transport.sessionId;
for (let n = 0; n < Number(rounds); n++) {
  const tools = await settle(async () => (await client.listTools()).tools.map((t) => t.name));
  const add = await settle(() => client.callTool({ name: "add", arguments: { a: n, b: 1 } }));
  const elicit = await settle(() =>
    client.callTool({ name: "elicit", arguments: { question: `round ${n}?` } }),
  );
  report.rounds.push({ tools, add, elicit });
}
await settle(() => transport.terminateSession());
await client.close();
process.stdout.write(JSON.stringify(report) + "\n");
