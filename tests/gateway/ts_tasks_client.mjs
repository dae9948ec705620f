// The TypeScript SDK v1 client (its experimental 2025-11-25 tasks) as the gateway's
// client: node ts_tasks_client.mjs URL KEY.  Lists the tools; runs example.approve_job
// as a task (its approval asked while tasks/result waits, answered by the elicitation
// handler); runs example.long_job as a task and cancels it; asks tasks/get of an id
// the gateway never made.  Prints one JSON report on stdout.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, key] = process.argv.slice(2);
const client = new Client(
  { name: "ts-v1-tasks-test", version: "1.0.0" },
  { capabilities: { elicitation: {} } },
);
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  asked.push(request.params.message);
  return { action: "accept", content: { approve: true } };
});
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { authorization: `Bearer ${key}` } },
});
const report = { asked };
const settle = async (name, fn) => {
  try {
    report[name] = await fn();
  } catch (error) {
    report[name] = { error: { code: error.code, message: String(error.message) } };
  }
};
const stream = async (name, args, onCreated) => {
  const seen = [];
  for await (const message of client.experimental.tasks.callToolStream(
    { name, arguments: args },
    undefined,
    { task: { ttl: 60000 } },
  )) {
    if (message.type === "taskCreated") {
      seen.push({ type: "taskCreated", taskId: message.task.taskId });
      if (onCreated) await onCreated(message.task.taskId);
    } else if (message.type === "taskStatus") {
      seen.push({ type: "taskStatus", status: message.task.status });
    } else if (message.type === "result") {
      seen.push({ type: "result", result: message.result });
    } else {
      seen.push({ type: message.type, error: String(message.error?.message) });
    }
  }
  return seen;
};
await client.connect(transport);
report.protocolVersion = transport.protocolVersion ?? null;
report.capabilities = client.getServerCapabilities();
await settle("tools", async () =>
  Object.fromEntries(
    (await client.listTools()).tools.map((t) => [t.name, t.execution?.taskSupport ?? null]),
  ),
);
await settle("approve", () => stream("example.approve_job", { job: "ship" }));
await settle("cancel", () =>
  stream("example.long_job", { seconds: 1, steps: 20 }, async (taskId) => {
    report.cancelled = await client.experimental.tasks.cancelTask(taskId);
  }),
);
await settle("unknown", () => client.experimental.tasks.getTask("gwt-nosuchtask"));
await client.close();
process.stdout.write(JSON.stringify(report) + "\n");
