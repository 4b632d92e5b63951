// Genkit's JS client (npm genkit, 'genkit/beta/client') streaming a turn whose MCP tool
// reports progress. Usage: node progress_flow.mjs AGENT_URL [MESSAGE] -> one JSON line: what the
// client made of each chunk, and the response (MESSAGE: argv[3]). tests/mcp/test_mcp_genkit_js.py reads it.
import { remoteAgent } from 'genkit/beta/client';

const agent = remoteAgent({ url: process.argv[2] });
const chat = agent.chat();
const turn = chat.sendStream(process.argv[3] ?? 'Index my notes');
const chunks = [];
for await (const c of turn.stream) {
  chunks.push({
    role: c.raw?.modelChunk?.role ?? null,
    custom: c.raw?.modelChunk?.custom ?? null,
    text: c.text ?? '',
    interrupts: (c.interrupts ?? []).length,
  });
}
const res = await turn.response;
console.log(JSON.stringify({ chunks, text: res.text, finishReason: res.finishReason, roles: chat.messages.map((m) => m.role) }));
