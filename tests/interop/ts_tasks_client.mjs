// A TypeScript SDK v2 (@modelcontextprotocol/client 2.4) client for the tasks interop
// test, run as `node tests/interop/ts_tasks_client.mjs URL` from the repository root
// against examples/tasks_server.py served over HTTP.  It prints one JSON line per step;
// tests/interop/test_tasks_interop.py asserts them.
//
// The SDK has no tasks-extension client: it rejects a `resultType: "task"` answer
// (UNSUPPORTED_RESULT_TYPE), so a client declaring the extension cannot call a task
// tool through it.  It can still send `tasks/get` to a 2026-07-28 server (with the
// Mcp-Name header SEP-2663 binds), which is what the last steps do.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import * as z from 'zod/v4';

const url = new URL(process.argv[2]);
const TASKS = 'io.modelcontextprotocol/tasks';
const anyResult = z.object({}).passthrough();

async function connect(extension) {
    const capabilities = extension ? { extensions: { [TASKS]: {} } } : {};
    const client = new Client(
        { name: 'ts-tasks-interop', version: '2.4.0-test' },
        { versionNegotiation: { mode: { pin: '2026-07-28' } }, capabilities }
    );
    await client.connect(new StreamableHTTPClientTransport(url));
    return client;
}

async function step(name, fn) {
    try {
        const value = await fn();
        console.log(JSON.stringify({ step: name, ok: value }));
    } catch (error) {
        console.log(JSON.stringify({ step: name, code: error.code, message: String(error.message) }));
    }
}

const plain = await connect(false);
await step('version', async () => plain.getNegotiatedProtocolVersion?.() ?? null);
await step('long_job', async () => {
    const result = await plain.callTool({ name: 'long_job', arguments: { seconds: 0.1, steps: 2 } });
    return result.content[0].text;
});
await step('approve_job', async () => plain.callTool({ name: 'approve_job', arguments: { job: 'x' } }));
await step('tasks/get undeclared', async () => plain.request({ method: 'tasks/get', params: { taskId: 'nope' } }, anyResult));
await plain.close();

const declaring = await connect(true);
await step('tasks/get unknown', async () => declaring.request({ method: 'tasks/get', params: { taskId: 'nope' } }, anyResult));
await step('long_job as task', async () => declaring.callTool({ name: 'long_job', arguments: { seconds: 0.1, steps: 1 } }));
await declaring.close();
