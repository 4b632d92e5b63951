// A turn that streams chunks and then fails with a thrown error, driven by Genkit's JS
// client (npm genkit, 'genkit/beta/client') in a default Node process: no
// 'unhandledRejection' handler, so a promise the client leaves rejected kills the
// process (exit status 1) instead of being recorded.
// Usage: node stream_error.mjs BASE_URL [ROUNDS] [AGENT] -> prints one JSON object.
import { remoteAgent } from 'genkit/beta/client';

const base = process.argv[2];
const rounds = Number(process.argv[3] ?? 20);
const failing = remoteAgent({ url: `${base}/${process.argv[4] ?? 'failing'}` });

const errorInfo = (e) => ({
  name: e?.constructor?.name ?? typeof e,
  status: e?.status ?? null,
  message: String(e?.message ?? e),
});

async function streamed() {
  const turn = failing.chat().sendStream('stream, then fail');
  const texts = [];
  let streamError = null;
  try {
    for await (const chunk of turn.stream) texts.push(chunk.text);
  } catch (e) {
    streamError = errorInfo(e);
  }
  let responseError = null;
  try {
    await turn.response;
  } catch (e) {
    responseError = errorInfo(e);
  }
  return { texts, streamError, responseError };
}

async function sent() {
  try {
    await failing.chat().send('send, then fail');
    return { sendError: null };
  } catch (e) {
    return { sendError: errorInfo(e) };
  }
}

const results = { streamed: [], sent: [] };
for (let i = 0; i < rounds; i++) {
  results.streamed.push(await streamed());
  results.sent.push(await sent());
}
// a rejection nobody handles is reported on a later tick: give it the chance to end the process
await new Promise((resolve) => setTimeout(resolve, 200));
console.log(JSON.stringify(results));
