// Genkit's JS client (npm genkit, 'genkit/beta/client') driving an nb_agents server.
// Usage: node bank_flow.mjs BASE_URL  -> prints one JSON object, one key per scenario;
// tests/interop/test_genkit_js_client.py asserts it field by field. A scenario that
// throws records {thrown: {...}} instead of stopping the others.
import { remoteAgent } from 'genkit/beta/client';

const base = process.argv[2];
const results = { unhandledRejections: [] };

const errorInfo = (e) => ({
  name: e?.constructor?.name ?? typeof e,
  status: e?.status ?? null,
  message: String(e?.message ?? e),
});

// the client leaves a promise rejected after turn.abort(); record it rather than crash
process.on('unhandledRejection', (e) => results.unhandledRejections.push(errorInfo(e)));

async function scenario(name, fn) {
  try {
    results[name] = await fn();
  } catch (e) {
    results[name] = { thrown: errorInfo(e), stack: String(e?.stack ?? '') };
  }
}

async function thrown(fn) {
  try {
    return { returned: (await fn()) ?? null };
  } catch (e) {
    return { thrown: errorInfo(e) };
  }
}

const interrupts = (res) => res.interrupts.map((i) => ({ name: i.name, ref: i.ref ?? null, input: i.input }));
const summary = (res) => ({
  finishReason: res.finishReason,
  text: res.text,
  snapshotId: res.snapshotId ?? null,
  sessionId: res.sessionId ?? null,
  interrupts: interrupts(res),
});
const snapshot = (s) =>
  s && {
    snapshotId: s.snapshotId,
    sessionId: s.sessionId ?? null,
    parentId: s.parentId ?? null,
    status: s.status ?? null,
    finishReason: s.finishReason ?? null,
    roles: (s.state?.messages ?? []).map((m) => m.role),
  };
const chunkKind = (c) =>
  c.raw?.modelChunk ? `model:${c.raw.modelChunk.role ?? ''}` : c.raw?.turnEnd ? 'turnEnd' : Object.keys(c.raw ?? {}).join(',');
// a restart part carrying metadata.resumed, built from the client's own restart()
const approve = (pause) => {
  const part = pause.restart();
  return { ...part, metadata: { ...(part.metadata ?? {}), resumed: { approved: true } } };
};

const bank = remoteAgent({ url: `${base}/bankingAgent` });

await scenario('respond', async () => {
  const chat = bank.chat();
  const first = await chat.send('Please confirm closing the old account.');
  const [pause] = first.interrupts;
  const answer = pause.respond({ approved: true, note: 'go ahead' });
  const res = await chat.resume({ respond: [answer] });
  return {
    first: summary(first),
    answer,
    resumed: summary(res),
    chatSnapshotId: chat.snapshotId ?? null,
    roles: chat.messages.map((m) => m.role),
  };
});

await scenario('restart', async () => {
  const chat = bank.chat();
  const first = await chat.send('Transfer $500 to my savings account.');
  const answer = approve(first.interrupts[0]);
  const turn = chat.resumeStream({ restart: [answer] });
  const chunks = [];
  for await (const c of turn.stream) {
    chunks.push({ kind: chunkKind(c), text: c.text ?? '', accumulatedText: c.accumulatedText ?? '' });
  }
  const res = await turn.response;
  return { first: summary(first), answer, chunks, resumed: summary(res) };
});

await scenario('snapshots', async () => {
  const chat = bank.chat();
  const first = await chat.send('Transfer $500 to my savings account.');
  const res = await chat.resume({ restart: [approve(first.interrupts[0])] });
  return {
    resumed: summary(res),
    bySnapshot: snapshot(await bank.getSnapshot({ snapshotId: res.snapshotId })),
    bySession: snapshot(await bank.getSnapshot({ sessionId: res.sessionId })),
    paused: snapshot(await bank.getSnapshot({ snapshotId: first.snapshotId })),
    missing: await thrown(() => bank.getSnapshot({ snapshotId: 'no-such-snapshot' })),
    abort: await bank.abort(res.snapshotId),
    abortAgain: await bank.abort(res.snapshotId),
    abortUnknown: (await bank.abort('no-such-snapshot')) ?? null,
  };
});

await scenario('misuse', async () => ({
  stateToServerManaged: await thrown(() => bank.chat({ state: { messages: [] } }).send('hello')),
  snapshotToClientManaged: await thrown(() =>
    remoteAgent({ url: `${base}/signedBank` }).chat({ snapshotId: 'abc' }).send('hello')
  ),
  detachToClientManaged: await thrown(() => remoteAgent({ url: `${base}/plainBank` }).chat().detach('later')),
  unknownSnapshot: await thrown(() => bank.chat({ snapshotId: 'no-such-snapshot' }).send('hello')),
}));

await scenario('signed', async () => {
  const signed = remoteAgent({ url: `${base}/signedBank` });
  const chat = signed.chat();
  const first = await chat.send('Transfer $500 to my savings account.');
  const second = await chat.resume({ restart: [approve(first.interrupts[0])] });
  const third = await chat.send('thanks');
  const turns = [first, second, third].map((r) => ({ ...summary(r), state: r.raw.state ?? null }));
  const blob = third.raw.state;
  const forged = { ...blob, messages: blob.messages.slice(0, 1) };
  return {
    turns,
    roles: chat.messages.map((m) => m.role),
    forged: await thrown(() => signed.chat({ state: forged }).send('again')),
  };
});

const blocker = remoteAgent({ url: `${base}/blocker` });

await scenario('detachAbort', async () => {
  const task = await blocker.chat().detach('work in the background');
  const pending = snapshot(await blocker.getSnapshot({ snapshotId: task.snapshotId }));
  const previous = await task.abort();
  const final = await task.wait({ intervalMs: 50 });
  return { snapshotId: task.snapshotId, pending, previous: previous ?? null, final: snapshot(final) };
});

await scenario('streamAbort', async () => {
  const turn = blocker.chat().sendStream('work until I stop you');
  const reader = turn.stream[Symbol.asyncIterator]();
  const first = await reader.next();
  turn.abort();
  const res = await turn.response;
  return { firstChunk: first.value?.text ?? null, finishReason: res.finishReason };
});

console.log(JSON.stringify(results));
