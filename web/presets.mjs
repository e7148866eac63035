// web/presets.mjs — the training panel's presets (#train-preset), its time
// budget (#train-budget) and its thread count (#train-threads).
//
// A preset fills the settings fields. `minute` (the default) trains for a
// time budget instead of a step count: the run measures this device first
// (web/train-worker.mjs `measure`), fixes the step count that fills the
// budget and takes the schedule the sweep research/q2-minute-schedule.json
// found best for that many steps (web/minute.mjs, web/data/minute-schedule.json);
// until then the fields show the schedule of the step count the project's
// test machine would reach, and a step count typed in leaves it for quick
// (any seed keeps it).
// `quick` is the recipe the sweep research/q1-quick-preset.json chose: the
// lowest held-out bpb a minute of tab time allows (docs/web.md has the table
// and the command); its warmup is a fraction of Steps, recomputed when Steps
// is edited, so any step count keeps the preset. `reference` is the papers'
// 60K recipe, unchanged (the same bytes as before presets existed). Editing
// any other field shows `custom`. The expected figures are measurements on
// this project's 2-core test machine (tools/bench-web-train.mjs --preset NAME),
// shown before a run as what to expect, not as a promise.
import { $, fmt } from './ui.mjs';
import { SCHEDULE_URL, BUDGET, scheduleFields, stepsForBudget, numText, pageShare } from './minute.mjs';

const COMMON = { 'train-config': 'atome-60k', 'train-quant': 'ternary', seq: '64', 'train-seed': '0', wd: '0.01',
  'fp-fraction': '0', lr2: '', 'eval-every': '', 'sample-every': '' };
// the fields a minute run sets from its schedule (typing in one leaves minute)
const SCHEDULE_IDS = ['steps', 'batch', 'lr', 'warmup', 'cosine', 'lr-min', 'clip'];
export const PRESETS = {
  minute: {
    // the AVX2 test machine's figures, for the step count the fields show before a run (the run measures its
    // own): the step times of quick's runs there (trainer 74.3 s for 5,000 steps on 1 thread, 41.0 s on 2: docs/web.md),
    // the costs beside the steps as the page's `measure` reports them in the order of magnitude seen there
    typical: { msPerStep: { 1: 15, 2: 8.2 }, evalMsPerChunk: 0.3, sampleMs: 60, setupMs: 150, saveMs: 10, exportMs: 250, evalChunks: 3125,
      measureS: 4 },
  },
  quick: {
    fields: { ...COMMON, steps: '5000', batch: '16', lr: '1.2e-2', cosine: '1', 'lr-min': '1e-4', clip: '1' },
    warmupFraction: 0.02, corpus: 2000000,
    // 2026-12-06 (the AVX2 test machine, docs/web.md): 2.3241 valid.txt bpb; 79.1 s wall on 1 thread,
    // 44.0 s on 2 (best of 2 rounds; 61.2 s in a slow spell of the machine)
    expect: { bpb: 2.32, seconds: { 1: 79, 2: 44 } },
  },
  reference: {
    fields: { ...COMMON, steps: '3000', batch: '16', lr: '3e-4', warmup: '0', cosine: '0', 'lr-min': '0', clip: '0' },
    corpus: 500000,
    // 2026-12-06 (the AVX2 test machine), best of 3 rounds: 2.7776 valid.txt bpb; 47.2 s wall on 1 thread, 26.0 s on 2
    expect: { bpb: 2.78, seconds: { 1: 47, 2: 26 } },
  },
};
const PRESET_IDS = [...new Set(['steps', 'warmup', ...Object.keys(COMMON), ...Object.keys(PRESETS.quick.fields),
  ...Object.keys(PRESETS.reference.fields)])];

// The minute preset's schedule table (null, said in its note, when it cannot be fetched).
let TABLE = null, tableError = null;
try {
  const r = await fetch(SCHEDULE_URL);
  if (!r.ok) throw new Error(`HTTP ${r.status}`);
  TABLE = await r.json();
} catch (e) { tableError = e.message; }
export const scheduleTable = () => TABLE;

const warmupOf = (p, steps) => String(Math.round(p.warmupFraction * steps));

// The page's thread state (initPresets), read by the minute estimate.
const ps = { threadsMax: 1, isolated: false, why: null, run: null };   // run: the minute run the form shows

// The budget typed (null when it is not a whole number of seconds in range).
function budgetOf() {
  const t = $('train-budget').value.trim();
  return /^\d+$/.test(t) && Number(t) >= BUDGET.min && Number(t) <= BUDGET.max ? Number(t) : null;
}
// The threads the field asks for: a number, or the most the page has ('auto').
function threadsAsked() {
  const t = $('train-threads').value.trim();
  const n = /^\d+$/.test(t) ? Number(t) : ps.threadsMax;
  return Math.max(1, Math.min(n, ps.threadsMax));
}
// The step count the project's test machine reaches in the budget, and its schedule.
export function minuteEstimate(budget = budgetOf() ?? BUDGET.default) {
  const t = PRESETS.minute.typical, n = threadsAsked() >= 2 ? 2 : 1;
  const m = { ...t, msPerStep: t.msPerStep[n], pageShare: pageShare(n, 2) };   // the test machine has 2 cores
  const steps = stepsForBudget(m, budget - t.measureS);
  return { steps, threads: n, ...scheduleFields(TABLE, steps) };
}

// Fills the fields of preset `name` (fields in `keep` stay as they are).
export function applyPreset(name, keep = new Set()) {
  if (name === 'minute') {
    if (!TABLE) return;
    for (const [id, v] of Object.entries(minuteFields())) if (!keep.has(id)) $(id).value = v;
  } else {
    const p = PRESETS[name];
    if (!p) return;
    for (const [id, v] of Object.entries(p.fields)) if (!keep.has(id)) $(id).value = v;
    if (p.warmupFraction !== undefined && !keep.has('warmup')) $('warmup').value = warmupOf(p, Number($('steps').value) || 0);
  }
  $('train-preset').value = name;
  showBudget();
}

// Minute's fields: COMMON's but the seed (any seed keeps minute), the estimate's schedule.
function minuteFields() {
  const { 'train-seed': _seed, ...common } = COMMON;
  return { ...common, ...minuteEstimate().fields };
}

const sameFields = (want) => Object.entries(want).every(([id, v]) => $(id).value.trim() === v);

// The preset the fields show, or 'custom'.
export function presetOfFields() {
  if (TABLE && budgetOf() !== null && sameFields(minuteFields())) return 'minute';
  for (const [name, p] of Object.entries(PRESETS)) {
    if (!p.fields) continue;
    const same = Object.entries(p.fields).every(([id, v]) => $(id).value.trim() === v ||
      (id === 'steps' && p.warmupFraction !== undefined && /^\d+$/.test($(id).value.trim())));
    const w = p.warmupFraction !== undefined ? warmupOf(p, Number($('steps').value) || 0) : p.fields.warmup;
    if (same && $('warmup').value.trim() === w) return name;
  }
  return 'custom';
}

// The budget field is the minute preset's only.
function showBudget() { $('train-budget-field').hidden = $('train-preset').value !== 'minute'; }

// What the chosen preset gives, said before the run starts.
function presetNote(threads) {
  const name = $('train-preset').value, p = PRESETS[name];
  if (name === 'minute') return minuteNote();
  if (!p) return 'Custom settings: the time and the result depend on them.';
  const e = p.expect;
  const what = name === 'quick' ? 'Quick: 5,000 steps of the recipe chosen for a minute of training'
    : "Reference: the papers' 60K recipe, unchanged";
  // the time measured with this many threads, else with one (and say so)
  const t = e.seconds[threads] !== undefined ? threads : 1;
  return `${what}: about ${e.bpb.toFixed(2)} bpb on held-out TinyStories in about ${Math.round(e.seconds[t])} s ` +
    `on the project's 2-core test machine with ${t} thread${t > 1 ? 's' : ''}` +
    `${threads !== t ? ` (here ${threads} threads)` : ''}.`;
}

function minuteNote() {
  if (!TABLE) return `Minute: its schedule table did not load (${tableError}); pick quick or reference.`;
  if (ps.run?.measured) return measuredNote(ps.run);
  const b = budgetOf();
  if (b === null) return `Minute: the time budget is a whole number of seconds from ${BUDGET.min} to ${fmt(BUDGET.max)}.`;
  const e = minuteEstimate(b);
  return `Minute: the run first measures this device's speed (about ${PRESETS.minute.typical.measureS} s), then trains as many ` +
    `steps as fit ${fmt(b)} s with the schedule a sweep found best for that many steps. Steps, learning rate, warmup and ` +
    `cosine floor are set then; the project's 2-core test machine reaches about ${fmt(e.steps)} steps ` +
    `(the sweep's held-out bpb at ${fmt(e.row.steps)} steps: ${e.row.bpb.toFixed(2)}).`;
}

// What a minute run's measure found and chose.
function measuredNote(s) {
  const m = s.measured, row = scheduleFields(TABLE, s.steps).row;
  const rates = Object.entries(m.msPerStep).map(([n, ms]) => `${Math.round(1000 / ms)} steps/s on ${n} thread${n > 1 ? 's' : ''}`);
  // the faster count by its steps alone, when the run took the other (web/minute.mjs runThreads: the page's share)
  const raw = Object.entries(m.msPerStep).reduce((a, b) => (b[1] < a[1] ? b : a))[0];
  const why = String(raw) === String(m.threads) ? '' : ` (${raw} threads take all ${m.cores ?? raw} cores here, and the page's own work ` +
    'then slows them by about a quarter)';
  return `Minute, ${fmt(s.budget)} s: this device measured ${rates.join(' and ')}${why}, so the run trains on ${m.threads} ` +
    `thread${m.threads > 1 ? 's' : ''} for ${fmt(s.steps)} steps (what fits the ${fmt(m.budgetLeft)} s left after the measure) ` +
    `with the schedule of the sweep's ${fmt(row.steps)}-step row (lr ${numText(row.lr)}; the sweep's held-out bpb there ` +
    `${row.bpb.toFixed(2)}).`;
}

// Wires the preset select, the budget and the fields; `threads` = { max,
// isolated } once the training worker says what it has.
// onCorpus(n): the preset's built-in corpus size (bytes) was chosen.
export function initPresets(page, onCorpus = () => {}) {
  const query = new Set([...page.params.keys()]);
  if (!TABLE) $('train-preset').querySelector('option[value=minute]').disabled = true;
  // the query string's fields over the preset it names, else over minute, or
  // quick when it sets a step count or schedule (?steps=60: quick, with its
  // warmup for 60 steps)
  const named = page.params.get('train-preset');
  const base = PRESETS[named] && (named !== 'minute' || TABLE) ? named
    : SCHEDULE_IDS.some((id) => query.has(id)) || !TABLE ? 'quick' : 'minute';
  applyPreset(base, query);
  onCorpus(presetCorpus(base));
  $('train-preset').value = presetOfFields();
  showBudget();
  wireFields(onCorpus);
  note();
  return {
    // the training worker's answer to init: how many threads it can run
    threads(max, isolated, why = null) {
      Object.assign(ps, { threadsMax: Math.max(1, max), isolated, why });
      if (!query.has('train-threads')) $('train-threads').value = ps.threadsMax > 1 ? 'auto' : '1';
      $('train-threads-choices').replaceChildren(...['auto', ...Array.from({ length: ps.threadsMax }, (_, i) => String(i + 1))]
        .map((v) => Object.assign(document.createElement('option'), { value: v })));
      if ($('train-preset').value === 'minute' && !ps.run) applyPreset('minute');
      note();
    },
    get max() { return ps.threadsMax; },
    refresh: () => note(),
    // the form shows a run's settings: a minute run's note says what it measured and chose
    showRun(s) { ps.run = s.preset === 'minute' ? s : null; note(); },
  };
}

// The listeners of the preset select, the budget, the threads and the fields.
function wireFields(onCorpus) {
  // the person changes a setting: the note is about the next run, not the one shown
  $('sec-train').addEventListener('input', () => { ps.run = null; }, true);
  $('sec-train').addEventListener('change', () => { ps.run = null; }, true);
  $('train-preset').addEventListener('change', () => {
    const name = $('train-preset').value;
    applyPreset(name);
    if (PRESETS[name]) onCorpus(presetCorpus(name));
    showBudget();
    note();
  });
  // a budget typed means a minute run; its estimate follows the budget
  $('train-budget').addEventListener('input', () => {
    if (budgetOf() !== null && TABLE) { applyPreset('minute'); onCorpus(presetCorpus('minute')); }
    note();
  });
  $('train-threads').addEventListener('input', () => {
    if ($('train-preset').value === 'minute' && TABLE) applyPreset('minute');
    note();
  });
  for (const id of PRESET_IDS) {
    $(id).addEventListener(id === 'train-config' || id === 'train-quant' || id === 'cosine' ? 'change' : 'input', () => {
      // a step count or schedule typed on minute: quick's recipe with what was typed
      if ($('train-preset').value === 'minute' && SCHEDULE_IDS.includes(id)) {
        applyPreset('quick', new Set([id]));
        onCorpus(presetCorpus('quick'));
      }
      const cur = $('train-preset').value, p = PRESETS[cur];
      if (id === 'steps' && p?.warmupFraction !== undefined && /^\d+$/.test($('steps').value.trim()))
        $('warmup').value = warmupOf(p, Number($('steps').value));
      $('train-preset').value = presetOfFields();
      showBudget();
      note();
    });
  }
}

// The built-in corpus bytes of a preset.
export function presetCorpus(name) {
  if (name === 'minute') return TABLE ? minuteEstimate().corpus : PRESETS.quick.corpus;
  return PRESETS[name]?.corpus ?? PRESETS.quick.corpus;
}

const cores = () => navigator.hardwareConcurrency || 1;
// The threads the training worker starts (the most #train-threads may ask
// for): the cores, capped at 4 (where more stopped helping; docs/web.md).
// `auto` (the field's default) measures the first steps on one thread and on
// these, keeps the faster and times the two again every 4 s of training; a
// number is used as it is. Any count gives one thread's bits.
export const PAGE_THREADS = Math.max(1, Math.min(4, cores()));

function note() {
  $('train-preset-note').textContent = presetNote(threadsAsked());
  $('train-threads-note').textContent = ps.why ? `Training runs on one thread: the threaded module did not start (${ps.why}).`
    : !ps.isolated ? 'This page is not cross-origin isolated, so training runs on one thread.'
      : ps.threadsMax > 1 ? `Up to ${fmt(ps.threadsMax)} threads here (${fmt(navigator.hardwareConcurrency || 1)} cores). ` +
        `Auto times the first steps on 1 thread and on ${fmt(ps.threadsMax)}, keeps the faster, and times both again every few seconds; a number is used as it is.`
        : 'Training runs on one thread: this browser reports one core.';
  $('train-threads').disabled = ps.threadsMax <= 1;
  $('train-threads').max = String(ps.threadsMax);
}
