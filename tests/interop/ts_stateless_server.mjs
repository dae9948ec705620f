// A TypeScript SDK v2 (@modelcontextprotocol/server 2.4) peer for the interop tests,
// run as `node tests/interop/ts_stateless_server.mjs` from the repository root (it
// resolves the SDK from ./node_modules).  `serveStdio` picks the era from the
// opening message: a `server/discover` probe (or any request with the 2026-07-28
// `_meta`) is served statelessly, an `initialize` gets a 2025-era instance.
//
// Names and outputs are asserted by tests/interop/test_stateless_interop.py.

import { McpServer, acceptedContent, inputRequired, inputResponse } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod/v4';

const answerSchema = z.object({ answer: z.string() });

function build() {
    const server = new McpServer(
        { name: 'ts-modern-interop', version: '2.4.0-test' },
        { capabilities: { tools: {} }, instructions: 'A TypeScript SDK v2 peer for interop tests.' }
    );

    server.registerTool(
        'echo',
        { description: 'Return the message unchanged.', inputSchema: z.object({ message: z.string() }) },
        async ({ message }) => ({ content: [{ type: 'text', text: `echo: ${message}` }] })
    );

    server.registerTool(
        'add',
        {
            description: 'Add two numbers (structured output).',
            inputSchema: z.object({ a: z.number(), b: z.number() }),
            outputSchema: z.object({ sum: z.number() })
        },
        async ({ a, b }) => ({
            content: [{ type: 'text', text: String(a + b) }],
            structuredContent: { sum: a + b }
        })
    );

    // One MRTR round: ask, then answer from ctx.mcpReq.inputResponses on the retry.
    server.registerTool(
        'confirm',
        { description: 'Elicit an answer (MRTR).', inputSchema: z.object({ question: z.string() }) },
        async ({ question }, ctx) => {
            const view = inputResponse(ctx.mcpReq.inputResponses, 'answer');
            if (view.kind === 'elicit') {
                const got = acceptedContent(ctx.mcpReq.inputResponses, 'answer', answerSchema);
                const text = got ? `user said ${got.answer}` : `user chose ${view.action}`;
                return { content: [{ type: 'text', text }] };
            }
            return inputRequired({
                inputRequests: {
                    answer: inputRequired.elicit({ message: question, requestedSchema: answerSchema })
                }
            });
        }
    );

    // Two MRTR rounds: the first answer travels in requestState (echoed verbatim).
    server.registerTool(
        'two_questions',
        { description: 'Ask two questions in two rounds.', inputSchema: z.object({}) },
        async (_args, ctx) => {
            const state = ctx.mcpReq.requestState();
            const responses = ctx.mcpReq.inputResponses;
            if (state === undefined) {
                const first = acceptedContent(responses, 'first', answerSchema);
                if (!first) {
                    return inputRequired({
                        inputRequests: {
                            first: inputRequired.elicit({ message: 'first?', requestedSchema: answerSchema })
                        }
                    });
                }
                return inputRequired({
                    inputRequests: {
                        second: inputRequired.elicit({ message: 'second?', requestedSchema: answerSchema })
                    },
                    requestState: `first=${first.answer}`
                });
            }
            const second = acceptedContent(responses, 'second', answerSchema);
            if (!second) {
                return inputRequired({
                    inputRequests: {
                        second: inputRequired.elicit({ message: 'second?', requestedSchema: answerSchema })
                    },
                    requestState: state
                });
            }
            return { content: [{ type: 'text', text: `${state}; second=${second.answer}` }] };
        }
    );

    // Sampling through MRTR.
    server.registerTool(
        'ask_model',
        { description: 'Sample the client model (MRTR).', inputSchema: z.object({ prompt: z.string() }) },
        async ({ prompt }, ctx) => {
            const view = inputResponse(ctx.mcpReq.inputResponses, 'reply');
            if (view.kind === 'sampling') {
                const content = view.result.content;
                const text = Array.isArray(content) ? JSON.stringify(content) : content.text;
                return { content: [{ type: 'text', text: `model ${view.result.model} said ${text}` }] };
            }
            return inputRequired({
                inputRequests: {
                    reply: inputRequired.createMessage({
                        messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
                        maxTokens: 50
                    })
                }
            });
        }
    );

    server.registerTool(
        'fail',
        { description: 'Return an error result.', inputSchema: z.object({ message: z.string() }) },
        async ({ message }) => ({ content: [{ type: 'text', text: message }], isError: true })
    );

    return server;
}

serveStdio(build, { onerror: error => process.stderr.write(`ts-modern-interop: ${error}\n`) });
