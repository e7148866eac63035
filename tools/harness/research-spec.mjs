// tools/research-spec.mjs — the research harness's spec format: parse,
// validate (one clear line for anything malformed, before any run starts)
// and expand into runs. docs/research.md describes the format; tools/research
// is the command.
//
// A spec (research/<name>.json):
//   {
//     "title": "…", "about": "…",           optional text for the report
//     "kernels": "avx512",                  the ATOME_KERNELS set every run pins
//     "eval": { "data": "valid", "seq": N },  the held-out file (default valid)
//     "eval_points": 4,                     evaluations during training (the loss curve)
//     "ckpt_bytes": 8000000,                a checkpoint every this many training bytes
//     "flags": { train flag: value, … },    common to every grid
//     "grids": [ { "name": "…", "flags": {…}, "axes": { axis: [value, …], … } }, … ]
//   }
// An axis value is a scalar (the axis is then an `atome train` flag, e.g.
// "seed": [0, 1, 2]) or an object { "id": "…", "label": "…", "flags": {…},
// "match": {…} }. "match" picks a baseline shape with `atome match` (the
// closest shape of the matcher's grid with the given family, params,
// max_seq, layers, ffn_ratios, pos, tol) and sets --d-model, --layers,
// --d-ff, --max-seq (and --pos). A grid without a "seed" axis gets seeds
// 0, 1, 2. A run's id joins its axis value ids with "-" (scalar values are
// written as <axis><value>, seeds as s<N>); flags merge spec < grid < axis
// values in axis order. "data" and "valid" values "train" and "valid" name
// the shared TinyStories files.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// `atome train` flags a spec may set, with their kinds (int, num, bool, str)
// and ranges (lo, hi inclusive; loOpen / hiOpen: excluded): the file flags
// here, every other one read from `atome train --options-json` (the training
// option table, core/train/options.h, and the shape overrides), so a range
// lives in one place and a spec is refused here, before any run folder
// exists, for what the CLI would refuse only when the run starts.
// flagRange(name) is the one place the runner asks.
const FILE_FLAGS = ['config', 'data', 'valid', 'teacher', 'init'];
const NOT_IN_SPECS = ['threads'];    // the machine's, not the run's: the bits do not depend on it
const KINDS = { int: 'int', number: 'num', flag: 'bool', enum: 'str', str: 'str' };
const ATOME = fileURLToPath(new URL('../../build/native/atome', import.meta.url));
let flagTable = null;
function flags() {
  if (flagTable) return flagTable;
  let j;
  try { j = JSON.parse(execFileSync(ATOME, ['train', '--options-json'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })); } catch (e) {
    fail(`cannot read the training options from '${ATOME} train --options-json' (build it: cmake --build --preset native): ${String(e.stderr || e.message).trim().split('\n').pop()}`);
  }
  flagTable = new Map(FILE_FLAGS.map((n) => [n, { kind: 'str', range: null }]));
  for (const o of [...j.options, ...j.shape]) {
    if (NOT_IN_SPECS.includes(o.name)) continue;
    const range = o.min === undefined ? null : { lo: o.min, hi: o.max, loOpen: o.min_open, hiOpen: o.max_open };
    flagTable.set(o.name, { kind: KINDS[o.kind], range, values: o.values ?? null });
  }
  return flagTable;
}
// The kind of an `atome train` flag a spec may set, or undefined.
export function flagKind(name) { return flags().get(name)?.kind; }
export function flagRange(name) { return flags().get(name)?.range ?? null; }
// The names an enumerated flag takes (quant: ternary, fp32), or null.
export function flagValues(name) { return flags().get(name)?.values ?? null; }
function rangeText(r) {
  return `${r.loOpen ? '>' : '>='} ${r.lo} and ${r.hiOpen ? '<' : '<='} ${r.hi}`;
}

// Flags the runner sets itself.
const RUNNER_FLAGS = ['out', 'resume', 'log', 'log-every', 'eval-every', 'ckpt-every', 'quiet', 'stop-at'];
const KERNEL_SETS = ['ref', 'sse2', 'avx2', 'avx512'];
const TOP_KEYS = ['title', 'about', 'kernels', 'eval', 'eval_points', 'ckpt_bytes', 'flags', 'grids'];
const GRID_KEYS = ['name', 'flags', 'axes'];
const VALUE_KEYS = ['id', 'label', 'flags', 'match'];
const MATCH_KEYS = ['family', 'params', 'max_seq', 'layers', 'ffn_ratios', 'pos', 'tol', 'heads'];
export const SHARED_FILES = {
  train: '${ATOME_SHARED_DIR:-../shared}/data/tinystories-train.txt',
  valid: '${ATOME_SHARED_DIR:-../shared}/data/tinystories-valid.txt',
};

export class SpecError extends Error {}
const fail = (msg) => { throw new SpecError(msg); };
const isObj = (x) => x !== null && typeof x === 'object' && !Array.isArray(x);
const ID_RE = /^[A-Za-z0-9][A-Za-z0-9._+-]*$/;

function checkKeys(obj, allowed, where) {
  for (const k of Object.keys(obj)) if (!allowed.includes(k)) fail(`${where}: unknown key "${k}" (known: ${allowed.join(', ')})`);
}

export function checkFlag(name, value, where) {
  if (RUNNER_FLAGS.includes(name)) fail(`${where}: --${name} is set by the runner, not the spec`);
  const kind = flagKind(name);
  if (!kind) fail(`${where}: unknown atome train flag "${name}"`);
  const t = typeof value;
  if (kind === 'bool' && t !== 'boolean') fail(`${where}: --${name} takes true or false (got ${JSON.stringify(value)})`);
  if (kind === 'str' && t !== 'string') fail(`${where}: --${name} takes a string (got ${JSON.stringify(value)})`);
  const names = flagValues(name);
  if (names && !names.includes(value)) fail(`${where}: --${name} must be ${names.join(' or ')} (got ${JSON.stringify(value)})`);
  if ((kind === 'int' || kind === 'num') && (t !== 'number' || !Number.isFinite(value)))
    fail(`${where}: --${name} takes a number (got ${JSON.stringify(value)})`);
  if (kind === 'int' && !Number.isInteger(value)) fail(`${where}: --${name} takes an integer (got ${value})`);
  const r = (kind === 'int' || kind === 'num') ? flagRange(name) : null;
  if (r && (value < r.lo || value > r.hi || (r.loOpen && value === r.lo) || (r.hiOpen && value === r.hi)))
    fail(`${where}: --${name} must be ${rangeText(r)} (got ${value})`);
}

function checkFlags(flags, where) {
  if (!isObj(flags)) fail(`${where}: "flags" must be an object of atome train flags`);
  for (const [k, v] of Object.entries(flags)) checkFlag(k, v, where);
}

function checkMatch(m, where) {
  if (!isObj(m)) fail(`${where}: "match" must be an object`);
  checkKeys(m, MATCH_KEYS, `${where} match`);
  if (m.family !== 'vanilla' && m.family !== 'gssm') fail(`${where} match: "family" must be "vanilla" or "gssm"`);
  if (!Number.isInteger(m.params) || m.params < 1) fail(`${where} match: "params" must be a positive integer`);
  for (const k of ['max_seq', 'layers', 'heads'])
    if (k in m && (!Number.isInteger(m[k]) || m[k] < 1)) fail(`${where} match: "${k}" must be a positive integer`);
  if ('tol' in m && (typeof m.tol !== 'number' || !(m.tol >= 0))) fail(`${where} match: "tol" must be a number >= 0`);
  if ('ffn_ratios' in m && (!Array.isArray(m.ffn_ratios) || !m.ffn_ratios.length ||
      m.ffn_ratios.some(r => !Number.isInteger(r) || r < 1 || r > 4)))
    fail(`${where} match: "ffn_ratios" must be a non-empty list of integers 1..4`);
  if ('pos' in m && !['learned', 'none', 'ternary'].includes(m.pos)) fail(`${where} match: "pos" must be learned, none or ternary`);
}

function valueId(axis, v) {
  if (isObj(v)) return v.id;
  if (axis === 'seed') return `s${v}`;
  const s = typeof v === 'boolean' ? (v ? '' : 'no') + axis : `${axis}${v}`;
  return s.replace(/[^A-Za-z0-9._+]/g, '_');
}

// Parses and validates the text of a spec; returns the spec object.
export function parseSpec(text, name) {
  let spec;
  try { spec = JSON.parse(text); } catch (e) { fail(`${name}: not valid JSON (${e.message})`); }
  if (!isObj(spec)) fail(`${name}: a spec is a JSON object`);
  checkKeys(spec, TOP_KEYS, name);
  if (!('kernels' in spec)) fail(`${name}: "kernels" is required (the ATOME_KERNELS set every run pins: ${KERNEL_SETS.join(', ')})`);
  if (!KERNEL_SETS.includes(spec.kernels)) fail(`${name}: "kernels" must be one of ${KERNEL_SETS.join(', ')} (got ${JSON.stringify(spec.kernels)})`);
  if ('eval' in spec) {
    if (!isObj(spec.eval)) fail(`${name}: "eval" must be an object`);
    checkKeys(spec.eval, ['data', 'seq', 'max-bytes'], `${name} eval`);
    if ('data' in spec.eval && typeof spec.eval.data !== 'string') fail(`${name} eval: "data" must be a string`);
    if ('seq' in spec.eval && (!Number.isInteger(spec.eval.seq) || spec.eval.seq < 2)) fail(`${name} eval: "seq" must be an integer >= 2`);
    if ('max-bytes' in spec.eval && (!Number.isInteger(spec.eval['max-bytes']) || spec.eval['max-bytes'] < 0))
      fail(`${name} eval: "max-bytes" must be an integer >= 0 (0: the whole file)`);
  }
  if ('eval_points' in spec && (!Number.isInteger(spec.eval_points) || spec.eval_points < 0 || spec.eval_points > 100))
    fail(`${name}: "eval_points" must be an integer 0..100`);
  if ('ckpt_bytes' in spec && (!Number.isInteger(spec.ckpt_bytes) || spec.ckpt_bytes < 1))
    fail(`${name}: "ckpt_bytes" must be a positive integer`);
  if ('flags' in spec) checkFlags(spec.flags, `${name} flags`);
  if (!Array.isArray(spec.grids) || spec.grids.length === 0) fail(`${name}: "grids" must be a non-empty list`);
  spec.grids.forEach((g, gi) => {
    const where = `${name} grid ${gi + 1}`;
    if (!isObj(g)) fail(`${where}: a grid is an object`);
    checkKeys(g, GRID_KEYS, where);
    if ('flags' in g) checkFlags(g.flags, where);
    if (!isObj(g.axes) || Object.keys(g.axes).length === 0) fail(`${where}: "axes" must be a non-empty object`);
    for (const [axis, vals] of Object.entries(g.axes)) {
      const aw = `${where} axis "${axis}"`;
      if (!Array.isArray(vals) || vals.length === 0) fail(`${aw}: an axis is a non-empty list (an empty grid runs nothing)`);
      const ids = new Set();
      for (const v of vals) {
        if (isObj(v)) {
          checkKeys(v, VALUE_KEYS, aw);
          if (typeof v.id !== 'string' || !ID_RE.test(v.id)) fail(`${aw}: every object value needs an "id" of letters, digits, . _ + -`);
          if ('label' in v && typeof v.label !== 'string') fail(`${aw} ${v.id}: "label" must be a string`);
          if ('flags' in v) checkFlags(v.flags, `${aw} ${v.id}`);
          if ('match' in v) checkMatch(v.match, `${aw} ${v.id}`);
        } else {
          checkFlag(axis, v, aw);
        }
        const id = valueId(axis, v);
        if (ids.has(id)) fail(`${aw}: value id "${id}" appears twice`);
        ids.add(id);
      }
    }
  });
  return spec;
}

// The closest shape of `atome match` for a match object (cached per call site).
const matchCache = new Map();
export function resolveMatch(atome, m) {
  const key = JSON.stringify(m);
  if (matchCache.has(key)) return matchCache.get(key);
  const args = ['match', '--family', m.family, '--params', String(m.params), '--tol', String(m.tol ?? 0.05)];
  if (m.max_seq) args.push('--max-seq', String(m.max_seq));
  if (m.layers) args.push('--layers', String(m.layers));
  if (m.heads) args.push('--heads', String(m.heads));
  if (m.pos) args.push('--pos', m.pos);
  let out;
  try { out = JSON.parse(execFileSync(atome, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })); } catch (e) {
    fail(`match ${key}: ${String(e.stderr || e.message).trim().split('\n').pop()}`);
  }
  const ok = out.shapes.filter(s => !m.ffn_ratios || m.ffn_ratios.includes(s.ffn_ratio));
  if (!ok.length) fail(`match ${key}: no shape within the tolerance`);
  let best = ok[0];
  for (const s of ok) if (Math.abs(s.error) < Math.abs(best.error)) best = s;
  const flags = { 'd-model': best.d_model, layers: best.layers, 'd-ff': best.d_ff };
  if (m.family === 'vanilla') { flags['max-seq'] = out.max_seq; if (m.heads) flags.heads = m.heads; }
  else flags['d-inner'] = best.d_inner;
  if (m.pos && m.pos !== 'learned') flags.pos = m.pos;
  const r = { flags, shape: best, match_command: `build/native/atome ${args.join(' ')}` };
  matchCache.set(key, r);
  return r;
}

// Expands a validated spec into runs: [{ id, grid, cell, flags, labels, match }].
export function expandSpec(spec, name, atome) {
  const runs = [];
  const seen = new Set();
  spec.grids.forEach((g, gi) => {
    const axes = Object.entries(g.axes);
    if (!g.axes.seed) axes.push(['seed', [0, 1, 2]]);
    const combos = axes.reduce((acc, [axis, vals]) => acc.flatMap(c => vals.map(v => [...c, [axis, v]])), [[]]);
    for (const combo of combos) {
      const flags = { ...(spec.flags || {}), ...(g.flags || {}) };
      const cell = {};
      const labels = {};
      let match = null;
      for (const [axis, v] of combo) {
        if (isObj(v)) {
          if (v.match) { const r = resolveMatch(atome, v.match); Object.assign(flags, r.flags); match = r; }
          Object.assign(flags, v.flags || {});
          cell[axis] = v.id;
          if (v.label) labels[axis] = v.label;
        } else {
          flags[axis] = v;
          cell[axis] = v;
        }
      }
      const id = combo.map(([axis, v]) => valueId(axis, v)).join('-');
      const where = `${name} grid ${gi + 1} run ${id}`;
      if (seen.has(id)) fail(`${where}: two runs have the id "${id}" (give the grids' values distinct ids)`);
      seen.add(id);
      for (const k of ['config', 'data']) if (!(k in flags)) fail(`${where}: no "${k}" flag`);
      if (!('steps' in flags) && !('train-bytes' in flags)) fail(`${where}: no "steps" or "train-bytes" flag`);
      if ('steps' in flags && 'train-bytes' in flags) fail(`${where}: both "steps" and "train-bytes"`);
      runs.push({ id, grid: g.name || `grid${gi + 1}`, cell, flags, labels, match });
    }
  });
  return runs;
}
