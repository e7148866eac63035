// web/generate.mjs — the Generate section: its fields checked, a generation
// streamed from the generation worker into #output (and the "why this byte"
// strip), the speed line, Stop (and Esc), Ctrl+Enter, Copy and Save.
import { $, enc, fmt, hexOf, showError, hideError, guarded, markField, intField, fieldError, download, storyBreaks } from './ui.mjs';
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

// Generate answers at once: the button is taken, Stop offered and the
// keyboard's place moved to Stop before anything is asked of the worker; at
// the end the keyboard goes back to Generate (it had the focus, or lost it).
async function startGenerate(page, g) {
  hideError();
  if (!page.ready.model || g.running || g.starting) return;
  g.starting = true;        // at once: a second click or Ctrl+Enter finds it taken
  g.cancelled = false;
  const fromButton = document.activeElement === $('generate');
  page.refresh();
  if (fromButton) $('stop').focus();
  $('speed').textContent = 'Starting…';
  try { await runGenerate(page, g); } finally {
    g.starting = false;
    page.refresh();
    if (fromButton && (document.activeElement === $('stop') || document.activeElement === document.body)) $('generate').focus();
  }
}

async function stopGenerate(page, g) {
  if (g.starting && !g.running) { g.cancelled = true; return; }
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
  if (!fields || g.cancelled) { $('speed').textContent = ''; return; }
  const prompt = enc.encode($('prompt').value);
  const out = $('output');
  clearOutput(page, g, prompt);
  const explain = $('explain').checked;
  Object.assign(g, { running: true, n: 0, t0: performance.now() });
  page.refresh();
  const stream = outputStream(page, g, out, fields.n);
  const job = page.gen.request('generate', { key: page.models.current, prompt, ...fields, explain }, { onEvent: stream.onEvent });
  g.rid = job.rid;
  try {
    const r = await job.done;
    stream.end();
    out.dataset.hex = stream.hex();
    out.dataset.done = '1';
    $('speed').textContent = `${fmt(r.n)} bytes in ${r.seconds.toFixed(2)} s · ${fmt(r.n / Math.max(r.seconds, 1e-3))} bytes/s` +
      (r.stopped ? ' (stopped)' : '');
    testEvent('generated', r.n);
  } catch (e) {
    stream.end();
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
  const breaks = storyBreaks(out);
  let pendingText = '', raf = 0;
  const paint = () => {
    raf = 0;
    if (pendingText) { breaks.append(pendingText); pendingText = ''; }
    page.why.follow();
  };
  const onEvent = (event, m) => {
    if (event === 'prompt') {          // a long prompt is being read
      $('speed').textContent = readingLine(m.fed, m.total);
      return;
    }
    hexParts.push(hexOf(m.bytes));
    pendingText += dec.decode(m.bytes, { stream: true });
    if (m.lines) page.why.push(m.lines);
    g.n = m.done;
    $('speed').textContent = progressLine(m.done, n, m.seconds);
    if (!raf) raf = requestAnimationFrame(paint);
  };
  const end = () => { pendingText += dec.decode(); if (raf) cancelAnimationFrame(raf); paint(); breaks.flush(); };
  return { onEvent, end, hex: () => hexParts.join(''), any: () => hexParts.length > 0 };
}

// The prompt is read in slices of this many bytes (the worker's promptSlice):
// a longer one shows how far it is.
const PROMPT_SLICE = 512;
const readingLine = (fed, total) => `Reading the prompt: ${fmt(fed)} of ${fmt(total)} bytes (${Math.floor(100 * fed / total)} %)…`;

// The prompt above the story; a long one folded to its last lines, with a
// button that unfolds it (the story's bytes, Copy and Save keep all of it).
const FOLD_AT = 600, FOLD_KEEP = 240;
function echoPrompt(text) {
  const more = $('output-prompt-more'), chars = [...text];
  const fold = chars.length > FOLD_AT;
  more.hidden = !fold;
  more.setAttribute('aria-expanded', 'false');
  more.textContent = fold ? `… ${fmt(chars.length - FOLD_KEEP)} more characters of the prompt (show)` : 'Show the whole prompt';
  $('output-prompt').textContent = fold ? chars.slice(-FOLD_KEEP).join('') : text;
  more.onclick = () => {
    const open = more.getAttribute('aria-expanded') !== 'true';
    more.setAttribute('aria-expanded', String(open));
    $('output-prompt').textContent = open ? text : chars.slice(-FOLD_KEEP).join('');
    more.textContent = open ? 'Fold the prompt' : `… ${fmt(chars.length - FOLD_KEEP)} more characters of the prompt (show)`;
  };
}

// A new story: the output, its buttons and the why strip start empty.
function clearOutput(page, g, prompt) {
  const out = $('output');
  out.textContent = '';
  out.dataset.hex = '';
  out.dataset.done = '0';
  echoPrompt($('prompt').value || '');
  $('speed').textContent = prompt.length > PROMPT_SLICE ? readingLine(0, prompt.length) : '';
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
