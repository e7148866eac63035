// web/app.mjs — the Atome page: generate with the shipped (or your own)
// model, train a model in the tab, download it for a board. The heavy work
// runs in two module workers on atome.wasm: web/gen-worker.mjs (integer
// engine, board files) and web/train-worker.mjs (float trainer). Saved runs
// live in IndexedDB (web/store.mjs). docs/web.md describes the page, its
// element contract and the page <-> worker messages.
import uPlot from '/vendor/uplot/uPlot.esm.js';
import * as store from './store.mjs';
import { drawWhy, whyDetail, WhyLines, WHY_COL } from './why.mjs';

const $ = (id) => document.getElementById(id);
const enc = new TextEncoder();
const hexOf = (u8) => { let s = ''; for (const b of u8) s += (b < 16 ? '0' : '') + b.toString(16); return s; };
const fmt = (x) => Math.round(x).toLocaleString('en-US');
const BOARDS = [{ id: 'mps2-an385', name: 'mps2-an385' }, { id: 'microbit', name: 'micro:bit v1' }];
// The largest corpus the page accepts: 16 MiB. The training module's memory
// grows with what a run needs (up to 1 GiB), and a 60K model trains on a
// corpus this large at the default batch and seq (tests/node/web-demanding).
export const CORPUS_LIMIT = 16 * 1024 * 1024;
const BUILTIN = { name: 'tinystories-500k.txt', url: '/web/data/tinystories-500k.txt',
  label: 'TinyStories, first 500,000 bytes (built in)' };

// One set of generation limits, the C core's (core/sampler.h), read from the
// module at start: n in 0..nMax, an empty Length is nDefault bytes, an empty
// Seed is seedDefault — in Generate, on the board cards, in the CLI and in
// the firmware alike.
const LIMITS = { nMax: 1e12, nDefault: 256, seedDefault: 1, maxWindow: 65535 };

const params = new URLSearchParams(location.search);
const test = (window.__atome = { saves: 0, savedStep: -1, runId: null, events: [] });

// ------------------------------------------------------------------ errors
function showError(msg) {
  const line = String(msg).split('\n')[0];
  $('error-text').textContent = line;
  $('error').hidden = false;
  test.events.push(['error', line]);
}
function hideError() { $('error').hidden = true; $('error-text').textContent = ''; }
$('error-close').addEventListener('click', hideError);
window.addEventListener('unhandledrejection', (e) => showError(e.reason?.message ?? String(e.reason)));

// ------------------------------------------------------------------ workers
function rpcWorker(url) {
  const w = new Worker(url, { type: 'module' });
  let next = 1;
  const pending = new Map();
  w.onmessage = (ev) => {
    const m = ev.data;
    const p = pending.get(m.rid);
    if (!p) return;
    if (m.type === 'bytes' || m.type === 'prompt') { p.onBytes?.(m); return; }
    pending.delete(m.rid);
    if (m.ok) p.resolve(m.result);
    else p.reject(Object.assign(new Error(m.error), { usage: m.usage, ...(m.field ? { field: m.field } : {}) }));
  };
  w.onerror = (e) => { e.preventDefault(); for (const p of pending.values()) p.reject(new Error(`generation worker failed: ${e.message}`)); pending.clear(); };
  return {
    call(type, args = {}, transfer = [], onBytes = null) {
      const rid = next++;
      return { rid, done: new Promise((resolve, reject) => {
        pending.set(rid, { resolve, reject, onBytes });
        w.postMessage({ ...args, type, rid }, transfer);
      }) };
    },
    stop(rid) { w.postMessage({ type: 'stop', target: rid }); },
  };
}
const gen = rpcWorker(new URL('./gen-worker.mjs', import.meta.url));
const call = (type, args, transfer) => gen.call(type, args, transfer).done;
const trainer = new Worker(new URL('./train-worker.mjs', import.meta.url), { type: 'module' });

// ------------------------------------------------------------------ settings from the query string
for (const [k, v] of params) {
  const el = document.getElementById(k);
  if (el && (el.tagName === 'INPUT' && el.type !== 'file' || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT')) el.value = v;
}

// ------------------------------------------------------------------ models
const models = new Map();   // select value -> { label, kind: shipped|file|trained, bytes?, url?, info? }
let current = null;         // select value of the open model
let ready = { module: false, model: false };

const boardFit = new Map();   // board id -> 'ok' | 'warn' | 'bad' for the open model

function refreshEnabled() {
  const busy = genState.running || genState.starting;
  $('generate').disabled = !(ready.module && ready.model) || busy;
  $('stop').disabled = !busy;
  $('train-start').disabled = !ready.trainer || trainState.active;
  for (const id of ['download-atome01', 'download-atome02', 'download-header'])
    $(id).disabled = !(ready.module && ready.model);
  // a board's firmware buttons: off while its card says the model does not fit (the verdict says why)
  for (const b of BOARDS) {
    const tooBig = boardFit.get(b.id) === 'bad';
    for (const btn of document.querySelectorAll(`.board-card[data-board="${b.id}"] .actions button`)) {
      btn.disabled = !(ready.module && ready.model) || tooBig;
      btn.title = tooBig ? 'This model does not fit this board: see above' : '';
    }
  }
}

function addModelOption(value, entry, select = false) {
  let v = value, k = 2;
  while (models.has(v) && models.get(v).kind !== entry.kind) v = value.replace(/\.atome$/, '') + `-${k++}.atome`;
  models.set(v, entry);
  let opt = [...$('model-select').options].find((o) => o.value === v);
  if (!opt) { opt = new Option(entry.label, v); $('model-select').add(opt); }
  opt.textContent = entry.label;
  if (select) $('model-select').value = v;
  return v;
}

async function fetchBytes(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`cannot fetch ${url}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

let openSerial = 0;
async function openModel(value) {
  const e = models.get(value);
  if (!e) return;
  const serial = ++openSerial;
  if (genState.running) await stopGenerate();
  ready.model = false;
  refreshEnabled();
  $('model-info').textContent = `Opening ${value}…`;
  try {
    if (!e.bytes && e.runId) {
      const r = await store.getRun(e.runId);
      if (!r?.atome02) throw new Error('the saved run of this model is gone');
      e.bytes = r.atome02;
    }
    if (!e.bytes) e.bytes = await fetchBytes(e.url);
    const info = await call('open', { key: value, bytes: e.bytes });
    if (serial !== openSerial) return;      // another model was chosen meanwhile
    e.info = info;
    current = value;
    ready.model = true;
    const i = e.info;
    $('model-info').textContent = `${value}: ${fmt(i.params)} parameters, ${i.layers} layers of width ${i.dModel}, ` +
      `${fmt(i.bytes)} bytes (${i.encoding}), default window ${i.defaultWindow}, engine RAM ${fmt(i.arenaBytes)} bytes.`;
    $('board-model').textContent = `Now: ${value} (${fmt(i.bytes)} bytes).`;
    updateFit();
  } catch (err) {
    if (serial !== openSerial) return;
    $('model-info').textContent = '';
    showError(`${value}: ${err.message}`);
    if (current && current !== value) { $('model-select').value = current; ready.model = true; }
  }
  refreshEnabled();
}

$('model-select').addEventListener('change', () => { hideError(); openModel($('model-select').value); });

async function userModel(file) {
  hideError();
  if (!file) return;
  if (!/\.atome$/i.test(file.name) && file.size > 0) { /* the content decides, the name only labels */ }
  if (file.size === 0) { showError(`${file.name}: the file is empty (a .atome model is a few KB or more)`); return; }
  if (file.size > 64 << 20) { showError(`${file.name}: ${fmt(file.size)} bytes is larger than any .atome model the engine takes (64 MiB)`); return; }
  const bytes = new Uint8Array(await file.arrayBuffer());
  const magic = [0x41, 0x54, 0x4d, 0x43];
  if (!magic.every((b, i) => bytes[i] === b)) {
    const ckpt = String.fromCharCode(...bytes.subarray(0, 8)) === 'ATOMECKP';
    showError(`${file.name}: not a .atome model${ckpt ? ' (it is a training checkpoint: pack it with atome export)' : ' (it does not start with the ATMC magic)'}`);
    return;
  }
  const name = file.name.replace(/[^\w.+-]/g, '_');
  const value = /\.atome$/i.test(name) ? name : `${name}.atome`;
  // open under a scratch key first, so a bad file never replaces a good model
  try {
    await call('open', { key: '__check__', bytes });
    await call('close', { key: '__check__' });
  } catch (err) {
    showError(`${file.name}: ${err.message}`);
    return;
  }
  const v = addModelOption(value, { label: `${value} (your file)`, kind: 'file', bytes }, true);
  await openModel(v);
}
$('model-file').addEventListener('change', (e) => { userModel(e.target.files[0]); e.target.value = ''; });

function dropZone(card, onFile) {
  const el = $(card);
  el.addEventListener('dragover', (e) => { if ([...e.dataTransfer.types].includes('Files')) { e.preventDefault(); el.classList.add('dragging'); } });
  el.addEventListener('dragleave', () => el.classList.remove('dragging'));
  el.addEventListener('drop', (e) => {
    el.classList.remove('dragging');
    if (!e.dataTransfer.files.length) return;
    e.preventDefault();
    onFile(e.dataTransfer.files[0]);
  });
}
dropZone('sec-generate', userModel);
dropZone('sec-train', (f) => pickCorpus(f));

// ------------------------------------------------------------------ generate
const genState = { running: false, rid: 0, n: 0, lines: new WhyLines(), t0: 0 };
test.whyLines = () => genState.lines.all();

// An error about one field: the message names it by its label, the field is
// marked invalid and takes the focus when the message is shown.
function fieldError(id, msg) { return Object.assign(new Error(msg), { field: id }); }
function markField(e) {
  if (!e?.field) return;
  const el = $(e.field);
  el.setAttribute('aria-invalid', 'true');
  el.closest('details')?.setAttribute('open', '');
  el.focus();
  el.addEventListener('input', () => el.removeAttribute('aria-invalid'), { once: true });
}
function intField(id, lo, hi, what) {
  const s = $(id).value.trim();
  if (!/^\d+$/.test(s) || Number(s) < lo || Number(s) > hi) throw fieldError(id, `${what} must be an integer in ${lo}..${hi} (got '${s}')`);
  return Number(s);
}
// The shared parser's messages name CLI flags; the page names its fields.
const FLAG_FIELDS = { '--temperature': ['temperature', 'Temperature'], '--top-k': ['top-k', 'Top-k'], '--top-p': ['top-p', 'Top-p'] };
function settingsError(e) {
  for (const [flag, [id, label]] of Object.entries(FLAG_FIELDS))
    if (e.message.startsWith(flag)) return fieldError(id, label + e.message.slice(flag.length));
  return e;
}

async function startGenerate() {
  hideError();
  if (!ready.model || genState.running || genState.starting) return;
  genState.starting = true;        // at once: a second click or Ctrl+Enter finds it taken
  try { await runGenerate(); } finally { genState.starting = false; refreshEnabled(); }
}

// Generate's fields, checked (the shared limits; empty Length and Seed take
// their defaults); null after showing the error on its field.
async function generateFields() {
  const g = { temperature: $('temperature').value.trim() || null, topK: $('top-k').value.trim() || null,
    topP: $('top-p').value.trim() || null, window: 0 };
  try {
    g.n = $('n').value.trim() === '' ? LIMITS.nDefault : intField('n', 0, LIMITS.nMax, 'Length');
    g.seed = $('seed').value.trim() === '' ? LIMITS.seedDefault : intField('seed', 0, 4294967295, 'Seed');
    if ($('window').value.trim() !== '') g.window = intField('window', 1, LIMITS.maxWindow, 'Window');
    await call('check', { temperature: g.temperature, topK: g.topK, topP: g.topP }).catch((e) => { throw settingsError(e); });
  } catch (e) { showError(e.message); markField(e); return null; }
  return g;
}

// The speed line while bytes stream: done of total, percentage, rate, ETA.
function progressLine(done, n, seconds) {
  const rate = done / Math.max(seconds, 1e-3), left = (n - done) / rate;
  const eta = rate > 0 ? (left < 90 ? `${Math.ceil(left)} s` : `${Math.ceil(left / 60)} min`) : '?';
  return `${fmt(done)} of ${fmt(n)} bytes (${Math.floor(100 * done / Math.max(n, 1))} %) · ${fmt(rate)} bytes/s · ETA ${eta}`;
}

async function runGenerate() {
  $('output').dataset.done = '0';
  const fields = await generateFields();
  if (!fields) return;
  const { n } = fields;
  const prompt = enc.encode($('prompt').value);
  const out = $('output');
  clearOutput(prompt);
  const explain = $('explain').checked;
  const hadFocus = document.activeElement === $('generate');
  const dec = new TextDecoder();
  const hexParts = [];
  genState.sel = -1;
  $('why-detail').replaceChildren();
  Object.assign(genState, { running: true, n: 0, t0: performance.now() });
  refreshEnabled();
  let pendingText = '', raf = 0;
  const sc = $('why-scroll');
  const paint = () => {
    raf = 0;
    if (pendingText) { out.append(pendingText); pendingText = ''; }
    // the strip follows the newest byte unless the reader scrolled back
    const follow = sc.scrollLeft + sc.clientWidth >= sc.scrollWidth - 2 * WHY_COL;
    paintWhy();
    if (follow) { sc.scrollLeft = sc.scrollWidth; paintWhy(); }
  };
  const job = gen.call('generate', { key: current, prompt, ...fields, explain }, [], (m) => {
    if (m.type === 'prompt') {          // a long prompt is being read
      $('speed').textContent = `Reading the prompt: ${fmt(m.fed)} of ${fmt(m.total)} bytes (${Math.floor(100 * m.fed / m.total)} %)…`;
      return;
    }
    hexParts.push(hexOf(m.bytes));
    pendingText += dec.decode(m.bytes, { stream: true });
    if (m.lines) genState.lines.push(m.lines);
    genState.n = m.done;
    $('speed').textContent = progressLine(m.done, n, m.seconds);
    if (!raf) raf = requestAnimationFrame(paint);
  });
  genState.rid = job.rid;
  if (hadFocus) $('stop').focus();       // the Generate button is disabled now: keep the keyboard's place
  try {
    const r = await job.done;
    pendingText += dec.decode();
    if (raf) cancelAnimationFrame(raf);
    paint();
    out.dataset.hex = hexParts.join('');
    out.dataset.done = '1';
    $('speed').textContent = `${fmt(r.n)} bytes in ${r.seconds.toFixed(2)} s · ${fmt(r.n / Math.max(r.seconds, 1e-3))} bytes/s` +
      (r.stopped ? ' (stopped)' : '');
    test.events.push(['generated', r.n]);
  } catch (e) {
    out.dataset.hex = hexParts.join('');
    out.dataset.done = '1';
    if (!hexParts.length) $('speed').textContent = '';
    showError(e.message);
    markField(e);
  } finally {
    endGenerate(prompt, out);
  }
}

// A new story: the output, its buttons and the why strip start empty.
function clearOutput(prompt) {
  const out = $('output');
  genState.lines = new WhyLines();
  out.textContent = '';
  out.dataset.hex = '';
  out.dataset.done = '0';
  $('output-prompt').textContent = $('prompt').value || '';
  $('speed').textContent = prompt.length > 2048 ? `Reading the prompt (${fmt(prompt.length)} bytes)…` : '';
  genState.story = null;
  $('output-copy').disabled = true;
  $('output-save').disabled = true;
  $('output-note').textContent = '';
  $('why').hidden = !$('explain').checked;
  $('why-note').textContent = '';
}

// Done, stopped or failed: the story can be copied and saved, the keyboard
// goes back to Generate.
function endGenerate(prompt, out) {
  genState.running = false;
  if (out.dataset.hex || $('prompt').value) {
    genState.story = { prompt, hex: out.dataset.hex };
    $('output-copy').disabled = false;
    $('output-save').disabled = false;
  }
  refreshEnabled();
  if (document.activeElement === $('stop') || document.activeElement === document.body) $('generate').focus();
  if (genState.lines.dropped) $('why-note').textContent = `The strip shows the last ${fmt(genState.lines.length)} bytes.`;
}

// The story as the page shows it: the prompt, then the generated bytes
// exactly (Save writes the bytes; Copy the text, invalid UTF-8 replaced).
function storyBytes() {
  const st = genState.story;
  if (!st) return new Uint8Array(0);
  const gen = st.hex.match(/../g)?.map((h) => parseInt(h, 16)) ?? [];
  const all = new Uint8Array(st.prompt.length + gen.length);
  all.set(st.prompt, 0);
  all.set(gen, st.prompt.length);
  return all;
}
$('output-copy').addEventListener('click', () => guarded(async () => {
  await navigator.clipboard.writeText(new TextDecoder().decode(storyBytes()));
  $('output-note').textContent = 'Copied.';
  test.events.push(['copied', storyBytes().length]);
}));
$('output-save').addEventListener('click', () => guarded(async () => {
  download(storyBytes(), `${(current || 'story').replace(/\.atome$/, '')}-story.txt`, 'text/plain');
  $('output-note').textContent = 'Saved.';
}));

async function stopGenerate() {
  if (!genState.running) return;
  gen.stop(genState.rid);
  while (genState.running) await new Promise((r) => setTimeout(r, 10));
}
$('generate').addEventListener('click', startGenerate);
$('stop').addEventListener('click', stopGenerate);
document.addEventListener('keydown', (e) => { if (e.key === 'Escape' && genState.running) { e.preventDefault(); stopGenerate(); } });
$('explain').addEventListener('change', () => { if (!$('explain').checked) $('why').hidden = true; else if (genState.lines.length) $('why').hidden = false; });
$('prompt').addEventListener('keydown', (e) => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); if (!$('generate').disabled) startGenerate(); } });

// why-this-byte strip: hover / click / arrow keys pick a byte
genState.sel = -1;
function paintWhy() {
  const sc = $('why-scroll');
  drawWhy($('why-canvas'), $('why-spacer'), genState.lines, genState.sel, sc.scrollLeft, sc.clientWidth);
}
let whyRaf = 0;
$('why-scroll').addEventListener('scroll', () => { if (!whyRaf) whyRaf = requestAnimationFrame(() => { whyRaf = 0; paintWhy(); }); });
new ResizeObserver(() => paintWhy()).observe($('why-scroll'));
function selectWhy(i) {
  const n = genState.lines.length;
  if (!n) return;
  genState.sel = Math.max(0, Math.min(n - 1, i));
  const x = genState.sel * WHY_COL, sc = $('why-scroll');
  if (x < sc.scrollLeft || x > sc.scrollLeft + sc.clientWidth - 2 * WHY_COL) sc.scrollLeft = x - sc.clientWidth / 2;
  paintWhy();
  $('why-detail').replaceChildren(...whyDetail(genState.lines.get(genState.sel)));
}
const whyIndex = (e) => Math.floor((e.offsetX + $('why-scroll').scrollLeft) / WHY_COL);
$('why-canvas').addEventListener('mousemove', (e) => selectWhy(whyIndex(e)));
$('why-canvas').addEventListener('click', (e) => selectWhy(whyIndex(e)));
$('why-canvas').addEventListener('keydown', (e) => {
  const step = { ArrowLeft: -1, ArrowRight: 1, Home: -1e9, End: 1e9, PageUp: -20, PageDown: 20 }[e.key];
  if (step === undefined) return;
  e.preventDefault();
  selectWhy((genState.sel < 0 ? genState.lines.length : genState.sel) + step);
});
$('why-canvas').addEventListener('focus', () => { if (genState.sel < 0) selectWhy(genState.lines.length - 1); });

// ------------------------------------------------------------------ boards
const templates = new Map();
async function template(board) {
  if (!templates.has(board)) templates.set(board, fetchBytes(`/build/mcu/mcu/atome-fw-${board}.elf`).catch((e) => {
    templates.delete(board);
    throw new Error(`the ${board} firmware template is missing on the server (${e.message}); build it with tools/setup`);
  }));
  return templates.get(board);
}

function chosenWindow() {
  const s = $('window').value.trim();
  return /^\d+$/.test(s) && Number(s) >= 1 && Number(s) <= LIMITS.maxWindow ? Number(s) : 0;
}

let fitSerial = 0;
async function updateFit() {
  if (!current || !ready.model) return;
  const serial = ++fitSerial;
  boardFit.clear();
  const key = current, info = models.get(key).info, w = chosenWindow() || info.defaultWindow;
  for (const b of BOARDS) {
    const card = document.querySelector(`.board-card[data-board="${b.id}"]`);
    let cls = 'bad', verdict, rows = [], runW = w;
    try {
      const t = await template(b.id);
      const f = await call('fit', { key, template: t, window: w });
      if (serial !== fitSerial) return;
      const flashOk = f.model_bytes <= f.capacity, ramOk = f.max_window >= w;
      verdict = !flashOk ? `Too big: the model does not fit the ${fmt(f.capacity)}-byte model slot` :
        f.max_window === 0 ? 'Too big: the engine does not fit the board\'s RAM at any window' :
        ramOk ? `Fits at window ${w}` : `Fits at window ${f.max_window} or less (not at ${w})`;
      cls = flashOk && f.max_window > 0 ? (ramOk ? 'ok' : 'warn') : 'bad';
      rows = [['Flash (model slot)', `${fmt(f.model_bytes)} of ${fmt(f.capacity)} bytes`],
        [`RAM at window ${w}`, `${fmt(f.ram_at_window)} of ${fmt(f.arena_bytes)} bytes`],
        ['Largest window that fits', f.max_window ? fmt(f.max_window) : 'none']];
      if (flashOk && f.max_window) runW = Math.min(w, f.max_window);
    } catch (e) {
      verdict = e.message;
    }
    const v = document.createElement('p');
    v.className = `verdict ${cls}`;
    v.textContent = verdict;
    const dl = document.createElement('dl');
    for (const [k, val] of rows) {
      const dt = document.createElement('dt'), dd = document.createElement('dd');
      dt.textContent = k; dd.textContent = val;
      dl.append(dt, dd);
    }
    card.className = `board-card ${cls}`;
    boardFit.set(b.id, cls);
    refreshEnabled();
    const known = document.createElement('p');
    known.className = 'known';
    if (cls !== 'bad') {
      try {
        const g = pageSettings();
        const bytes = await call('expect', { key, ...g, window: runW });
        if (serial !== fitSerial) return;
        known.append(Object.assign(document.createElement('span'), { className: 'label',
          textContent: `Known answer — the board prints, after the prompt (window ${runW}): ` }),
          Object.assign(document.createElement('q'), { textContent: new TextDecoder().decode(bytes) }),
          Object.assign(document.createElement('code'), { className: 'known-hex', textContent: hexOf(bytes) }));
        known.dataset.hex = hexOf(bytes);
      } catch (e) { known.textContent = `Known answer: ${e.message}`; }
    }
    card.querySelector('.fit-body').replaceChildren(v, dl, known);
    // how to flash and run it, only for a model that fits
    card.querySelector('.board-note').replaceChildren(...(cls === 'bad' ? [] : boardNote(b, key, runW)));
  }
}
for (const id of ['window', 'prompt', 'n', 'temperature', 'top-k', 'top-p', 'seed']) $(id).addEventListener('change', updateFit);

// Generate's settings as the firmware's settings block takes them (the
// texts the CLI takes; n and seed checked here).
function pageSettings() {
  const int = (id, lo, hi, what, dflt) => ($(id).value.trim() === '' ? dflt : intField(id, lo, hi, what));
  return {
    prompt: enc.encode($('prompt').value), n: int('n', 0, LIMITS.nMax, 'Length', LIMITS.nDefault),
    temperature: $('temperature').value.trim() || null, topK: $('top-k').value.trim() || null, topP: $('top-p').value.trim() || null,
    seed: int('seed', 0, 4294967295, 'Seed', LIMITS.seedDefault), window: chosenWindow(),
  };
}

function fwName(key, board) { return `${key.replace(/\.atome$/, '')}-${board}.elf`; }

function boardNote(b, key, w) {
  const p = document.createElement('p');
  const promptHex = hexOf(enc.encode($('prompt').value || 'Once upon a time'));
  const args = ['--prompt-hex', promptHex, '--n', /^\d+$/.test($('n').value.trim()) ? $('n').value.trim() : String(LIMITS.nDefault)];
  for (const [flag, id] of [['--temperature', 'temperature'], ['--top-k', 'top-k'], ['--top-p', 'top-p'], ['--seed', 'seed']]) {
    const v = $(id).value.trim();
    if (/^[0-9.]+$/.test(v)) args.push(flag, v);
  }
  args.push('--window', String(w));
  const cmd = `qemu-system-arm -M ${b.id} -display none -monitor none -serial none ` +
    `-semihosting-config enable=on,target=native,arg=atome${args.map((a) => `,arg=${a}`).join('')} ` +
    `-kernel ${fwName(key, b.id)} > story.txt`;
  p.textContent = b.id === 'microbit'
    ? `Flash it: plug the micro:bit in by USB and drag ${current.replace(/\.atome$/, '')}-microbit.hex onto the MICROBIT drive; ` +
      'it restarts and prints the status line, the story and a byte count on its USB serial port: ' +
      'picocom -b 115200 --imap lfcrlf /dev/ttyACM0 (press reset to hear it again). The .elf is for a debugger (pyocd, OpenOCD) or QEMU, ' +
      'with the prompt and settings on the semihosting command line.'
    : `Flash it: copy ${current.replace(/\.atome$/, '')}-mps2-an385.bin to the MPS2 board's configuration USB drive and point ` +
      'its images.txt at it; the story comes out of UART0 at 115200 baud. Under QEMU: qemu-system-arm -M mps2-an385 -display none ' +
      `-monitor none -serial stdio -kernel ${current.replace(/\.atome$/, '')}-mps2-an385.bin. The .elf takes its settings over semihosting (below).`;
  const label = document.createElement('p');
  label.className = 'cmd-label';
  const gw = chosenWindow() || models.get(key)?.info?.defaultWindow;
  label.textContent = w === gw
    ? 'Run it under QEMU with the prompt and settings of Generate (at window ' + w + ', as Generate, it writes Generate\'s bytes):'
    : `Run it under QEMU with the prompt and settings of Generate, at the board's window ${w} (Generate runs at ${gw}, ` +
      'so its bytes differ from these; the known answer above is the board\'s):';
  const pre = document.createElement('pre');
  pre.textContent = cmd;
  pre.tabIndex = 0;
  pre.setAttribute('aria-label', `QEMU command for ${b.name}`);
  const copy = document.createElement('button');
  copy.type = 'button';
  copy.className = 'secondary';
  copy.textContent = 'Copy';
  copy.setAttribute('aria-label', `Copy the QEMU command for ${b.name}`);
  copy.addEventListener('click', () => guarded(async () => {
    await navigator.clipboard.writeText(cmd);
    copy.textContent = 'Copied';
    setTimeout(() => { copy.textContent = 'Copy'; }, 1500);
  }));
  const row = document.createElement('div');
  row.className = 'cmd-row';
  row.append(pre, copy);
  return [p, label, row];
}

function download(bytes, name, type = 'application/octet-stream') {
  const url = URL.createObjectURL(new Blob([bytes], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
  test.events.push(['download', name, bytes.length]);
}

async function guarded(fn) {
  hideError();
  try { await fn(); } catch (e) { showError(e.message); }
}
const base = () => current.replace(/\.atome$/, '');
$('download-atome01').addEventListener('click', () => guarded(async () => download(await call('convert', { key: current, encoding: 1 }), `${base()}-atome01.atome`)));
$('download-atome02').addEventListener('click', () => guarded(async () => download(await call('convert', { key: current, encoding: 2 }), `${base()}-atome02.atome`)));
// as `atome header --model <file>`: the array is atome_model, the comment names the file
$('download-header').addEventListener('click', () => guarded(async () => {
  const r = await call('header', { key: current, source: current, name: '' });
  download(r.text, `${base()}.h`, 'text/x-c');
}));
for (const [id, board, format] of [['download-hex-microbit', 'microbit', 'hex'], ['download-bin-mps2-an385', 'mps2-an385', 'bin']]) {
  $(id).addEventListener('click', () => guarded(async () => {
    const b = BOARDS.find((x) => x.id === board);
    const t = await template(board);
    let g;
    try { g = pageSettings(); } catch (e) { markField(e); throw e; }
    const settings = { ...g, seed: String(g.seed) };
    let r;
    try { r = await call('standalone', { key: current, template: t, board, settings, format }); } catch (e) {
      throw new Error(`${b.name}: ${e.message.replace(/^--(temperature|top-k|top-p)/, (m, f) => ({ temperature: 'Temperature', 'top-k': 'Top-k', 'top-p': 'Top-p' }[f]))}`);
    }
    test.events.push(['standalone', board, r.info.expect_hex]);
    download(r.bytes, `${current.replace(/\.atome$/, '')}-${board}.${format}`);
  }));
}
for (const b of BOARDS) {
  $(`download-fw-${b.id}`).addEventListener('click', () => guarded(async () => {
    const t = await template(b.id);
    let r;
    try { r = await call('firmware', { key: current, template: t, board: b.id }); } catch (e) { throw new Error(`${b.name}: ${e.message}`); }
    download(r.image, fwName(current, b.id));
  }));
}

// ------------------------------------------------------------------ training
const trainState = { active: false, state: 'idle', run: null, corpus: null, corpusName: BUILTIN.name, builtin: true,
  chart: null, started: 0 };

// state: idle | starting | running | paused | done | error; data-state shows
// the contract's five (a run being set up still reads idle)
function setTrainStatus(state, extra = {}) {
  const st = $('train-status');
  st.dataset.state = state === 'starting' ? 'idle' : state;
  if (extra.step !== undefined) st.dataset.step = String(extra.step);
  if (extra.valBpb !== undefined) st.dataset.valBpb = String(extra.valBpb);
  trainState.state = state;
  trainState.active = state === 'running' || state === 'paused' || state === 'starting';
  $('train-pause').disabled = state !== 'running';
  $('train-resume').disabled = state !== 'paused';
  $('train-stop').disabled = !(state === 'running' || state === 'paused');
  for (const id of ['train-config', 'train-quant', 'steps', 'batch', 'seq', 'lr', 'train-seed', 'corpus-file', 'warmup',
    'cosine', 'lr-min', 'clip', 'wd', 'fp-fraction', 'lr2', 'eval-every', 'sample-every']) $(id).disabled = trainState.active;
  refreshEnabled();
}

const NUM = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
function num(id, what, lo = -Infinity, hi = Infinity, loOpen = false) {
  const s = $(id).value.trim();
  if (!NUM.test(s)) throw fieldError(id, `${what} must be a number (got '${s}')`);
  const x = Number(s);
  if (x < lo || x > hi || (loOpen && x === lo))
    throw fieldError(id, `${what} must be ${loOpen ? `above ${lo}` : `at least ${lo}`}${hi < Infinity ? ` and at most ${hi}` : ''} (got '${s}')`);
  return x;
}
const TEXT_FIELDS = ['steps', 'batch', 'seq', 'lr', 'train-seed', 'warmup', 'lr-min', 'clip', 'wd', 'fp-fraction', 'lr2',
  'eval-every', 'sample-every'];
// "auto": about six validations / samples a run, on a multiple of 10 steps
const autoEvery = (steps) => Math.max(10, Math.round(steps / 6 / 10) * 10);
function readSettings() {
  const int = (id, lo, hi, what) => intField(id, lo, hi, what);
  const s = {
    config: $('train-config').value, quant: $('train-quant').value,
    steps: int('steps', 1, 1e8, 'Steps'), batch: int('batch', 1, 4096, 'Batch'), seq: int('seq', 2, 65536, 'Seq'),
    lr: num('lr', 'Learning rate', 0, 10, true), seed: int('train-seed', 0, 4294967295, 'Training seed'),
    warmup: int('warmup', 0, 1e8, 'Warmup steps'), cosine: $('cosine').value === '1', lrMin: num('lr-min', 'Cosine floor', 0, 10),
    clip: num('clip', 'Clip grad norm', 0), wd: num('wd', 'Weight decay', 0, 10), fpFraction: num('fp-fraction', 'fp32 fraction', 0, 1),
    lr2: $('lr2').value.trim() === '' ? null : num('lr2', 'Stage-2 lr', 0, 10, true),
  };
  s.evalEvery = $('eval-every').value.trim() === '' ? autoEvery(s.steps) : int('eval-every', 0, 1e8, 'Validate every');
  s.sampleEvery = $('sample-every').value.trim() === '' ? autoEvery(s.steps) : int('sample-every', 0, 1e8, 'Sample every');
  // the fields as typed ("3e-4" stays "3e-4" when the form shows the run again)
  s.text = Object.fromEntries(TEXT_FIELDS.map((id) => [id, $(id).value.trim()]));
  if (!['atome-60k', 'vanilla-60k', 'gssm-60k'].includes(s.config)) throw new Error(`unknown model '${s.config}'`);
  return s;
}

// Checks a corpus for the run's batch and seq; returns a reason or null.
export function corpusProblem(bytes, name, batch, seq) {
  if (bytes.length === 0) return `${name}: the file is empty`;
  if (bytes.length > CORPUS_LIMIT)
    return `${name}: ${fmt(bytes.length)} bytes is more than the ${fmt(CORPUS_LIMIT)} bytes (16 MiB) the page trains on`;
  let nul = 0;
  for (let i = 0; i < bytes.length; i++) if (bytes[i] === 0) nul++;
  if (nul > 0 && nul * 1000 >= bytes.length)
    return `${name}: ${(100 * nul / bytes.length).toFixed(1)}% of its bytes are NUL: it looks like a binary file, not text`;
  const chunks = Math.floor(bytes.length / seq), train = Math.floor(0.9 * chunks), evalc = chunks - train;
  if (train < batch || evalc < 1) {
    const need = Math.ceil(Math.max(batch / 0.9 + 1, batch + 1)) * seq;
    return `${name}: ${fmt(bytes.length)} bytes is shorter than one batch: ${batch} × ${seq}-byte chunks to train and ` +
      `one to validate need about ${fmt(need)} bytes`;
  }
  return null;
}

async function pickCorpus(file) {
  hideError();
  if (!file || trainState.active) return;
  if (file.size > CORPUS_LIMIT) {
    showError(`${file.name}: ${fmt(file.size)} bytes is more than the ${fmt(CORPUS_LIMIT)} bytes (16 MiB) the page trains on`);
    return;
  }
  const bytes = new Uint8Array(await file.arrayBuffer());
  let s;
  try { s = readSettings(); } catch { s = { batch: 16, seq: 64 }; }
  const why = corpusProblem(bytes, file.name, s.batch, s.seq);
  if (why) { showError(why); return; }
  Object.assign(trainState, { corpus: bytes, corpusName: file.name, builtin: false });
  $('corpus-name').textContent = `${file.name} — ${fmt(bytes.length)} bytes (your file)`;
  $('corpus-builtin').hidden = false;
}
$('corpus-file').addEventListener('change', (e) => { pickCorpus(e.target.files[0]); e.target.value = ''; });
$('corpus-builtin').addEventListener('click', () => {
  Object.assign(trainState, { corpus: null, corpusName: BUILTIN.name, builtin: true });
  $('corpus-name').textContent = BUILTIN.label;
  $('corpus-builtin').hidden = true;
});
$('corpus-limit').textContent = `A text file of up to ${fmt(CORPUS_LIMIT)} bytes (16 MiB). ` +
  'Plain text trains best; bytes are the vocabulary, so any language or encoding works.';

async function corpusBytes() {
  if (trainState.builtin) {
    if (!trainState.builtinBytes) trainState.builtinBytes = await fetchBytes(BUILTIN.url);
    return trainState.builtinBytes;
  }
  return trainState.corpus;
}

// Training samples start from the start of the run's corpus (its first line,
// at most 16 bytes, cut on a UTF-8 boundary); the built-in one from
// "Once upon a time".
function samplePromptOf(bytes, builtin) {
  if (builtin) return 'Once upon a time';
  let i = 0;
  while (i < bytes.length && (bytes[i] === 10 || bytes[i] === 13 || bytes[i] === 32 || bytes[i] === 9)) i++;
  let e = Math.min(bytes.length, i + 16);
  const nl = bytes.subarray(i, e).indexOf(10);
  if (nl > 0) e = i + nl;
  while (e > i && e < bytes.length && (bytes[e] & 0xc0) === 0x80) e--;     // not inside a character
  return new TextDecoder().decode(bytes.subarray(i, e)) || 'Once upon a time';
}

function newRunId() { return `run-${Date.now().toString(36)}-${Math.floor(Math.random() * 1e6).toString(36)}`; }

async function startTraining() {
  hideError();
  if (trainState.active) return;
  let s;
  try { s = readSettings(); } catch (e) { showError(e.message); markField(e); return; }
  setTrainStatus('starting');      // at once: a second click finds the run taken
  let corpus;
  try { corpus = await corpusBytes(); } catch (e) {
    setTrainStatus('idle');
    showError(`cannot load the built-in corpus: ${e.message}`);
    return;
  }
  const why = corpusProblem(corpus, trainState.corpusName, s.batch, s.seq);
  if (why) { setTrainStatus('idle'); showError(why); return; }
  trainState.focusPause = document.activeElement === $('train-start') || document.activeElement === document.body;
  const run = { id: newRunId(), created: Date.now(), updated: Date.now(), settings: s, corpusName: trainState.corpusName,
    corpusBytes: corpus.length, corpusBuiltin: trainState.builtin, step: 0, steps: s.steps, state: 'running',
    history: null, ckpt: null, valBpb: null, samplePrompt: samplePromptOf(corpus, trainState.builtin) };
  if (!(await holdRun(run.id))) { setTrainStatus('idle'); showError('training: another tab holds this run'); return; }
  launch(run, corpus, null);
}

// The form shows the settings of the run in progress (a continued run's own).
function settingsToForm(s) {
  $('train-config').value = s.config;
  $('train-quant').value = s.quant;
  const put = { steps: s.steps, batch: s.batch, seq: s.seq, lr: s.lr, 'train-seed': s.seed, warmup: s.warmup,
    'lr-min': s.lrMin, clip: s.clip, wd: s.wd, 'fp-fraction': s.fpFraction, lr2: s.lr2 ?? '',
    'eval-every': s.evalEvery, 'sample-every': s.sampleEvery };
  for (const [id, v] of Object.entries(put)) $(id).value = s.text?.[id] ?? String(v);
  $('cosine').value = s.cosine ? '1' : '0';
}

// The corpus label (and the corpus a new run would take) follow the run shown.
function showRunCorpus(run, corpus = null) {
  if (run.corpusBuiltin) {
    Object.assign(trainState, { corpus: null, corpusName: BUILTIN.name, builtin: true });
    $('corpus-name').textContent = BUILTIN.label;
    $('corpus-builtin').hidden = true;
  } else {
    if (!corpus) return;           // its bytes are in the saved run: they are loaded when it is continued
    Object.assign(trainState, { corpus, corpusName: run.corpusName, builtin: false });
    $('corpus-name').textContent = `${run.corpusName} — ${fmt(run.corpusBytes)} bytes (your file)`;
    $('corpus-builtin').hidden = false;
  }
}

function launch(run, corpus, resume) {
  $('resume-banner').hidden = true;
  settingsToForm(run.settings);
  showRunCorpus(run, corpus);
  $('train-saved').textContent = '';
  $('train-progress').max = run.steps;
  $('train-progress').value = run.step || 0;
  trainState.stopping = false;
  trainState.run = run;
  trainState.corpusForSave = run.corpusBuiltin ? null : corpus;
  trainState.savedCorpus = false;
  trainState.started = performance.now();
  test.runId = run.id;
  resetChart(resume?.history);
  $('samples').replaceChildren();
  for (const [st, text] of resume?.history?.samples ?? []) addSample(st, text);
  setTrainStatus('starting', { step: resume ? run.step : 0, valBpb: '' });
  $('train-text').textContent = resume ? `Continuing from step ${fmt(run.step)}…` : 'Starting…';
  const failAt = Number(params.get('fail-at')) || 0;     // test hook: the first run of the page fails at that step
  if (failAt) params.delete('fail-at');
  trainer.postMessage({ type: 'start', run: { id: run.id, settings: run.settings, corpus, corpusName: run.corpusName,
    samplePrompt: run.samplePrompt ?? null, resume, saveEveryMs: Number(params.get('save-ms')) || 3000, failAt } });
}

$('train-start').addEventListener('click', startTraining);
$('train-pause').addEventListener('click', () => trainer.postMessage({ type: 'pause' }));
$('train-resume').addEventListener('click', () => trainer.postMessage({ type: 'resume' }));
$('train-stop').addEventListener('click', () => {
  trainer.postMessage({ type: 'stop' });
  trainState.stopping = true;            // the progress line keeps saying so until the run is done
  $('train-text').textContent += ' — stopping (final validation pass)…';
});

// saves are serialised: a slow one is never overtaken by an older one
let saveChain = Promise.resolve();
function saveRun(patch, why) {
  const run = trainState.run;
  if (!run) return Promise.resolve();
  Object.assign(run, patch, { updated: Date.now() });
  const rec = { ...run };
  const corpus = !trainState.savedCorpus ? trainState.corpusForSave : null;
  test.saving = true;
  saveChain = saveChain.then(() => store.saveRun(rec, corpus)).then(() => {
    if (corpus) trainState.savedCorpus = true;
    test.saves++;
    test.savedStep = rec.step;
    test.saving = false;
    $('train-saved').textContent = `Saved at step ${fmt(rec.step)}${why ? ` (${why})` : ''}.`;
    listSavedRuns();
    announce();
  }, (e) => {
    test.saving = false;
    showError(`${e.message}. Training goes on; the last saved state is kept.`);
  });
  return saveChain;
}
test.saveNow = () => saveRun({}, 'now');

trainer.onmessage = (ev) => {
  const m = ev.data;
  test.events.push(['train', m.type, m.step]);
  switch (m.type) {
  case 'ready':
    ready.trainer = true;
    if (!m.simd) $('module-status').textContent += ' Training uses the scalar module (no wasm SIMD here): slower.';
    refreshEnabled();
    break;
  case 'started':
    setTrainStatus('running', { step: m.info.step });
    if (trainState.focusPause) { trainState.focusPause = false; $('train-pause').focus(); }   // Start is disabled now: keep the keyboard's place
    trainState.info = m.info;
    saveRun({ state: 'running' });
    break;
  case 'progress': {
    const rem = (m.steps - m.step) * m.stepMs / 1000;
    $('train-progress').max = m.steps;
    $('train-progress').value = m.step;
    $('train-status').dataset.step = String(m.step);
    const last = chartData.val.at(-1);
    $('train-text').textContent = `Step ${fmt(m.step)} of ${fmt(m.steps)} · ${fmt(m.bytesPerSec)} bytes/s · ` +
      `ETA ${rem < 90 ? `${Math.ceil(rem)} s` : `${Math.ceil(rem / 60)} min`} · train ${(m.loss / Math.LN2).toFixed(3)} bpb` +
      (last ? ` · validation ${last[1].toFixed(3)} bpb (step ${fmt(last[0])})` : '') + (m.state === 'paused' ? ' · paused' : '') +
      (trainState.stopping ? ' — stopping (final validation pass)…' : '');
    for (const p of m.train) addTrainPoint(p);
    redrawChart();
    break;
  }
  case 'eval':
    test.events.push(['val', m.step, m.bpb]);
    addValPoint([m.step, m.bpb]);
    $('train-status').dataset.valBpb = m.final ? $('train-status').dataset.valBpb : String(m.bpb);
    redrawChart();
    break;
  case 'sample':
    addSample(m.step, m.text);
    break;
  case 'checkpoint':
    trainState.history = m.history;
    saveRun({ step: m.step, ckpt: m.ckpt, history: m.history, state: m.reason === 'pause' ? 'paused' : 'running' }, m.reason);
    break;
  case 'state':
    setTrainStatus(m.state, { step: m.step });
    if (m.state === 'paused') $('train-text').textContent = `Paused at step ${fmt(m.step)}.`;
    break;
  case 'done': {
    const r = trainState.run;
    trainState.history = m.history;
    const label = trainedLabel(r, m.step);
    saveRun({ step: m.step, ckpt: m.ckpt, history: m.history, state: 'done', valBpb: m.valBpb, atome01: m.atome01,
      atome02: m.atome02, stopped: m.stopped }, 'finished');
    $('train-progress').value = m.step;
    $('train-text').textContent = `Done: ${fmt(m.step)} steps in ${m.seconds.toFixed(1)} s; validation ${m.valBpb.toFixed(4)} bpb` +
      (m.stopped ? ' (stopped early)' : '') + (m.atome02 ? '. The model is now in Generate and ready to download.' :
      ' (only atome-family models pack into .atome for the engine and the boards).');
    setTrainStatus('done', { step: m.step, valBpb: m.valBpb });
    trainState.stopping = false;
    releaseRun();
    if (document.activeElement === document.body || document.activeElement?.disabled) $('train-start').focus();
    if (m.atome02) {
      const v = addModelOption(`trained-${r.settings.config}-${r.id.slice(4, 12)}.atome`,
        { label, kind: 'trained', bytes: m.atome02, runId: r.id }, true);
      openModel(v);
    }
    break;
  }
  case 'refused':
    showError(`training: ${m.message}`);
    break;
  case 'error':
    showError(`training: ${m.message}`);
    if (m.state === 'idle') {   // no run left in the worker: this one failed and is not resumable
      runFailed(m.message);
      setTrainStatus('error');
      $('train-text').textContent = `Stopped by an error: ${m.message}`;
      $('train-progress').value = 0;
      $('train-saved').textContent = '';
      trainState.stopping = false;
      if (document.activeElement === document.body || document.activeElement?.disabled) $('train-start').focus();
    }
    break;
  default:
  }
};
trainer.onerror = (e) => { e.preventDefault(); showError(`training worker failed: ${e.message}`); runFailed(e.message); setTrainStatus('error'); };

// A run that failed is kept (its checkpoint can still be downloaded) marked
// failed, never offered to continue; one that failed before its first step
// is removed. The saves queued before stay in order.
function runFailed(message) {
  const r = trainState.run;
  if (!r) return;
  trainState.run = null;
  releaseRun();
  const step = Number($('train-status').dataset.step) || 0;
  saveChain = saveChain.then(() => (step === 0 && !r.step ? store.deleteRun(r.id)
    : store.saveRun({ ...r, state: 'failed', error: String(message).split('\n')[0], updated: Date.now() }, null)))
    .catch(() => {}).then(() => { listSavedRuns(); announce(); });
}

// ------------------------------------------------------------------ one run, one tab
// A run training in a tab holds the Web Lock atome-run:<id> until it ends or
// the tab closes; other tabs of the browser show it as running there (no
// Continue, no Delete) and offer it again when the lock is released. A
// BroadcastChannel tells the other tabs to refresh their list.
const LOCKS = typeof navigator !== 'undefined' ? navigator.locks : null;
const lockName = (id) => `atome-run:${id}`;
const channel = typeof BroadcastChannel !== 'undefined' ? new BroadcastChannel('atome-runs') : null;
function announce() { channel?.postMessage('changed'); }
if (channel) channel.onmessage = () => { listSavedRuns().then(offerInterrupted); };
function holdRun(id) {
  if (!LOCKS) return Promise.resolve(true);
  return new Promise((resolve) => {
    LOCKS.request(lockName(id), { ifAvailable: true }, (lock) => {
      if (!lock) { resolve(false); return null; }
      resolve(true);
      announce();
      return new Promise((release) => { trainState.releaseLock = release; });
    });
  });
}
function releaseRun() {
  if (!trainState.releaseLock) return;
  trainState.releaseLock();
  trainState.releaseLock = null;
  setTimeout(announce, 0);
}
// ids of the runs a training tab other than this one holds
async function runsHeldElsewhere() {
  if (!LOCKS) return new Set();
  const mine = trainState.releaseLock && trainState.run ? lockName(trainState.run.id) : null;
  const q = await LOCKS.query();
  return new Set(q.held.map((l) => l.name).filter((n) => n.startsWith('atome-run:') && n !== mine).map((n) => n.slice(10)));
}
const watching = new Set();
function watchRun(id) {            // when the other tab lets the run go, offer it here
  if (!LOCKS || watching.has(id)) return;
  watching.add(id);
  LOCKS.request(lockName(id), () => { watching.delete(id); }).then(() => setTimeout(() => listSavedRuns().then(offerInterrupted), 0));
}

// ------------------------------------------------------------------ chart and samples
let chartData = { train: [], val: [] };
function resetChart(history) {
  chartData = { train: [...(history?.train ?? [])], val: [...(history?.val ?? [])] };
  trainState.history = history ?? null;
  if (!trainState.chart) {
    const el = $('chart');
    el.hidden = false;
    trainState.chart = new uPlot({
      width: Math.max(280, el.clientWidth), height: 260, legend: { live: false },
      scales: { x: { time: false, range: (u, lo, hi) => [0, Math.max(hi, trainState.run?.steps ?? hi, 1)] } },
      axes: [{ label: 'step' }, { label: 'bits per byte', size: 60 }],
      series: [{ label: 'step' },
        { label: 'train (mean of 10 steps)', stroke: '#3b6fd8', width: 1.5, points: { show: false } },
        { label: 'validation (all held-out chunks)', stroke: '#d9480f', width: 1.5, dash: [5, 4], points: { show: true, size: 7 },
          spanGaps: true }],
    }, [[], [], []], el);
    new ResizeObserver(() => trainState.chart.setSize({ width: Math.max(280, el.clientWidth), height: 260 })).observe(el);
  }
  redrawChart();
}
function addTrainPoint(p) { const t = chartData.train; if (!t.length || p[0] > t.at(-1)[0]) t.push(p); }
function addValPoint(p) { chartData.val = chartData.val.filter(([s]) => s !== p[0]); chartData.val.push(p); chartData.val.sort((a, b) => a[0] - b[0]); }
let chartRaf = 0;
function redrawChart() {
  if (chartRaf) return;
  chartRaf = requestAnimationFrame(() => {
    chartRaf = 0;
    const xs = [...new Set([...chartData.train.map((p) => p[0]), ...chartData.val.map((p) => p[0])])].sort((a, b) => a - b);
    const tm = new Map(chartData.train), vm = new Map(chartData.val);
    trainState.chart.setData([xs, xs.map((x) => tm.get(x) ?? null), xs.map((x) => vm.get(x) ?? null)]);
  });
}
function addSample(step, text) {
  const d = document.createElement('div');
  d.className = 'sample';
  const b = document.createElement('strong');
  b.textContent = `step ${fmt(step)}: `;
  const t = document.createElement('span');
  t.textContent = text;
  d.append(b, t);
  $('samples').prepend(d);
  while ($('samples').children.length > 8) $('samples').lastChild.remove();
}

function trainedLabel(r, step) {
  const t = new Date(r.created).toLocaleString([], { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
  return `trained ${r.settings.config} ${r.settings.quant}, ${fmt(step)} steps (${t})`;
}

// ------------------------------------------------------------------ saved runs
async function listSavedRuns() {
  let runs;
  try { runs = await store.listRuns(); } catch (e) {
    $('runs').replaceChildren(li(`Saved runs are not available: ${e.message}`));
    $('runs').dataset.loaded = '1';
    return [];
  }
  const elsewhere = await runsHeldElsewhere();
  const items = runs.map((r) => {
    const item = document.createElement('li');
    const s = r.settings;
    const txt = document.createElement('span');
    const when = new Date(r.updated).toLocaleString();
    const isLive0 = trainState.run?.id === r.id && trainState.active;
    const there = elsewhere.has(r.id);
    if (there) watchRun(r.id);
    const stateText = there ? 'training in another tab' : r.state === 'done' ? (r.stopped ? 'stopped early' : 'finished') :
      r.state === 'failed' ? `failed: ${r.error ?? 'an error'}` :
      !r.hasCkpt && !isLive0 ? 'interrupted before its first save' : r.state;
    txt.textContent = `${s.config} ${s.quant}, ${r.corpusName}: step ${fmt(r.step)} of ${fmt(r.steps)}, ${stateText}` +
      (r.valBpb ? `, validation ${r.valBpb.toFixed(4)} bpb` : '') + ` — ${when}`;
    item.append(txt);
    const isLive = (trainState.run?.id === r.id && trainState.active) || there;
    if (there) item.dataset.elsewhere = '1';
    if (r.state !== 'done' && r.state !== 'failed' && r.hasCkpt && !isLive) item.append(button('Continue', () => continueRun(r.id), `continue-${r.id}`));
    if (r.state === 'done' && r.hasModel) item.append(button('Open in Generate', () => openRunModel(r.id), `open-${r.id}`));
    if (r.hasCkpt) item.append(button('Checkpoint', () => downloadCkpt(r.id), `ckpt-${r.id}`, 'secondary'));
    if (!isLive) {
      // two clicks: the first asks, the second deletes (the run's model goes with it)
      const del = button('Delete', () => {
        if (del.dataset.armed !== '1') {
          del.dataset.armed = '1';
          del.textContent = 'Delete? Click again';
          setTimeout(() => { del.dataset.armed = ''; del.textContent = 'Delete'; }, 4000);
          return Promise.resolve();
        }
        return deleteSavedRun(r.id);
      }, `delete-${r.id}`, 'secondary');
      item.append(del);
    }
    item.dataset.runId = r.id;
    return item;
  });
  $('runs').replaceChildren(...(items.length ? items : [li('No saved runs yet.')]));
  $('runs').dataset.loaded = '1';
  return runs;
}
function li(text) { const x = document.createElement('li'); x.textContent = text; return x; }
function button(text, fn, id, cls = '') {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = text;
  b.id = id;
  if (cls) b.className = cls;
  b.addEventListener('click', () => guarded(fn));
  return b;
}

async function continueRun(id) {
  if (trainState.active) throw new Error('a run is in progress: pause or stop it first');
  setTrainStatus('starting');      // at once: a second click finds the run taken
  trainState.focusPause = true;
  let r, corpus;
  if (!(await holdRun(id))) {
    setTrainStatus('idle');
    await listSavedRuns();
    await offerInterrupted();
    throw new Error('that run is training in another tab of this browser');
  }
  try {
    r = await store.getRun(id);
    if (!r || !r.ckpt) throw new Error('that run has no saved checkpoint');
    corpus = r.corpus;
    if (r.corpusBuiltin) corpus = trainState.builtinBytes ?? (trainState.builtinBytes = await fetchBytes(BUILTIN.url));
    if (!corpus) throw new Error('the corpus of that run was not saved; it cannot be continued');
    if (r.state === 'failed') throw new Error('that run failed; it cannot be continued');
  } catch (e) { releaseRun(); setTrainStatus('idle'); throw e; }
  $('resume-banner').hidden = true;
  const { corpus: _c, ...run } = r;
  run.state = 'running';
  trainState.savedCorpus = true;
  launch(run, corpus, { ckpt: r.ckpt, history: r.history });
  trainState.savedCorpus = true;
}

async function openRunModel(id) {
  const r = await store.getRun(id);
  if (!r?.atome02) throw new Error('that run has no packed model');
  const v = addModelOption(`trained-${r.settings.config}-${r.id.slice(4, 12)}.atome`,
    { label: trainedLabel(r, r.step), kind: 'trained', bytes: r.atome02, runId: r.id }, true);
  await openModel(v);
  location.hash = '#sec-generate';
}

// The run's float checkpoint (ATOMECKP): `atome train --resume` continues
// it, `atome export` packs it, `atome eval` scores it.
async function downloadCkpt(id) {
  const r = await store.getRun(id);
  if (!r?.ckpt) throw new Error('that run has no saved checkpoint');
  download(r.ckpt, `${r.settings.config}-${r.id.slice(4, 12)}-step${r.step}.ckpt`);
}

async function deleteSavedRun(id) {
  if ((await runsHeldElsewhere()).has(id)) { await listSavedRuns(); throw new Error('that run is training in another tab of this browser'); }
  await store.deleteRun(id);
  announce();
  await listSavedRuns();
  $('runs-heading').focus();
}

// ------------------------------------------------------------------ start-up
async function boot() {
  setTrainStatus('idle', { step: 0, valBpb: '' });
  const scalar = params.get('scalar') === '1';
  trainer.postMessage({ type: 'init', scalar });
  let mod;
  try { mod = await call('init', { forceScalar: scalar }); } catch (e) {
    $('module-status').textContent = 'The WebAssembly module did not load.';
    showError(`cannot load the WebAssembly module: ${e.message} (run tools/setup, then tools/serve)`);
    return;
  }
  ready.module = true;
  Object.assign(LIMITS, mod.limits);
  $('module-status').textContent = mod.simd ? 'Ready: WebAssembly SIMD module.' :
    'Ready: this browser has no WebAssembly SIMD, so the page uses the scalar module (atome-scalar.wasm): the same bytes, slower.';
  $('module-status').dataset.module = mod.module;
  let list = [];
  try { list = (await (await fetch('/api/models')).json()).models; } catch (e) { showError(`cannot list the models: ${e.message}`); }
  for (const m of list) addModelOption(m.name, { label: `${m.name} (${fmt(m.bytes)} bytes)`, kind: 'shipped', url: `/models/${encodeURIComponent(m.name)}` });
  const want = params.get('model-select') ?? params.get('model');
  const first = want && models.has(want) ? want : list[0]?.name;
  if (first) { $('model-select').value = first; await openModel(first); }
  refreshEnabled();
  const runs = await listSavedRuns();
  for (const r of runs.filter((x) => x.state === 'done' && x.hasModel).reverse())
    addModelOption(`trained-${r.settings.config}-${r.id.slice(4, 12)}.atome`, { label: trainedLabel(r, r.step), kind: 'trained', runId: r.id });
  await offerInterrupted(runs);
}

// The banner offers the newest interrupted run that no tab is training; the
// form then shows that run's settings and corpus (once per run: edits made
// afterwards stay).
const offered = new Set();
let dismissed = false;
async function offerInterrupted(runs = null) {
  if (trainState.active) return;
  if (!runs) { try { runs = await store.listRuns(); } catch { return; } }
  const elsewhere = await runsHeldElsewhere();
  for (const r of runs) if (elsewhere.has(r.id)) watchRun(r.id);
  const live = runs.find((r) => (r.state === 'running' || r.state === 'paused') && r.hasCkpt && !elsewhere.has(r.id));
  if (!live || dismissed) {
    $('resume-banner').hidden = true;
    if (!live && $('train-text').dataset.offer) { $('train-text').textContent = 'Not started.'; delete $('train-text').dataset.offer; }
    return;
  }
  $('resume-text').textContent = `A training run (${live.settings.config}, step ${fmt(live.step)} of ${fmt(live.steps)}) ` +
    'was interrupted. Continue it from its last save?';
  $('resume-banner').hidden = false;
  $('train-text').textContent = `An interrupted run (step ${fmt(live.step)}) can be continued: see the banner at the top or Saved runs.`;
  $('train-text').dataset.offer = live.id;
  if (!offered.has(live.id)) {
    offered.add(live.id);
    settingsToForm(live.settings);
    showRunCorpus(live);
  }
  $('resume-continue').onclick = () => guarded(() => continueRun(live.id));
  $('resume-later').onclick = () => { dismissed = true; $('resume-banner').hidden = true; };
}
boot();
