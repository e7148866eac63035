// web/presets.mjs — the training panel's presets (#train-preset) and its
// thread count (#train-threads).
//
// A preset fills the settings fields. `quick` (the default) is the recipe the
// sweep research/q1-quick-preset.json chose: the lowest held-out bpb a
// minute of tab time allows (docs/web.md has the table and the command);
// its warmup is a fraction of Steps, recomputed when Steps is edited, so any
// step count keeps the preset. `reference` is the papers' 60K recipe,
// unchanged (the same bytes as before presets existed). Editing any other
// field shows `custom`. The expected figures are measurements on this
// project's 2-core test machine (tools/bench-web-train.mjs --preset NAME),
// shown before a run as what to expect, not as a promise.
import { $, fmt } from './ui.mjs';

const COMMON = { 'train-config': 'atome-60k', 'train-quant': 'ternary', seq: '64', 'train-seed': '0', wd: '0.01',
  'fp-fraction': '0', lr2: '', 'eval-every': '', 'sample-every': '' };
export const PRESETS = {
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
const PRESET_IDS = [...new Set(Object.values(PRESETS).flatMap((p) => [...Object.keys(p.fields), 'warmup']))];

const warmupOf = (p, steps) => String(Math.round(p.warmupFraction * steps));

// Fills the fields of preset `name` (fields in `keep` stay as they are).
export function applyPreset(name, keep = new Set()) {
  const p = PRESETS[name];
  if (!p) return;
  for (const [id, v] of Object.entries(p.fields)) if (!keep.has(id)) $(id).value = v;
  if (p.warmupFraction !== undefined && !keep.has('warmup')) $('warmup').value = warmupOf(p, Number($('steps').value) || 0);
  $('train-preset').value = name;
}

// The preset the fields show, or 'custom'.
export function presetOfFields() {
  for (const [name, p] of Object.entries(PRESETS)) {
    const same = Object.entries(p.fields).every(([id, v]) => $(id).value.trim() === v ||
      (id === 'steps' && p.warmupFraction !== undefined && /^\d+$/.test($(id).value.trim())));
    const w = p.warmupFraction !== undefined ? warmupOf(p, Number($('steps').value) || 0) : p.fields.warmup;
    if (same && $('warmup').value.trim() === w) return name;
  }
  return 'custom';
}

// What the chosen preset gives, said before the run starts.
function presetNote(threads) {
  const name = $('train-preset').value, p = PRESETS[name];
  if (!p) return 'Custom settings: the time and the result depend on them.';
  const e = p.expect;
  const what = name === 'quick' ? 'Quick: the recipe chosen for a minute of training'
    : "Reference: the papers' 60K recipe, unchanged";
  if (e.bpb == null) return `${what}.`;
  // the time measured with this many threads, else with one (and say so)
  const t = e.seconds[threads] !== undefined ? threads : 1;
  return `${what}: about ${e.bpb.toFixed(2)} bpb on held-out TinyStories in about ${Math.round(e.seconds[t])} s ` +
    `on the project's 2-core test machine with ${t} thread${t > 1 ? 's' : ''}` +
    `${threads !== t ? ` (here ${threads} threads)` : ''}.`;
}

// Wires the preset select and the fields; `threads` = { max, isolated } once
// the training worker says what it has.
// onCorpus(n): the preset's built-in corpus size (bytes) was chosen.
export function initPresets(page, onCorpus = () => {}) {
  const ps = { threadsMax: 1, isolated: false };
  const query = new Set([...page.params.keys()]);
  // the query string's fields over the preset it names (else the default's):
  // ?steps=60 keeps quick, with its warmup for 60 steps
  const base = PRESETS[page.params.get('train-preset')] ? page.params.get('train-preset') : 'quick';
  applyPreset(base, query);
  onCorpus(PRESETS[base].corpus);
  $('train-preset').value = presetOfFields();
  $('train-preset').addEventListener('change', () => {
    const name = $('train-preset').value;
    applyPreset(name);
    if (PRESETS[name]) onCorpus(PRESETS[name].corpus);
    note(ps);
  });
  for (const id of PRESET_IDS) {
    $(id).addEventListener(id === 'train-config' || id === 'train-quant' || id === 'cosine' ? 'change' : 'input', () => {
      const cur = $('train-preset').value, p = PRESETS[cur];
      if (id === 'steps' && p?.warmupFraction !== undefined && /^\d+$/.test($('steps').value.trim()))
        $('warmup').value = warmupOf(p, Number($('steps').value));
      $('train-preset').value = presetOfFields();
      note(ps);
    });
  }
  note(ps);
  return {
    // the training worker's answer to init: how many threads it can run
    threads(max, isolated, why = null) {
      Object.assign(ps, { threadsMax: Math.max(1, max), isolated, why });
      const want = Math.min(PAGE_THREADS, ps.threadsMax);
      if (!query.has('train-threads')) $('train-threads').value = String(want);
      note(ps);
    },
    get max() { return ps.threadsMax; },
    refresh: () => note(ps),
  };
}

const cores = () => navigator.hardwareConcurrency || 1;
// The threads the training worker starts and #train-threads starts at (and
// may ask for at most): the cores, capped at 4 (where more stopped helping;
// docs/web.md). On this project's 2-core test machine two trainer threads
// beside the page are faster than one (quick 41.8 s against 53.2 s: node
// tools/bench-web-train.mjs --preset quick --threads 1,2). Any count gives
// one thread's bits.
export const PAGE_THREADS = Math.max(1, Math.min(4, cores()));

function note(ps) {
  const t = Math.min(Number($('train-threads').value) || 1, ps.threadsMax);
  $('train-preset-note').textContent = presetNote(t);
  $('train-threads-note').textContent = ps.why ? `Training runs on one thread: the threaded module did not start (${ps.why}).`
    : !ps.isolated ? 'This page is not cross-origin isolated, so training runs on one thread.'
      : ps.threadsMax > 1 ? `Up to ${fmt(ps.threadsMax)} threads here (${fmt(navigator.hardwareConcurrency || 1)} cores); it starts at ${fmt(Math.min(PAGE_THREADS, ps.threadsMax))}.`
        : 'Training runs on one thread: this browser reports one core.';
  $('train-threads').disabled = ps.threadsMax <= 1;
  $('train-threads').max = String(ps.threadsMax);
}
