// A TypeScript SDK v1 (@modelcontextprotocol/sdk 1.32) client for the 2025-11-25 tasks
// interop test, run as `node tests/interop/ts_legacy_tasks_client.mjs URL` from the
// repository root against examples/tasks_server.py served over HTTP.  The v1 SDK has
// 2025-11-25's experimental tasks (`client.experimental.tasks`); it prints one JSON line
// per step, which tests/interop/test_tasks_interop.py asserts.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateTaskResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const url = new URL(process.argv[2]);
const client = new Client(
    { name: 'ts-legacy-tasks-interop', version: '1.32.2-test' },
    { capabilities: { elicitation: { form: {} } } }
);
client.setRequestHandler(ElicitRequestSchema, async request => ({
    action: 'accept',
    content: { approve: true, related: request.params._meta?.['io.modelcontextprotocol/related-task']?.taskId ?? null }
}));
await client.connect(new StreamableHTTPClientTransport(url));

async function step(name, fn) {
    try {
        const value = await fn();
        console.log(JSON.stringify({ step: name, ok: value }));
    } catch (error) {
        console.log(JSON.stringify({ step: name, code: error.code ?? null, message: String(error.message) }));
    }
}

async function stream(name, args) {
    const seen = [];
    for await (const message of client.experimental.tasks.callToolStream({ name, arguments: args })) {
        if (message.type === 'taskCreated') seen.push(['created', message.task.status]);
        else if (message.type === 'taskStatus') seen.push(['status', message.task.status]);
        else if (message.type === 'result') seen.push(['result', message.result.content[0].text]);
        else if (message.type === 'error') seen.push(['error', message.error.code ?? null, String(message.error.message)]);
    }
    return seen;
}

await step('version', async () => client.getServerCapabilities()?.tasks ?? null);
await step('tools', async () => {
    const { tools } = await client.listTools();
    return Object.fromEntries(tools.map(t => [t.name, t.execution?.taskSupport ?? null]));
});
await step('long_job stream', async () => stream('long_job', { seconds: 0.3, steps: 3 }));
await step('approve_job stream', async () => stream('approve_job', { job: 'deploy' }));
let cancelId = null;
await step('cancel', async () => {
    const created = await client.request(
        { method: 'tools/call', params: { name: 'long_job', arguments: { seconds: 600, steps: 1 }, task: { ttl: 60000 } } },
        CreateTaskResultSchema
    );
    cancelId = created.task.taskId;
    const cancelled = await client.experimental.tasks.cancelTask(cancelId);
    return cancelled.status;
});
await step('get', async () => (await client.experimental.tasks.getTask(cancelId)).status);
await step('list', async () => (await client.experimental.tasks.listTasks()).tasks.map(t => t.status));
await step('get unknown', async () => client.experimental.tasks.getTask('no-such-task'));
await client.close();
