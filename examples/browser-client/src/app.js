// The banking assistant page: Genkit's own remoteAgent ('genkit/beta/client') driving an
// nb-agents server from another origin. Sends the API key in the Authorization header (Genkit's
// apiKey() convention), renders the approval dialog from the paused turn's interrupt.input, and
// streams the resumed turn's reply into the page. Model and tool text only ever goes in through
// textContent: it is shown as text, never parsed as HTML.
import { remoteAgent } from 'genkit/beta/client';

const $ = (id) => document.getElementById(id);
const log = $('log');
const status = $('status');
let agent = null;
let chat = null;
let busy = false;

function setStatus(text, { error = false } = {}) {
  status.textContent = text;
  status.classList.toggle('error', error);
}

function addMessage(kind, text) {
  const el = document.createElement('div');
  el.className = `msg ${kind}`;
  el.textContent = text;
  log.append(el);
  el.scrollIntoView({ block: 'nearest' });
  return el;
}

// "STATUS: message" for what Genkit's client throws: an AgentError, or a plain Error carrying
// the HTTP answer ("Server returned: 404: {...}") of a request the server refused outright
function explain(e) {
  let message = String(e?.message ?? e).replace(/\nundefined$/, '');
  const http = /^Server returned: (\d+): ([\s\S]*)$/.exec(message);
  if (http) {
    try {
      const body = JSON.parse(http[2]);
      const err = body.error ?? body;
      if (err.status) return `${err.status}: ${err.message}`;
    } catch {
      // not JSON: show it as it came
    }
    return `HTTP ${http[1]}: ${http[2]}`;
  }
  if (e instanceof TypeError || e?.details instanceof TypeError) {
    // fetch itself failed: no answer at all, or one the browser hid from the page (CORS)
    return `${message}: the server did not answer this page (is it running, and does it allow the origin ${location.origin}? see --cors-origin)`;
  }
  if (e?.status && e.status !== 'UNKNOWN' && !message.startsWith(`${e.status}:`)) {
    message = `${e.status}: ${message}`;
  }
  return message;
}

function showError(e) {
  const text = explain(e);
  addMessage('error', text);
  setStatus(text, { error: true });
}

function setBusy(value) {
  busy = value;
  $('send').disabled = value || !chat;
  $('message').disabled = value || !chat;
}

function showSession(res) {
  if (res.sessionId) {
    setStatus(`Session ${res.sessionId}`);
    status.dataset.sessionId = res.sessionId;
  }
}

// the approval dialog for one interrupt: its input's fields as a list, Approve and Deny
function askApproval(interrupt) {
  const dialog = $('approval');
  const input = interrupt.input;
  $('approvalTitle').textContent = interrupt.name === 'userApproval' ? 'Approval needed' : `${interrupt.name} needs your answer`;
  $('approvalIntro').textContent = 'The assistant asks before it acts. Approve only if this is what you want.';
  const fields = $('approvalFields');
  fields.replaceChildren();
  const entries = input && typeof input === 'object' && !Array.isArray(input) ? Object.entries(input) : [['Request', input]];
  for (const [key, value] of entries) {
    const dt = document.createElement('dt');
    dt.textContent = key.charAt(0).toUpperCase() + key.slice(1);
    const dd = document.createElement('dd');
    dd.textContent = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
    fields.append(dt, dd);
  }
  $('feedback').value = '';
  return new Promise((resolve) => {
    dialog.addEventListener(
      'close',
      () => {
        const feedback = $('feedback').value.trim();
        resolve({ approved: dialog.returnValue === 'approve', ...(feedback && { feedback }) });
      },
      { once: true }
    );
    dialog.returnValue = '';
    dialog.showModal();
    $('approve').focus();
  });
}

// Streams one turn into a model bubble. A paused turn gets no bubble: the dialog stands for it.
async function runTurn(turn) {
  setBusy(true);
  const bubble = addMessage('model', '');
  bubble.dataset.streaming = 'true';
  let chunks = 0;
  let res;
  try {
    for await (const chunk of turn.stream) {
      if (chunk.text) {
        bubble.textContent += chunk.text;
        bubble.dataset.chunks = String(++chunks);
        bubble.scrollIntoView({ block: 'nearest' });
      }
    }
    res = await turn.response;
  } catch (e) {
    bubble.remove();
    showError(e);
    return;
  } finally {
    delete bubble.dataset.streaming;
    setBusy(false);
  }
  showSession(res);
  if (!bubble.textContent && res.text) bubble.textContent = res.text;
  if (res.interrupts.length || !bubble.textContent) bubble.remove();
  if (res.interrupts.length) await answer(res.interrupts);
}

// Ask about each interrupt, then resume the same chat with every answer (the agent may pause again)
async function answer(interrupts) {
  const respond = [];
  for (const interrupt of interrupts) {
    const decision = await askApproval(interrupt);
    addMessage('note', `${decision.approved ? 'Approved' : 'Denied'}: ${interrupt.input?.details ?? interrupt.name}`);
    respond.push(interrupt.respond(decision));
  }
  await runTurn(chat.resumeStream({ respond }));
}

// an interrupt read from a stored snapshot, with the same respond() as the client's own
function pendingFrom(part) {
  const { name, ref, input } = part.toolRequest;
  return {
    name,
    ref,
    input,
    respond: (output) => ({ toolResponse: { name, ...(ref !== undefined && { ref }), output } }),
  };
}

function textOf(message) {
  return (message.content ?? []).map((p) => p.text ?? '').join('');
}

// Opens a stored session: shows its conversation and, when it is paused, its approval dialog
async function open(sessionId) {
  chat = agent.chat({ sessionId }); // messages can go on in the session even if it cannot be read
  let loaded;
  try {
    loaded = await agent.loadChat({ sessionId });
  } catch (e) {
    showError(e);
    setBusy(false);
    return;
  }
  chat = loaded;
  for (const message of chat.messages) {
    const text = textOf(message);
    if (text && (message.role === 'user' || message.role === 'model')) addMessage(message.role, text);
  }
  setStatus(`Session ${sessionId}`);
  status.dataset.sessionId = sessionId;
  setBusy(false);
  const last = chat.messages.at(-1);
  const pending = (last?.role === 'model' ? last.content : []).filter((p) => p.toolRequest && p.metadata?.interrupt);
  if (pending.length) await answer(pending.map(pendingFrom));
}

$('connect').addEventListener('submit', async (event) => {
  event.preventDefault();
  const server = $('server').value.trim().replace(/\/+$/, '');
  const key = $('apiKey').value.trim();
  const sessionId = $('sessionId').value.trim();
  agent = remoteAgent({ url: `${server}/${encodeURIComponent($('agent').value.trim())}`, headers: { Authorization: key } });
  log.replaceChildren();
  delete status.dataset.sessionId;
  if (sessionId) {
    setStatus(`Opening session ${sessionId}…`);
    await open(sessionId);
  } else {
    chat = agent.chat();
    setStatus(`Connected to ${server}: send a message to start a chat.`);
    setBusy(false);
  }
});

$('composer').addEventListener('submit', async (event) => {
  event.preventDefault();
  const text = $('message').value.trim();
  if (!text || !chat || busy) return;
  addMessage('user', text);
  $('message').value = '';
  await runTurn(chat.sendStream(text));
});

// Escape would close the dialog with no answer: the turn stays paused until a button is pressed
$('approval').addEventListener('cancel', (event) => event.preventDefault());

// for the browser console (and the tests): resume the current chat with hand-made answers
window.bankPage = {
  get chat() {
    return chat;
  },
  resume: (resume) => runTurn(chat.resumeStream(resume)),
};
