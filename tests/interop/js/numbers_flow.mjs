// Genkit's JS client and JSON numbers: a tool request whose input holds floats (500.0, -0.0,
// 1e-07, 1e16: what a model's tool call carries) is restarted from the client's own copy,
// which JavaScript re-encodes (500, 0, 1e-7, 10000000000000000).
// Usage: node numbers_flow.mjs BASE_URL -> one JSON object, one key per agent.
import { remoteAgent } from 'genkit/beta/client';

const base = process.argv[2];
const results = {};

async function restartFlow(name, extraTurn) {
  const chat = remoteAgent({ url: `${base}/${name}` }).chat();
  try {
    const first = await chat.send('Transfer $500 to savings');
    const [pause] = first.interrupts;
    const part = pause.restart();
    const answer = { ...part, metadata: { resumed: { approved: true } } };
    const resumed = await chat.resume({ restart: [answer] });
    const out = { input: pause.input, sent: answer.toolRequest.input, resumed: [resumed.finishReason, resumed.text] };
    if (extraTurn) {
      const next = await chat.send('thanks');
      out.next = [next.finishReason, next.text];
    }
    return out;
  } catch (e) {
    return { thrown: { status: e?.status ?? null, message: String(e?.message ?? e) } };
  }
}

results.serverManaged = await restartFlow('numbersBank', false);
results.signed = await restartFlow('signedNumbers', true);
console.log(JSON.stringify(results));
