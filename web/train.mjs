// web/train.mjs — the "Train in the tab" section: the run's settings and
// corpus checked, the run started (or continued) in the training worker,
// its events shown (status, progress, curves, samples), pause / resume /
// stop, and every checkpoint saved to IndexedDB in order.
import * as store from './store.mjs';
import { $, enc, fmt, stamp, showError, hideError, markField, fieldError, intField, fetchBytes, dropZone } from './ui.mjs';
import { checkOption, findOption } from '../wasm/atome.mjs';
import { testEvent, testExpose, testRunId, testSaving, testSaved, testSaveFailed } from './hook.mjs';
import { initChart, addSample } from './chart.mjs';
import { initPresets, PAGE_THREADS, presetOfFields, scheduleTable } from './presets.mjs';
import { BUDGET, autoEvery, scheduleFields, stepsForBudget, measureMs, measureMaxMs, etaSmoother, runThreads, pageShare } from './minute.mjs';

// The largest corpus the page accepts: 16 MiB. The training module's memory
// grows with what a run needs (up to 1 GiB), and a 60K model trains on a
// corpus this large at the default batch and seq (tests/node/web-demanding).
export const CORPUS_LIMIT = 16 * 1024 * 1024;
// The built-in corpus: the first bytes of TinyStories' training text, as
// many as the preset takes (quick 2,000,000, reference 500,000: the same
// bytes as the page's 500 KB corpus before presets), all from one file.
export const BUILTIN = { url: new URL('./data/tinystories-2m.txt', import.meta.url).href, bytes: 2000000 };
const builtinName = (n) => (n % 1e6 === 0 ? `tinystories-${n / 1e6}m.txt` : `tinystories-${Math.round(n / 1e3)}k.txt`);
const builtinLabel = (n) => `TinyStories, first ${fmt(n)} bytes (built in)`;

const FORM_FIELDS = ['train-preset', 'train-budget', 'train-threads', 'train-config', 'train-quant', 'steps', 'batch', 'seq', 'lr', 'train-seed', 'corpus-file', 'warmup',
  'cosine', 'lr-min', 'clip', 'wd', 'fp-fraction', 'lr2', 'eval-every', 'sample-every'];

// The section: state (idle | starting | running | paused | done | error),
// active (a run is being set up, runs or is paused), the run shown and its
// trainer info and history, the corpus a new run takes (builtin, or the
// bytes of your file), the corpus bytes still to save with the run, the
// chart and the chain of saves.
export function initTrain(page) {
  const ts = { active: false, state: 'idle', run: null, info: null, history: null, corpus: null,
    corpusName: builtinName(BUILTIN.bytes), builtinN: BUILTIN.bytes, builtin: true, builtinBytes: null, corpusForSave: null, savedCorpus: false, started: 0, stopping: false,
    focusPause: false, saves: Promise.resolve() };
  ts.chart = initChart(() => ts.run?.steps);
  ts.presets = initPresets(page, (n) => useBuiltin(ts, n, false));
  wireTrain(page, ts);
  testExpose('saveNow', () => saveRun(page, ts, {}, 'now'));
  return {
    state: ts,
    get active() { return ts.active; },
    get run() { return ts.run; },
    init: (scalar) => page.trainer.call('init', { scalar, threads: PAGE_THREADS })
      .then((m) => trainerReady(page, ts, m), (e) => trainError(page, ts, e)),
    status: (state, extra) => setTrainStatus(page, ts, state, extra),
    // a saved run is being continued: the panel is taken, the keyboard goes to Pause
    claim: () => { setTrainStatus(page, ts, 'starting'); ts.focusPause = true; },
    continueRun: (run, corpus, resume) => { launch(page, ts, run, corpus, resume); ts.savedCorpus = true; },
    builtinCorpus: (n) => builtinCorpus(ts, n),
    showRun: (run) => { settingsToForm(ts, run.settings); showRunCorpus(ts, run); },
    crashed: (message) => { showError(`training worker failed: ${message}`); runFailed(page, ts, message); setTrainStatus(page, ts, 'error'); },
    refresh: () => { $('train-start').disabled = !page.ready.trainer || ts.active; },
  };
}

function wireTrain(page, ts) {
  // leaving while a run has steps not yet in IndexedDB: the browser asks first
  window.addEventListener('beforeunload', (e) => { if (unsavedSteps(ts)) { e.preventDefault(); e.returnValue = ''; } });
  dropZone('sec-train', (f) => pickCorpus(ts, f));
  $('corpus-file').addEventListener('change', (e) => { pickCorpus(ts, e.target.files[0]); e.target.value = ''; });
  $('corpus-builtin').addEventListener('click', () => useBuiltin(ts, ts.builtinN, true));
  $('corpus-limit').textContent = `A text file of up to ${fmt(CORPUS_LIMIT)} bytes (16 MiB). ` +
    'Plain text trains best; bytes are the vocabulary, so any language works (a UTF-16 or UTF-32 file is offered for conversion to UTF-8).';
  const ask = (type) => page.trainer.call(type).catch((e) => trainError(page, ts, e));
  $('train-start').addEventListener('click', () => startTraining(page, ts));
  $('train-pause').addEventListener('click', () => ask('pause'));
  $('train-resume').addEventListener('click', () => ask('resume'));
  $('train-stop').addEventListener('click', () => {
    ask('stop');
    ts.stopping = true;            // the progress line keeps saying so until the run is done
    $('train-text').textContent += ' — stopping (final validation pass)…';
  });
}

// A run trains, or stands paused with steps after its last save.
function unsavedSteps(ts) {
  return ts.state === 'running' || ts.state === 'starting' ||
    ts.state === 'paused' && Number($('train-status').dataset.step) > (ts.savedStep ?? -1);
}

// state: idle | starting | running | paused | done | error; data-state shows
// the contract's five (a run being set up still reads idle)
// While a run measures or trains, the generation worker's background work
// (the board cards' known answers) waits; a paused or ended run lets it go on.
function holdBackground(page, on) {
  if (page.genHeld === on) return;
  page.genHeld = on;
  page.gen.call('hold', { on }).catch(() => {});
}

function setTrainStatus(page, ts, state, extra = {}) {
  const st = $('train-status');
  st.dataset.state = state === 'starting' ? 'idle' : state;
  if (extra.step !== undefined) st.dataset.step = String(extra.step);
  if (extra.steps !== undefined) st.dataset.steps = String(extra.steps);
  if (extra.valBpb !== undefined) st.dataset.valBpb = String(extra.valBpb);
  ts.state = state;
  ts.active = state === 'running' || state === 'paused' || state === 'starting';
  holdBackground(page, state === 'running' || state === 'starting');
  const had = document.activeElement;
  $('train-pause').disabled = state !== 'running';
  $('train-resume').disabled = state !== 'paused';
  $('train-stop').disabled = !(state === 'running' || state === 'paused');
  for (const id of FORM_FIELDS) $(id).disabled = ts.active;
  page.refresh();
  // the control used is disabled now: the keyboard goes to the one that undoes or follows it
  if (had?.disabled && had.closest?.('#sec-train')) {
    const next = { 'train-pause': 'train-resume', 'train-resume': 'train-pause', 'train-stop': 'train-start' }[had.id];
    if (next && !$(next).disabled) $(next).focus();
  }
}

// The number fields: [field id, the option of the training table
// (core/train/options.h) whose range and words it takes, its key in the
// run's settings]. The table comes from the training module (the worker's
// init reply), so the page refuses what `atome train` and the JS API refuse,
// with their words after the field's label. Sample every is the page's own
// and takes Validate every's range.
const FIELDS = [['steps', 'steps', 'steps'], ['batch', 'batch', 'batch'], ['seq', 'seq', 'seq'], ['lr', 'lr', 'lr'],
  ['train-seed', 'seed', 'seed'], ['warmup', 'warmup', 'warmup'], ['lr-min', 'lr-min', 'lrMin'], ['clip', 'clip', 'clip'],
  ['wd', 'wd', 'wd'], ['fp-fraction', 'fp-fraction', 'fpFraction'], ['lr2', 'lr2', 'lr2'],
  ['eval-every', 'eval-every', 'evalEvery'], ['sample-every', 'eval-every', 'sampleEvery'], ['train-threads', 'threads', 'threads']];
// Fields that may be left empty: lr2 (= lr), the cadences (auto).
const OPTIONAL = new Set(['lr2', 'eval-every', 'sample-every']);
const TEXT_FIELDS = FIELDS.map(([id]) => id).filter((id) => id !== 'train-threads');
const labelOf = (id) => document.querySelector(`label[for="${id}"]`)?.textContent.trim() ?? id;

// One field's value by its option's row, or a field error in the table's words.
function fieldValue(options, id, name) {
  const opt = findOption(options, name);
  if (!opt) throw new Error(`the training module has no option '${name}'`);
  try { return checkOption(opt, $(id).value.trim(), labelOf(id)); } catch (e) { throw fieldError(id, e.message); }
}

// The run's settings from the form, checked with the option table.
function readSettings(options) {
  if (!options) throw new Error('the training module is not loaded yet');
  const s = { config: $('train-config').value, quant: $('train-quant').value, cosine: $('cosine').value === '1',
    preset: $('train-preset').value };
  for (const [id, name, key] of FIELDS) {
    const t = $(id).value.trim();
    // threads: 'auto' (measure, keep the faster), or a count used as it is
    s[key] = OPTIONAL.has(id) && t === '' ? null : id === 'train-threads' && t.toLowerCase() === 'auto' ? 'auto' : fieldValue(options, id, name);
  }
  if (s.preset === 'minute') s.budget = intField('train-budget', BUDGET.min, BUDGET.max, labelOf('train-budget').replace(/\s*\(s\)$/, ''));
  s.evalEvery ??= autoEvery(s.steps);
  s.sampleEvery ??= autoEvery(s.steps);
  // the fields as typed ("3e-4" stays "3e-4" when the form shows the run again)
  s.text = Object.fromEntries(TEXT_FIELDS.map((id) => [id, $(id).value.trim()]));
  if (!['atome-60k', 'vanilla-60k', 'gssm-60k'].includes(s.config)) throw new Error(`unknown model '${s.config}'`);
  return s;
}

// Checks a corpus for the run's batch and seq; returns a reason or null.
export function corpusProblem(bytes, name, batch, seq, rawOk = false) {
  if (bytes.length === 0) return `${name}: the file is empty`;
  if (bytes.length > CORPUS_LIMIT)
    return `${name}: ${fmt(bytes.length)} bytes is more than the ${fmt(CORPUS_LIMIT)} bytes (16 MiB) the page trains on`;
  let nul = 0;
  for (let i = 0; i < bytes.length; i++) if (bytes[i] === 0) nul++;
  if (!rawOk && nul > 0 && nul * 1000 >= bytes.length)
    return `${name}: ${(100 * nul / bytes.length).toFixed(1)}% of its bytes are NUL: it looks like a binary file, not text`;
  const chunks = Math.floor(bytes.length / seq), train = Math.floor(0.9 * chunks), evalc = chunks - train;
  if (train < batch || evalc < 1) {
    const need = Math.ceil(Math.max(batch / 0.9 + 1, batch + 1)) * seq;
    return `${name}: ${fmt(bytes.length)} bytes is shorter than one batch: ${batch} × ${seq}-byte chunks to train and ` +
      `one to validate need about ${fmt(need)} bytes`;
  }
  return null;
}

async function pickCorpus(ts, file) {
  hideError();
  if (!file || ts.active) return;
  if (file.size > CORPUS_LIMIT) {
    const why = `${file.name}: ${fmt(file.size)} bytes is more than the ${fmt(CORPUS_LIMIT)} bytes (16 MiB) the page trains on`;
    $('corpus-encoding').hidden = true;
    refuseCorpus(ts, file.name, why);
    showError(why);
    return;
  }
  const bytes = new Uint8Array(await file.arrayBuffer());
  const wide = wideEncoding(bytes);
  if (wide) { offerConversion(ts, file.name, bytes, wide); return; }
  takeCorpus(ts, file.name, bytes, '');
}

// Your file as the next run's corpus, if it can be one; else the reason is
// shown and Start refuses to train (it never falls back to the built-in
// corpus unasked). `how`: the label's note (converted, raw bytes).
function takeCorpus(ts, name, bytes, how, rawOk = false) {
  $('corpus-encoding').hidden = true;
  let s;
  try { s = readSettings(ts.options); } catch { s = { batch: 16, seq: 64 }; }
  const why = corpusProblem(bytes, name, s.batch, s.seq, rawOk);
  if (why) { refuseCorpus(ts, name, why); showError(why); return; }
  Object.assign(ts, { corpus: bytes, corpusName: name, builtin: false, refused: null, rawOk });
  $('corpus-name').textContent = `${name} — ${fmt(bytes.length)} bytes (your file${how})`;
  $('corpus-builtin').hidden = false;
}

function refuseCorpus(ts, name, why) {
  Object.assign(ts, { corpus: null, builtin: false, refused: why });
  $('corpus-name').textContent = `${name} — not taken (see the message above); pick another file or the built-in corpus`;
  $('corpus-builtin').hidden = false;
}

// UTF-16 or UTF-32 text, by its byte-order mark or, without one, by where its
// NUL bytes fall (ASCII text in UTF-16LE: every second byte): { name, le,
// width, bom } or null.
export function wideEncoding(b) {
  const at = (i) => b[i] ?? -1;
  if (at(0) === 0xff && at(1) === 0xfe && at(2) === 0 && at(3) === 0) return { name: 'UTF-32LE', le: true, width: 4, bom: 4 };
  if (at(0) === 0 && at(1) === 0 && at(2) === 0xfe && at(3) === 0xff) return { name: 'UTF-32BE', le: false, width: 4, bom: 4 };
  if (at(0) === 0xff && at(1) === 0xfe) return { name: 'UTF-16LE', le: true, width: 2, bom: 2 };
  if (at(0) === 0xfe && at(1) === 0xff) return { name: 'UTF-16BE', le: false, width: 2, bom: 2 };
  const n = Math.min(b.length, 65536) & ~3, z = [0, 0, 0, 0];
  if (n < 8) return null;
  for (let i = 0; i < n; i++) if (b[i] === 0) z[i & 3]++;
  const q = n / 4, most = (c) => c >= 0.9 * q, few = (c) => c <= 0.1 * q;
  if (few(z[0]) && most(z[1]) && most(z[2]) && most(z[3])) return { name: 'UTF-32LE', le: true, width: 4, bom: 0 };
  if (most(z[0]) && most(z[1]) && most(z[2]) && few(z[3])) return { name: 'UTF-32BE', le: false, width: 4, bom: 0 };
  if (z[0] + z[2] <= 0.1 * 2 * q && z[1] + z[3] >= 0.6 * 2 * q) return { name: 'UTF-16LE', le: true, width: 2, bom: 0 };
  if (z[1] + z[3] <= 0.1 * 2 * q && z[0] + z[2] >= 0.6 * 2 * q) return { name: 'UTF-16BE', le: false, width: 2, bom: 0 };
  return null;
}

// The text of a UTF-16 / UTF-32 file as UTF-8 (a bad unit becomes U+FFFD).
export function toUtf8(b, w) {
  if (w.width === 2) return enc.encode(new TextDecoder(w.le ? 'utf-16le' : 'utf-16be').decode(b.subarray(w.bom)));
  const dv = new DataView(b.buffer, b.byteOffset, b.length);
  let t = '';
  for (let i = w.bom; i + 4 <= b.length; i += 4) {
    const c = dv.getUint32(i, w.le);
    t += c <= 0x10ffff && (c < 0xd800 || c > 0xdfff) ? String.fromCodePoint(c) : '\ufffd';
  }
  return enc.encode(t);
}

// A UTF-16 / UTF-32 file: the person chooses UTF-8 (what the models read
// best) or the raw bytes; until then Start says so.
function offerConversion(ts, name, bytes, w) {
  let nul = 0;
  for (const x of bytes) nul += x === 0;
  refuseCorpus(ts, name, `${name} is ${w.name} text: convert it to UTF-8 or use its raw bytes first (the buttons under Corpus)`);
  $('corpus-name').textContent = `${name} — ${fmt(bytes.length)} bytes of ${w.name} text (your file): choose below`;
  $('corpus-encoding-text').textContent = `${name} looks like ${w.name} text (${w.bom ? 'it starts with a byte-order mark' : 'from where its NUL bytes fall'}; ` +
    `${Math.round(100 * nul / bytes.length)} % of its bytes are NUL). The models read bytes: converted to UTF-8, the same text is ` +
    `${w.width === 2 ? 'about half' : 'about a quarter'} as long and trains like any other; as raw bytes the model also learns the NULs.`;
  $('corpus-encoding').hidden = false;
  $('corpus-convert').onclick = () => takeCorpus(ts, name, toUtf8(bytes, w), `, converted from ${w.name} to UTF-8`);
  $('corpus-raw').onclick = () => takeCorpus(ts, name, bytes, `, raw ${w.name} bytes`, true);
}

// The built-in corpus of n bytes for the next run (a preset's size; `pick`:
// also when your own file is chosen now).
function useBuiltin(ts, n, pick) {
  ts.builtinN = Math.min(n, BUILTIN.bytes);
  if (!ts.builtin && !pick) return;
  Object.assign(ts, { corpus: null, corpusName: builtinName(ts.builtinN), builtin: true, refused: null, rawOk: false });
  $('corpus-name').textContent = builtinLabel(ts.builtinN);
  $('corpus-builtin').hidden = true;
  $('corpus-encoding').hidden = true;
}

async function builtinCorpus(ts, n = ts.builtinN) {
  if (!ts.builtinBytes) ts.builtinBytes = await fetchBytes(BUILTIN.url);
  return ts.builtinBytes.subarray(0, Math.min(n, ts.builtinBytes.length));
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

async function startTraining(page, ts) {
  const t0 = performance.now();           // a minute run's budget counts from the click
  hideError();
  if (ts.active) return;
  let s;
  try { s = readSettings(ts.options); } catch (e) { showError(e.message); markField(e); return; }
  if (ts.refused) { showError(`Start: ${ts.refused}`); $('corpus-file').focus(); return; }   // never the built-in corpus unasked
  setTrainStatus(page, ts, 'starting', { steps: '' });      // at once: a second click finds the run taken
  let corpus;
  try { corpus = ts.builtin ? await builtinCorpus(ts) : ts.corpus; } catch (e) {
    setTrainStatus(page, ts, 'idle');
    showError(`cannot load the built-in corpus: ${e.message}`);
    return;
  }
  const why = corpusProblem(corpus, ts.corpusName, s.batch, s.seq, ts.rawOk && !ts.builtin);
  if (why) { setTrainStatus(page, ts, 'idle'); showError(why); return; }
  ts.focusPause = document.activeElement === $('train-start') || document.activeElement === document.body;
  let hint = 0;
  if (s.preset === 'minute') {
    try { ({ s, corpus, hint } = await minuteRun(page, ts, s, corpus, t0)); } catch (e) {
      setTrainStatus(page, ts, 'idle');
      $('train-text').textContent = 'Not started.';
      showError(`training: ${e.message}`);
      return;
    }
  }
  const run = { id: newRunId(), created: Date.now(), updated: Date.now(), settings: s, corpusName: ts.corpusName,
    corpusBytes: corpus.length, corpusBuiltin: ts.builtin, step: 0, steps: s.steps, state: 'running',
    history: null, ckpt: null, valBpb: null, samplePrompt: samplePromptOf(corpus, ts.builtin) };
  if (!(await page.runs.hold(run.id))) { setTrainStatus(page, ts, 'idle'); showError('training: another tab holds this run'); return; }
  launch(page, ts, run, corpus, null, hint);
}

// A minute run: the device measured (a scratch model of the run's shape, in
// the training worker; 1 thread and all of them when Threads is auto), the
// step count that fills what is left of the budget after it, that count's
// schedule (web/minute.mjs) and the built-in corpus size of its row. The
// count and schedule are the run's settings from then on, saved with it: a
// continued run and `atome train` with them repeat it.
async function minuteRun(page, ts, s, corpus, t0) {
  const table = scheduleTable();
  if (!table) throw new Error('the minute preset\'s schedule table did not load');
  const max = ts.presets.max;
  const counts = s.threads === 'auto' ? [1, max] : [Math.min(s.threads, max)];
  $('train-text').textContent = counts.length > 1 ? `Measuring this device: the first steps on 1 thread and on ${counts[1]}…`
    : `Measuring this device: the first steps on ${counts[0]} thread${counts[0] > 1 ? 's' : ''}…`;
  // the scratch model trains on the largest corpus a row takes (its step time does not depend on it)
  const first = scheduleFields(table, 0);
  const m = await page.trainer.call('measure', { settings: { ...s, batch: first.row.batch, seq: first.row.seq }, corpus, counts,
    targetMs: measureMs(s.budget), maxMs: measureMaxMs(s.budget) });
  const left = s.budget - (performance.now() - t0) / 1000;
  // the count whose steps are fastest once the page's own share is counted (web/minute.mjs runThreads)
  const cores = navigator.hardwareConcurrency || 1;
  m.threads = runThreads(m.msPerStep, cores);
  const at = { ...m, msPerStep: m.msPerStep[m.threads], pageShare: pageShare(m.threads, cores) };
  const steps = stepsForBudget(at, left);
  const f = scheduleFields(table, steps);
  const taken = ts.builtin ? await builtinCorpus(ts, f.corpus) : corpus;
  const out = { ...s, steps, batch: f.row.batch, seq: f.row.seq, lr: f.row.lr, warmup: Number(f.fields.warmup), cosine: table.cosine,
    lrMin: f.row.lrMin, clip: f.row.clip, threads: m.threads, evalEvery: autoEvery(steps), sampleEvery: autoEvery(steps),
    measured: { threads: m.threads, cores, msPerStep: m.msPerStep, seconds: Math.round(m.seconds * 100) / 100, budgetLeft: Math.round(left * 100) / 100 } };
  out.text = { ...s.text, ...f.fields, 'eval-every': '', 'sample-every': '' };
  testEvent('minute', { ...m, cores, left, steps });
  if (ts.builtin) { useBuiltin(ts, f.corpus, true); }
  return { s: out, corpus: taken, hint: at.msPerStep };
}

// The form shows the settings of the run in progress (a continued run's own).
function settingsToForm(ts, s) {
  $('train-config').value = s.config;
  $('train-quant').value = s.quant;
  const put = { steps: s.steps, batch: s.batch, seq: s.seq, lr: s.lr, 'train-seed': s.seed, warmup: s.warmup,
    'lr-min': s.lrMin, clip: s.clip, wd: s.wd, 'fp-fraction': s.fpFraction, lr2: s.lr2 ?? '',
    'eval-every': s.evalEvery, 'sample-every': s.sampleEvery };
  for (const [id, v] of Object.entries(put)) $(id).value = s.text?.[id] ?? String(v);
  $('cosine').value = s.cosine ? '1' : '0';
  if (s.preset === 'minute') { $('train-budget').value = String(s.budget); $('train-preset').value = 'minute'; }
  else $('train-preset').value = presetOfFields();
  $('train-budget-field').hidden = $('train-preset').value !== 'minute';
  ts.presets.showRun(s);
}

// The corpus label (and the corpus a new run would take) follow the run shown.
function showRunCorpus(ts, run, corpus = null) {
  if (run.corpusBuiltin) {
    useBuiltin(ts, run.corpusBytes || BUILTIN.bytes, true);
  } else {
    if (!corpus) return;           // its bytes are in the saved run: they are loaded when it is continued
    Object.assign(ts, { corpus, corpusName: run.corpusName, builtin: false });
    $('corpus-name').textContent = `${run.corpusName} — ${fmt(run.corpusBytes)} bytes (your file)`;
    $('corpus-builtin').hidden = false;
  }
}

// A run (new, or continued from resume = { ckpt, history }) into the panel
// and the training worker.
function launch(page, ts, run, corpus, resume, stepMsHint = 0) {
  $('resume-banner').hidden = true;
  settingsToForm(ts, run.settings);
  showRunCorpus(ts, run, corpus);
  $('train-saved').textContent = '';
  $('train-progress').max = run.steps;
  $('train-progress').value = run.step || 0;
  Object.assign(ts, { stopping: false, run, corpusForSave: run.corpusBuiltin ? null : corpus, savedCorpus: false,
    started: performance.now(), history: resume?.history ?? null, savedStep: resume ? run.step : -1, eta: etaSmoother() });
  testRunId(run.id);
  ts.chart.reset(resume?.history);
  $('samples').replaceChildren();
  for (const [st, text] of resume?.history?.samples ?? []) addSample(st, text);
  setTrainStatus(page, ts, 'starting', { step: resume ? run.step : 0, steps: run.steps, valBpb: '' });
  $('train-text').textContent = resume ? `Continuing from step ${fmt(run.step)}…` : 'Starting…';
  const failAt = Number(page.params.get('fail-at')) || 0;     // test hook: the first run of the page fails at that step
  if (failAt) page.params.delete('fail-at');
  // the thread count is this page's, not the run's (a continued run may use another); on auto a new
  // minute run starts on the count its measure chose, and the worker keeps comparing the two
  const asked = $('train-threads').value.trim().toLowerCase();
  const measured = !resume && run.settings.measured ? run.settings.measured.threads : 0;
  const threads = asked === 'auto' ? 'auto' : measured || Math.max(1, Math.floor(Number(asked)) || 1);
  const startThreads = asked === 'auto' ? measured : 0;
  const settings = { ...run.settings, threads };
  const job = page.trainer.request('start', { run: { id: run.id, settings, corpus, corpusName: run.corpusName,
    samplePrompt: run.samplePrompt ?? null, resume, saveEveryMs: Number(page.params.get('save-ms')) || 3000, failAt, stepMsHint,
    startThreads } },
  { onEvent: (event, m) => trainEvent(page, ts, event, m) });
  job.done.then((m) => { testEvent('train', 'done', m.step, m.seconds); runDone(page, ts, m); }, (e) => trainError(page, ts, e));
}

// Saves are serialised: a slow one is never overtaken by an older one.
function saveRun(page, ts, patch, why) {
  const run = ts.run;
  if (!run) return Promise.resolve();
  Object.assign(run, patch, { updated: Date.now() });
  const rec = { ...run };
  const corpus = !ts.savedCorpus ? ts.corpusForSave : null;
  testSaving();
  ts.saves = ts.saves.then(() => store.saveRun(rec, corpus)).then(() => {
    if (corpus) ts.savedCorpus = true;
    testSaved(rec.step);
    if (ts.run === run) ts.savedStep = rec.step;
    // a save that lands after its run failed or another run started says nothing
    if (ts.run === run) $('train-saved').textContent = `Saved at step ${fmt(rec.step)}${why ? ` (${why})` : ''}.`;
    page.runs.list();
    page.runs.announce();
  }, (e) => {
    testSaveFailed();
    showError(`${e.message}. Training goes on; the last saved state is kept.`);
  });
  return ts.saves;
}

function trainerReady(page, ts, m) {
  ts.options = m.options;          // the option table (names, defaults, ranges, words)
  testEvent('train', 'ready', m.step);
  ts.presets.threads(m.threads ?? 1, m.isolated === true, m.note ?? null);
  page.ready.trainer = true;
  if (!m.simd) $('module-status').textContent += ' Training uses the scalar module (no wasm SIMD here): slower.';
  page.refresh();
}

// The events of the run's start request.
function trainEvent(page, ts, event, m) {
  testEvent('train', event, m.step);
  switch (event) {
  case 'started':
    setTrainStatus(page, ts, 'running', { step: m.info.step });
    if (ts.focusPause) { ts.focusPause = false; $('train-pause').focus(); }   // Start is disabled now: keep the keyboard's place
    ts.info = m.info;
    saveRun(page, ts, { state: 'running' });
    break;
  case 'progress': showProgress(ts, m); break;
  case 'eval':
    testEvent('val', m.step, m.bpb);
    ts.chart.addVal([m.step, m.bpb]);
    $('train-status').dataset.valBpb = m.final ? $('train-status').dataset.valBpb : String(m.bpb);
    ts.chart.redraw();
    break;
  case 'sample': addSample(m.step, m.text); break;
  case 'checkpoint':
    ts.history = m.history;
    saveRun(page, ts, { step: m.step, ckpt: m.ckpt, history: m.history, state: m.reason === 'pause' ? 'paused' : 'running' }, m.reason);
    break;
  case 'state':
    setTrainStatus(page, ts, m.state, { step: m.step });
    if (m.state === 'running') ts.eta = etaSmoother();     // resumed: the ETA starts afresh
    if (m.state === 'paused') $('train-text').textContent = `Paused at step ${fmt(m.step)}.`;
    break;
  default:
  }
}

function showProgress(ts, m) {
  // the ETA: smoothed, and never more than a tenth above the one shown before (web/minute.mjs)
  const rem = ts.eta.next(((m.steps - m.step) * m.stepMs + (m.tailMs ?? 0)) / 1000, performance.now());
  $('train-progress').max = m.steps;
  $('train-progress').value = m.step;
  $('train-status').dataset.step = String(m.step);
  $('train-text').dataset.eta = String(rem);
  const last = ts.chart.lastVal();
  const threads = m.threads ? ` · ${m.probing ? 'timing 1 thread against more' : `${m.threads} thread${m.threads > 1 ? 's' : ''}`}` : '';
  $('train-text').textContent = `Step ${fmt(m.step)} of ${fmt(m.steps)} · ${fmt(m.bytesPerSec)} bytes/s${threads} · ` +
    `ETA ${rem < 90 ? `${rem} s` : `${Math.round(rem / 60)} min`} · train ${(m.loss / Math.LN2).toFixed(3)} bpb` +
    (last ? ` · validation ${last[1].toFixed(3)} bpb (step ${fmt(last[0])})` : '') + (m.state === 'paused' ? ' · paused' : '') +
    (ts.stopping ? ' — stopping (final validation pass)…' : '');
  for (const p of m.train) ts.chart.addTrain(p);
  ts.chart.redraw();
}

// The reply of the run's start request: the run is over.
function runDone(page, ts, m) {
  const r = ts.run;
  ts.history = m.history;
  const label = trainedLabel(r, m.step);
  saveRun(page, ts, { step: m.step, ckpt: m.ckpt, history: m.history, state: 'done', valBpb: m.valBpb, atome01: m.atome01,
    atome02: m.atome02, stopped: m.stopped }, 'finished');
  $('train-progress').value = m.step;
  $('train-text').textContent = `Done: ${fmt(m.step)} steps in ${m.seconds.toFixed(1)} s; validation ${m.valBpb.toFixed(4)} bpb` +
    (m.stopped ? ' (stopped early)' : '') + (m.atome02 ? '. The model is now in Generate and ready to download.' :
    ' (only atome-family models pack into .atome for the engine and the boards).');
  setTrainStatus(page, ts, 'done', { step: m.step, valBpb: m.valBpb });
  ts.stopping = false;
  page.runs.release();
  if (document.activeElement === document.body || document.activeElement?.disabled) $('train-start').focus();
  if (m.atome02) {
    const v = page.models.add(`trained-${r.settings.config}-${r.id.slice(4, 12)}.atome`,
      { label, kind: 'trained', bytes: m.atome02, runId: r.id }, true);
    page.models.open(v);
  }
}

// A request the worker refused or failed. With the worker's state idle there
// is no run left in it: this one failed and is not resumable. A crashed
// worker was handled already (crashed).
function trainError(page, ts, e) {
  if (e.crashed) return;
  testEvent('train', e.refused ? 'refused' : 'error', undefined);
  showError(`training: ${e.message}`);
  if (e.state !== 'idle') return;
  runFailed(page, ts, e.message);
  setTrainStatus(page, ts, 'error');
  $('train-text').textContent = `Stopped by an error: ${e.message}`;
  $('train-progress').value = 0;
  $('train-saved').textContent = '';
  ts.stopping = false;
  if (document.activeElement === document.body || document.activeElement?.disabled) $('train-start').focus();
}

// A run that failed is kept (its checkpoint can still be downloaded) marked
// failed, never offered to continue; one that failed before its first step
// is removed. The saves queued before stay in order.
function runFailed(page, ts, message) {
  const r = ts.run;
  if (!r) return;
  ts.run = null;
  page.runs.release();
  const step = Number($('train-status').dataset.step) || 0;
  ts.saves = ts.saves.then(() => (step === 0 && !r.step ? store.deleteRun(r.id)
    : store.saveRun({ ...r, state: 'failed', error: String(message).split('\n')[0], updated: Date.now() }, null)))
    .catch(() => {}).then(() => { page.runs.list(); page.runs.announce(); });
}

export function trainedLabel(r, step) {
  const t = stamp(r.created);
  return `trained ${r.settings.config} ${r.settings.quant}, ${fmt(step)} steps (${t})`;
}
