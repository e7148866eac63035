// web/generate.mjs — the Generate section: its fields checked, a generation
// streamed from the generation worker into #output (and the "why this byte"
// strip), the speed line, Stop (and Esc), Ctrl+Enter, Copy and Save.
import { $, enc, fmt, hexOf, showError, hideError, guarded, markField, intField, fieldError, download } from './ui.mjs';
import { testEvent } from './hook.mjs';

// The section: running / starting (a click or Ctrl+Enter finds it taken),
// the rid of the running generation, bytes so far, its start, and the story
// last shown (for Copy and Save).
export function initGenerate(page) {
  const g = { running: false, starting: false, rid: 0, n: 0, t0: 0, story: null };
  $('output-copy').addEventListener('click', () => guarded(async () => {
    await navigator.clipboard.writeText(new TextDecoder().decode(storyBytes(g)));
    $('output-note').textContent = 'Copied.';
    testEvent('copied', storyBytes(g).length);
  }));
  $('output-save').addEventListener('click', () => guarded(async () => {
    download(storyBytes(g), `${(page.models.current || 'story').replace(/\.atome$/, '')}-story.txt`, 'text/plain');
    $('output-note').textContent = 'Saved.';
  }));
  $('generate').addEventListener('click', () => startGenerate(page, g));
  $('stop').addEventListener('click', () => stopGenerate(page, g));
  document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && g.running) { e.preventDefault(); stopGenerate(page, g); } });
  $('prompt').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); if (!$('generate').disabled) startGenerate(page, g); }
  });
  return {
    state: g,
    get running() { return g.running; },
    stop: () => stopGenerate(page, g),
    refresh: () => {
      const busy = g.running || g.starting;
      $('generate').disabled = !(page.ready.module && page.ready.model) || busy;
      $('stop').disabled = !busy;
    },
  };
}

async function startGenerate(page, g) {
  hideError();
  if (!page.ready.model || g.running || g.starting) return;
  g.starting = true;        // at once: a second click or Ctrl+Enter finds it taken
  try { await runGenerate(page, g); } finally { g.starting = false; page.refresh(); }
}

async function stopGenerate(page, g) {
  if (!g.running) return;
  page.gen.call('stop', { target: g.rid }).catch(() => {});
  while (g.running) await new Promise((r) => setTimeout(r, 10));
}

// The shared parser's messages name CLI flags; the page names its fields.
const FLAG_FIELDS = { '--temperature': ['temperature', 'Temperature'], '--top-k': ['top-k', 'Top-k'], '--top-p': ['top-p', 'Top-p'] };
function settingsError(e) {
  for (const [flag, [id, label]] of Object.entries(FLAG_FIELDS))
    if (e.message.startsWith(flag)) return fieldError(id, label + e.message.slice(flag.length));
  return e;
}

// Generate's fields, checked (the shared limits; empty Length and Seed take
// their defaults); null after showing the error on its field.
async function generateFields(page) {
  const L = page.limits;
  const g = { temperature: $('temperature').value.trim() || null, topK: $('top-k').value.trim() || null,
    topP: $('top-p').value.trim() || null, window: 0 };
  try {
    g.n = $('n').value.trim() === '' ? L.nDefault : intField('n', 0, L.nMax, 'Length');
    g.seed = $('seed').value.trim() === '' ? L.seedDefault : intField('seed', 0, 4294967295, 'Seed');
    if ($('window').value.trim() !== '') g.window = intField('window', 1, L.maxWindow, 'Window');
    await page.gen.call('check', { temperature: g.temperature, topK: g.topK, topP: g.topP }).catch((e) => { throw settingsError(e); });
  } catch (e) { showError(e.message); markField(e); return null; }
  return g;
}

// The speed line while bytes stream: done of total, percentage, rate, ETA.
function progressLine(done, n, seconds) {
  const rate = done / Math.max(seconds, 1e-3), left = (n - done) / rate;
  const eta = rate > 0 ? (left < 90 ? `${Math.ceil(left)} s` : `${Math.ceil(left / 60)} min`) : '?';
  return `${fmt(done)} of ${fmt(n)} bytes (${Math.floor(100 * done / Math.max(n, 1))} %) · ${fmt(rate)} bytes/s · ETA ${eta}`;
}

async function runGenerate(page, g) {
  $('output').dataset.done = '0';
  const fields = await generateFields(page);
  if (!fields) return;
  const prompt = enc.encode($('prompt').value);
  const out = $('output');
  clearOutput(page, g, prompt);
  const explain = $('explain').checked;
  const hadFocus = document.activeElement === $('generate');
  Object.assign(g, { running: true, n: 0, t0: performance.now() });
  page.refresh();
  const stream = outputStream(page, g, out, fields.n);
  const job = page.gen.request('generate', { key: page.models.current, prompt, ...fields, explain }, { onEvent: stream.onEvent });
  g.rid = job.rid;
  if (hadFocus) $('stop').focus();       // the Generate button is disabled now: keep the keyboard's place
  try {
    const r = await job.done;
    stream.end();
    out.dataset.hex = stream.hex();
    out.dataset.done = '1';
    $('speed').textContent = `${fmt(r.n)} bytes in ${r.seconds.toFixed(2)} s · ${fmt(r.n / Math.max(r.seconds, 1e-3))} bytes/s` +
      (r.stopped ? ' (stopped)' : '');
    testEvent('generated', r.n);
  } catch (e) {
    out.dataset.hex = stream.hex();
    out.dataset.done = '1';
    if (!stream.any()) $('speed').textContent = '';
    showError(e.message);
    markField(e);
  } finally {
    endGenerate(page, g, prompt, out);
  }
}

// The worker's events of one generation into #output, the speed line and
// the why strip, painted at most once a frame.
function outputStream(page, g, out, n) {
  const dec = new TextDecoder();
  const hexParts = [];
  let pendingText = '', raf = 0;
  const paint = () => {
    raf = 0;
    if (pendingText) { out.append(pendingText); pendingText = ''; }
    page.why.follow();
  };
  const onEvent = (event, m) => {
    if (event === 'prompt') {          // a long prompt is being read
      $('speed').textContent = `Reading the prompt: ${fmt(m.fed)} of ${fmt(m.total)} bytes (${Math.floor(100 * m.fed / m.total)} %)…`;
      return;
    }
    hexParts.push(hexOf(m.bytes));
    pendingText += dec.decode(m.bytes, { stream: true });
    if (m.lines) page.why.push(m.lines);
    g.n = m.done;
    $('speed').textContent = progressLine(m.done, n, m.seconds);
    if (!raf) raf = requestAnimationFrame(paint);
  };
  const end = () => { pendingText += dec.decode(); if (raf) cancelAnimationFrame(raf); paint(); };
  return { onEvent, end, hex: () => hexParts.join(''), any: () => hexParts.length > 0 };
}

// A new story: the output, its buttons and the why strip start empty.
function clearOutput(page, g, prompt) {
  const out = $('output');
  out.textContent = '';
  out.dataset.hex = '';
  out.dataset.done = '0';
  $('output-prompt').textContent = $('prompt').value || '';
  $('speed').textContent = prompt.length > 2048 ? `Reading the prompt (${fmt(prompt.length)} bytes)…` : '';
  g.story = null;
  $('output-copy').disabled = true;
  $('output-save').disabled = true;
  $('output-note').textContent = '';
  page.why.reset();
}

// Done, stopped or failed: the story can be copied and saved, the keyboard
// goes back to Generate.
function endGenerate(page, g, prompt, out) {
  g.running = false;
  if (out.dataset.hex || $('prompt').value) {
    g.story = { prompt, hex: out.dataset.hex };
    $('output-copy').disabled = false;
    $('output-save').disabled = false;
  }
  page.refresh();
  if (document.activeElement === $('stop') || document.activeElement === document.body) $('generate').focus();
  page.why.end();
}

// The story as the page shows it: the prompt, then the generated bytes
// exactly (Save writes the bytes; Copy the text, invalid UTF-8 replaced).
function storyBytes(g) {
  const st = g.story;
  if (!st) return new Uint8Array(0);
  const gen = st.hex.match(/../g)?.map((h) => parseInt(h, 16)) ?? [];
  const all = new Uint8Array(st.prompt.length + gen.length);
  all.set(st.prompt, 0);
  all.set(gen, st.prompt.length);
  return all;
}
