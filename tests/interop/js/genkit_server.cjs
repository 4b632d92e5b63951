// A Genkit JS 1.42 agent server (npm genkit with @genkit-ai/express) for nb_agents to drive:
// the same agent tests/interop/genkit_py/genkit_server.py serves with Genkit Python.
// CommonJS on purpose: @genkit-ai/express 1.42 lists "default" before "import" in its
// exports, so an ES module app loads express's CommonJS build while the agent throws the
// ESM build's GenkitErrors, and every thrown error is answered 500 INTERNAL.
//
// Usage: node genkit_server.cjs LEDGER -> binds 127.0.0.1 on a port the OS picks, prints
// "PORT <n>" and serves until killed.
//
// bankingAgent (server-managed, Genkit's InMemorySessionStore) has an interrupt,
// userApproval (defineInterrupt: answered with respond), and transferMoney, a tool that
// pauses until it is restarted with resumed {approved: true}; each transfer that runs
// appends a line to LEDGER. The model is registered in Genkit and answers at once from
// rules: a user message mentioning a transfer asks for transferMoney, one asking to
// confirm calls userApproval, one saying "slowly" waits until the turn is aborted (for
// detach and abort), anything else is echoed; after a tool it reports the tool's output,
// streamed in two text chunks.
'use strict';

const fs = require('node:fs');
const express = require('express');
const { expressHandler } = require('@genkit-ai/express');
const { genkit, z, InMemorySessionStore } = require('genkit/beta');

const LEDGER = process.argv[2];
const TRANSFER = { amount: 500, toAccount: 'savings' };
const QUESTION = { question: 'Close the old account?' };

const ai = genkit({});

const modelMessage = (...content) => ({ message: { role: 'model', content }, finishReason: 'stop' });

function report(response) {
  const output = response.output;
  if (response.name === 'transferMoney') {
    return output && output.success ? 'Done: transaction txn-123.' : 'The transfer was not made.';
  }
  return `You answered ${sortedJson(output)}.`;
}

// JSON as Python's json.dumps(value, sort_keys=True) writes it: ", " and ": " separators
function sortedJson(value) {
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(', ')}]`;
  if (value && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}: ${sortedJson(value[k])}`).join(', ')}}`;
  }
  return JSON.stringify(value);
}

ai.defineModel({ name: 'scripted', apiVersion: 'v2' }, async (request, { sendChunk, abortSignal }) => {
  const last = request.messages[request.messages.length - 1];
  let text;
  if (last.role === 'tool') {
    text = last.content
      .filter((p) => p.toolResponse)
      .map((p) => report(p.toolResponse))
      .join(' ');
  } else {
    const said = last.content
      .map((p) => p.text ?? '')
      .join('')
      .trim();
    if (/transfer/i.test(said)) {
      return modelMessage({ toolRequest: { name: 'transferMoney', ref: 't1', input: TRANSFER } });
    }
    if (/confirm/i.test(said)) {
      return modelMessage({ toolRequest: { name: 'userApproval', ref: 'q1', input: QUESTION } });
    }
    if (/slowly/i.test(said)) {
      await new Promise((_, reject) => abortSignal.addEventListener('abort', () => reject(new Error('aborted'))));
    }
    text = `You said: ${said} (${request.messages.length} messages so far)`;
  }
  const space = text.indexOf(' ');
  const pieces = space < 0 ? [text, ''] : [text.slice(0, space + 1), text.slice(space + 1)];
  for (const piece of pieces) sendChunk({ role: 'model', content: [{ text: piece }] });
  return modelMessage({ text });
});

const userApproval = ai.defineInterrupt({
  name: 'userApproval',
  description: 'Ask the user to confirm.',
  inputSchema: z.object({ question: z.string() }),
});

const transferMoney = ai.defineTool(
  {
    name: 'transferMoney',
    description: 'Transfer money to a specified account, pausing for user approval.',
    inputSchema: z.object({ amount: z.number(), toAccount: z.string() }),
    outputSchema: z.object({ success: z.boolean(), transactionId: z.string().optional() }),
  },
  async (input, { interrupt, resumed }) => {
    if (!resumed) interrupt({ details: `Transfer $${input.amount.toFixed(2)} to ${input.toAccount}` });
    if (!(resumed && resumed.approved)) return { success: false };
    fs.appendFileSync(LEDGER, `${input.amount.toFixed(0)} ${input.toAccount}\n`);
    return { success: true, transactionId: 'txn-123' };
  }
);

const bank = ai.defineAgent({
  name: 'bankingAgent',
  model: 'scripted',
  system: 'You are a banking assistant. Use transferMoney to move funds.',
  tools: [transferMoney, userApproval],
  store: new InMemorySessionStore(),
});

const app = express();
app.use(express.json());
app.post('/bankingAgent', expressHandler(bank));
app.post('/bankingAgent/getSnapshot', expressHandler(bank.getSnapshotDataAction));
app.post('/bankingAgent/abort', expressHandler(bank.abortAgentAction));

const server = app.listen(0, '127.0.0.1', () => {
  console.log(`PORT ${server.address().port}`);
});
