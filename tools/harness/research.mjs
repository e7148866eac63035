// tools/research.mjs — the research harness (tools/research is the command).
//
//   tools/research sweep SPEC.json [--jobs N] [--dry-run] [--filter RE] [--limit N] [--commit]
//   tools/research sweep SPEC.json --emit gnu-parallel|slurm --out FILE
//   tools/research run SPEC.json --run ID
//   tools/research list SPEC.json
//   tools/research report [--results research/results] [--out docs/RESULTS.md]
//
// A run is one `atome train` then one `atome eval` on the held-out file, with
// ATOME_KERNELS pinned and one thread (ATOME_THREADS=1; the trainer's
// threads never change bits, but --jobs counts cores), checkpoints every ~8 MB of training bytes. Its result is
// research/results/<spec>/<run>.json; a finished run is skipped, a
// half-trained one resumes from research/runs/<spec>/<run>/model.ckpt
// (resumption is bit-identical, so the result equals an uninterrupted run's).
// docs/research.md has the spec format and the result keys.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync, renameSync, statSync, openSync, readSync, closeSync, rmSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import { parseSpec, expandSpec, SpecError, SHARED_FILES } from './research-spec.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const ATOME_REL = 'build/native/atome';
const atome = join(root, ATOME_REL);
const CKPT_BYTES = 8e6;   // a checkpoint every ~8 MB of training bytes (minutes, not hours); spec key ckpt_bytes
// Where runs and results go: research/ (or ATOME_RESEARCH_DIR, for tests and
// scratch sweeps); written into the commands relative to the repository root.
const outDir = resolve(root, process.env.ATOME_RESEARCH_DIR || 'research');
const outRel = relative(root, outDir).startsWith('..') ? outDir : (relative(root, outDir) || '.');

const die = (msg, code = 2) => { process.stderr.write(`research: ${msg}\n`); process.exit(code); };

// ---- arguments ----
const USAGE = {
  sweep: 'usage: tools/research sweep SPEC.json [--jobs N] [--dry-run] [--filter REGEX] [--limit N] [--commit] [--every S]\n'
    + '       tools/research sweep SPEC.json --emit gnu-parallel|slurm --out FILE [--filter REGEX]\n'
    + 'Runs every cell of the spec that has no result yet (one `atome train` + `atome eval` each, one thread,\n'
    + 'niced by the caller if wanted); --dry-run lists the runs with a single-thread timing estimate;\n'
    + '--emit writes a GNU parallel job list or a Slurm array script instead (docs/research.md).',
  run: 'usage: tools/research run SPEC.json --run ID [--commit]\nRuns exactly one cell of the spec (skipped if its result exists).',
  list: 'usage: tools/research list SPEC.json\nPrints each run id, done or todo, and its flags.',
  report: 'usage: tools/research report [--results DIR] [--out FILE] [--no-figures] [--check]\n'
    + 'Rebuilds the research part of docs/RESULTS.md and docs/img/research/*.svg from the result files;\n'
    + '--check compares instead of writing (exit 1 on a difference).',
};

function parseArgs(argv, spec, cmd) {
  const out = { _: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') { console.log(USAGE[cmd]); process.exit(0); }
    if (!a.startsWith('--')) { out._.push(a); continue; }
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
    if (!(name in spec)) die(`unknown flag --${name}`);
    if (spec[name] === 'flag') { out[name] = true; continue; }
    const v = eq > 0 ? a.slice(eq + 1) : argv[++i];
    if (v === undefined) die(`--${name} needs a value`);
    if (spec[name] === 'int') { if (!/^[0-9]+$/.test(v)) die(`--${name} takes a whole number (got '${v}')`); out[name] = Number(v); }
    else out[name] = v;
  }
  return out;
}

// ---- spec loading ----
export function loadSpec(path) {
  if (!existsSync(path)) die(`no spec file '${path}'`, 1);
  const name = basename(path).replace(/\.json$/, '');
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name)) die(`spec file name '${name}' must be letters, digits, . _ -`);
  if (!existsSync(atome)) die(`${ATOME_REL} is missing: run tools/setup first`, 1);
  try {
    const spec = parseSpec(readFileSync(path, 'utf8'), name);
    const runs = expandSpec(spec, name, atome);
    for (const r of runs) paramsOf(r.flags);   // an unknown config or a bad shape is refused before any run
    return { spec, name, runs };
  } catch (e) {
    if (e instanceof SpecError) die(e.message);
    throw e;
  }
}

const shq = (s) => /^[A-Za-z0-9_./:=+,@%-]+$/.test(s) ? s : `'${String(s).replace(/'/g, `'\\''`)}'`;
const dataArg = (v) => SHARED_FILES[v] ? `"${SHARED_FILES[v]}"` : shq(v);
const sharedPath = (v) => SHARED_FILES[v] ? SHARED_FILES[v].replace('${ATOME_SHARED_DIR:-../shared}', process.env.ATOME_SHARED_DIR || resolve(root, '../shared')) : resolve(root, v);

function numText(v) {
  if (typeof v !== 'number') return String(v);
  return String(v);   // JSON's shortest round-trip text; the CLI parses it exactly
}

// Steps of a run (for the eval and checkpoint cadence).
function runSteps(f) {
  const batch = f.batch ?? 16, seq = f.seq ?? 64;
  return f.steps ?? Math.ceil(f['train-bytes'] / (batch * seq));
}

export function commandsFor(specName, spec, run) {
  const f = run.flags;
  const dir = `${outRel}/runs/${specName}/${run.id}`;
  const ckpt = `${dir}/model.ckpt`;
  const steps = runSteps(f);
  const batch = f.batch ?? 16, seq = f.seq ?? 64;
  const points = spec.eval_points ?? 4;
  const evalEvery = points > 0 ? Math.ceil(steps / points) : 0;
  const ckptEvery = Math.max(1, Math.round((spec.ckpt_bytes ?? CKPT_BYTES) / (batch * seq)));
  const parts = [`ATOME_KERNELS=${spec.kernels}`, ATOME_REL, 'train'];
  for (const [k, v] of Object.entries(f)) {
    if (typeof v === 'boolean') { if (v) parts.push(`--${k}`); continue; }
    parts.push(`--${k}`, (k === 'data' || k === 'valid') ? dataArg(v) : shq(numText(v)));
  }
  if (evalEvery > 0 && evalEvery < steps) parts.push('--eval-every', String(evalEvery));
  if (ckptEvery < steps) parts.push('--ckpt-every', String(ckptEvery));
  parts.push('--out', ckpt, '--quiet');
  const train = `mkdir -p ${dir} && ${parts.join(' ')}`;
  const ev = spec.eval || {};
  const eparts = [`ATOME_KERNELS=${spec.kernels}`, ATOME_REL, 'eval', '--model', ckpt, '--data', dataArg(ev.data || 'valid')];
  if (ev.seq) eparts.push('--seq', String(ev.seq));
  if (ev['max-bytes']) eparts.push('--max-bytes', String(ev['max-bytes']));
  if (isAtome(f)) eparts.push('--router');
  return { dir, ckpt, train, eval: eparts.join(' '), steps, log: `${ckpt}.log.jsonl` };
}

const isAtome = (f) => String(f.config).startsWith('atome');

// ---- the parameter count of a run's shape ----
const paramsCache = new Map();
function paramsOf(f) {
  const args = ['params', '--config', f.config];
  for (const k of ['quant', 'd-model', 'layers', 'd-head', 'heads', 'kernel', 'attn-top-k', 'd-ff', 'd-inner', 'max-seq', 'pathways', 'attn-window', 'pos'])
    if (k in f) args.push(`--${k}`, String(f[k]));
  const key = args.join(' ');
  if (!paramsCache.has(key)) {
    try { paramsCache.set(key, JSON.parse(execFileSync(atome, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }))); }
    catch (e) { throw new SpecError(`atome ${key}: ${String(e.stderr || e.message).trim().split('\n').pop()}`); }
  }
  return paramsCache.get(key);
}

// ---- running one cell ----
function sh(cmd, { onStderr, env } = {}) {
  return new Promise((res) => {
    // One thread per run (ATOME_THREADS=1): a sweep's --jobs says how many
    // cores it takes; the bits would be the same on any count (pool.h).
    const p = spawn('bash', ['-c', cmd], { cwd: root, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...(env || process.env), ATOME_THREADS: '1' } });
    children.add(p);
    let out = '', err = '';
    p.stdout.on('data', d => { out += d; });
    p.stderr.on('data', d => { err += d; if (onStderr && onStderr(String(d))) { try { process.kill(-p.pid, 'SIGTERM'); } catch {} } });
    p.on('close', (code, signal) => { children.delete(p); res({ code, signal, out, err }); });
  });
}
const children = new Set();
function killChildren() { for (const p of children) { try { process.kill(-p.pid, 'SIGTERM'); } catch {} } }

function lastJsonLine(text) {
  const lines = text.trim().split('\n').filter(Boolean);
  return JSON.parse(lines[lines.length - 1]);
}

function readLog(path) {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8').split('\n').filter(Boolean).map(l => { try { return JSON.parse(l); } catch { return null; } }).filter(Boolean);
}

// The step a running run's log has reached (its last line).
function logStep(path) {
  try {
    const st = statSync(path);
    const n = Math.min(st.size, 4096);
    const fd = openSync(path, 'r');
    const buf = Buffer.alloc(n);
    readSync(fd, buf, 0, n, st.size - n);
    closeSync(fd);
    const lines = buf.toString('utf8').trim().split('\n');
    for (let i = lines.length - 1; i >= 0; i--) { const m = /^\{"step":(\d+)/.exec(lines[i]); if (m) return Number(m[1]); }
  } catch {}
  return 0;
}

function gitCommit() {
  try { return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim(); } catch { return null; }
}

export function resultPath(specName, runId, resultsDir = join(outDir, 'results')) {
  return join(resultsDir, specName, `${runId}.json`);
}

function writeAtomic(path, text) {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

// Training-file bytes a run learns from (for epochs): the chunks it samples.
function trainChunkBytes(f) {
  const seq = f.seq ?? 64;
  let n;
  try { n = statSync(sharedPath(f.data)).size; } catch { return null; }
  if (f['max-bytes']) n = Math.min(n, f['max-bytes']);
  const chunks = Math.floor(n / seq);
  const train = f.valid ? chunks : Math.floor((f.split ?? 0.9) * chunks);
  return train * seq;
}

function refCountedParams(f, p) {
  // The reference builds a disabled pathway and counts its parameters; only
  // the router shrinks. Our ablations have none of them (params = live).
  if (!isAtome(f) || !f.pathways) return p.params;
  const full = paramsOf({ ...f, pathways: 'conv,ssm,attn' }).params;
  const removed = 3 - f.pathways.split(',').length;
  return full - removed * p.d_model * p.layers;
}

export async function runCell(specName, spec, run, { quiet = false, commit = false } = {}) {
  const rp = resultPath(specName, run.id);
  const c = commandsFor(specName, spec, run);
  if (existsSync(rp)) {
    const old = JSON.parse(readFileSync(rp, 'utf8'));
    if (old.train_command === c.train && old.eval_command === c.eval) return { id: run.id, skipped: true, result: old };
    throw new Error(`${relative(root, rp)} was made by another command than the spec now gives; move it away to re-run the cell`);
  }
  const { train, evj, estimate } = await trainAndEval(specName, spec, run, c, quiet);
  const result = cellResult(specName, spec, run, c, train, evj, estimate);
  writeAtomic(rp, JSON.stringify(result, null, 1) + '\n');
  if (commit) await commitResult(rp, `research: ${specName}/${run.id} (${result.bpb.toFixed(4)} bpb)`);
  if (!quiet) process.stderr.write(`research: ${specName}/${run.id}: ${result.bpb.toFixed(4)} bpb, ${result.seconds.toFixed(0)} s\n`);
  return { id: run.id, result };
}

// Trains a cell (resuming from its checkpoint when there is one) and scores
// it: the last JSON lines of its `atome train` and `atome eval`, and the
// estimate of its time made before training.
async function trainAndEval(specName, spec, run, c, quiet) {
  const ckptAbs = resolve(root, c.ckpt);
  let cmd = c.train;
  let resumed = false;
  if (existsSync(ckptAbs)) { cmd += ` --resume ${c.ckpt}`; resumed = true; }
  const estimate = estimateOf(spec, run.flags);   // before training: the report sets it beside the time taken
  if (!quiet) process.stderr.write(`research: ${specName}/${run.id}: ${resumed ? 'resuming' : 'training'} (estimated ${fmtDur(estimate)})\n`);
  let badKernels = false;
  const tr = await sh(cmd, { onStderr: (s) => { if (/ATOME_KERNELS=\S+ is not available here/.test(s)) { badKernels = true; return true; } return false; } });
  if (badKernels) throw new Error(`${run.id}: the kernel set ${spec.kernels} is not available on this machine; results would not be comparable`);
  if (tr.code !== 0) throw new Error(`${run.id}: atome train failed (${tr.signal || tr.code}): ${tr.err.trim().split('\n').pop() || ''}`);
  const train = lastJsonLine(tr.out);
  const ev = await sh(c.eval);
  if (ev.code !== 0) throw new Error(`${run.id}: atome eval failed: ${ev.err.trim().split('\n').pop() || ''}`);
  return { train, evj: lastJsonLine(ev.out), estimate };
}

// A finished cell's result file: its scores, the commands that re-run it,
// what was trained (config, shape, parameters, bytes) and its curves.
function cellResult(specName, spec, run, c, train, evj, estimate) {
  const p = paramsOf(run.flags);
  const f = run.flags;
  const batch = f.batch ?? 16, seq = f.seq ?? 64;
  const bytesTrained = train.steps * batch * seq;
  const tcb = trainChunkBytes(f);
  const log = readLog(resolve(root, c.log));
  const curve = log.filter(l => 'eval_nats_per_byte' in l).map(l => ({
    step: l.step, bytes_trained: l.step * batch * seq, nats_per_byte: l.eval_nats_per_byte, bpb: l.eval_bpb,
  }));
  const trainLoss = log.filter(l => 'loss' in l);
  const result = {
    spec: specName, run: run.id, grid: run.grid, cell: run.cell, labels: run.labels, flags: run.flags,
    nats_per_byte: evj.nats_per_byte, bpb: evj.bpb, ppl: evj.ppl, eval_bytes: evj.bytes,
    bytes_trained: bytesTrained, steps: train.steps, seconds: train.seconds,
    estimate_seconds: Number.isFinite(estimate) ? Number(estimate.toPrecision(3)) : null,
    train_command: c.train, eval_command: c.eval,
    commit: gitCommit(), kernels: spec.kernels, threads: 1,
    config: f.config, family: p.family, quant: p.quant,
    params: p.params, live_params: p.params, reference_counted_params: refCountedParams(f, p),
    quant_params: p.quant_params, fp32_params: p.fp32_params,
    shape: { d_model: p.d_model, layers: p.layers, d_head: p.d_head ?? null, heads: p.heads ?? null, d_ff: p.d_ff ?? null,
      d_inner: p.d_inner ?? null, max_seq: p.max_seq ?? null, pos: p.pos ?? null, pathways: p.pathways ?? null, attn_top_k: p.attn_top_k ?? null },
    match: run.match ? { command: run.match.match_command, shape: run.match.shape } : null,
    train_file_bytes: tcb, epochs: tcb ? bytesTrained / tcb : null,
    train_split_eval: { nats_per_byte: train.nats_per_byte, bpb: train.bpb, bytes: train.bytes },
    final_train_loss: train.train_loss,
    curve,
    train_loss_curve: trainLoss.filter((l, i) => i % Math.max(1, Math.floor(trainLoss.length / 50)) === 0 || i === trainLoss.length - 1)
      .map(l => ({ step: l.step, loss: l.loss })),
    router: evj.router ? { weights: evj.router, entropy: evj.router_entropy, positions: evj.router_positions } : null,
    eval: evj,
  };
  return result;
}

// Commits one result with the report rebuilt from it (docs/RESULTS.md and its
// figures), so the committed report always matches the committed results.
async function commitResult(path, msg) {
  const rel = relative(root, path);
  let paths = shq(rel);
  if (outDir === join(root, 'research')) {
    const { report } = await import('./research-report.mjs');
    await report({ results: join(outDir, 'results'), out: join(root, 'docs/RESULTS.md'), figures: true, check: false, root, quiet: true });
    paths += ' docs/RESULTS.md docs/img/research';
  }
  for (let i = 0; i < 30; i++) {
    const a = await sh(`git add -- ${paths} && git commit -q -m ${shq(msg)} -- ${paths}`);
    if (a.code === 0) return;
    await new Promise(r => setTimeout(r, 2000));
  }
  process.stderr.write(`research: could not commit ${rel}; it is written, commit it by hand\n`);
}

// ---- sweep ----
function fmtDur(s) {
  if (!Number.isFinite(s)) return '?';
  s = Math.round(s);
  if (s >= 3600) return `${Math.floor(s / 3600)}h${String(Math.floor(s / 60) % 60).padStart(2, '0')}m`;
  if (s >= 60) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${s}s`;
}

function runBytes(f) { return runSteps(f) * (f.batch ?? 16) * (f.seq ?? 64); }

// A shape's cost from a short probe on a small slice, run as the runs are:
// one thread (ATOME_THREADS=1), the spec's kernel set. Seconds per step are
// the probe's steps after its first (the first pays for allocation and
// first-touch); peak memory is the probe's maximum resident set (GNU time),
// to which a run adds the data files it loads.
const PROBE_STEPS = 4;
const probeCache = new Map();
function probe(spec, f) {
  const keep = ['config', 'quant', 'batch', 'seq', 'd-model', 'layers', 'd-head', 'heads', 'kernel', 'attn-top-k', 'd-ff', 'd-inner', 'max-seq', 'pathways', 'attn-window', 'pos'];
  const args = ['train'];
  for (const k of keep) if (k in f) args.push(`--${k}`, String(f[k]));
  const key = args.join(' ');
  if (probeCache.has(key)) return probeCache.get(key);
  const batch = f.batch ?? 16, seq = f.seq ?? 64;
  const tmp = join(os.tmpdir(), `atome-probe-${process.pid}`);
  const one = (steps) => {
    const a = [...args, '--data', sharedPath('train'), '--max-bytes', String(batch * seq * 4), '--split', '0.75',
      '--steps', String(steps), '--out', `${tmp}.ckpt`, '--quiet', '--log', '/dev/null'];
    const out = execFileSync('/usr/bin/time', ['-f', '%M', '-o', `${tmp}.rss`, atome, ...a], { encoding: 'utf8',
      env: { ...process.env, ATOME_KERNELS: spec.kernels, ATOME_THREADS: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    return { s: lastJsonLine(out).seconds, kb: Number(readFileSync(`${tmp}.rss`, 'utf8').trim().split('\n').pop()) };
  };
  let r = { sps: NaN, rss: NaN };
  try {
    const a = one(1), b = one(1 + PROBE_STEPS);
    r = { sps: Math.max(0, b.s - a.s) / PROBE_STEPS, rss: 1024 * Math.max(a.kb, b.kb) };
  } catch {}
  rmSync(`${tmp}.ckpt`, { force: true });
  rmSync(`${tmp}.rss`, { force: true });
  probeCache.set(key, r);
  return r;
}
const estimateOf = (spec, f) => probe(spec, f).sps * runSteps(f);

// The run list with parameter counts: finished runs with the seconds they
// took, the others with an estimate from a single-thread probe per shape.
function dryRun(spec, name, plan, opts) {
  let total = 0;
  const rows = plan.map(({ run, p }) => {
    const rp = resultPath(name, run.id);
    const done = existsSync(rp);
    const rec = done ? JSON.parse(readFileSync(rp, 'utf8')) : null;
    const est = done ? null : estimateOf(spec, run.flags);
    if (!done) total += est;
    return { run: run.id, config: run.flags.config, quant: p.quant, params: p.params, steps: runSteps(run.flags),
      bytes: runBytes(run.flags), est_s: done ? null : Math.round(est), recorded_s: done ? Math.round(rec.seconds) : null,
      recorded_est_s: rec && Number.isFinite(rec.estimate_seconds) ? Math.round(rec.estimate_seconds) : null, done };
  });
  const w = Math.max(3, ...rows.map(r => r.run.length));
  console.log(`${'run'.padEnd(w)}  ${'config'.padEnd(12)} quant    params     steps   time`);
  for (const r of rows) {
    const t = r.done ? `${fmtDur(r.recorded_s)} (done${r.recorded_est_s !== null ? `; estimated ${fmtDur(r.recorded_est_s)}` : ''})` : `~${fmtDur(r.est_s)}`;
    console.log(`${r.run.padEnd(w)}  ${r.config.padEnd(12)} ${r.quant.padEnd(8)} ${String(r.params).padStart(7)} ${String(r.steps).padStart(9)}   ${t}`);
  }
  const jobs = opts.jobs || os.cpus().length;
  console.log(`${rows.length} runs, ${rows.filter(r => r.done).length} done; ~${fmtDur(total)} of CPU left on one thread per run (~${fmtDur(total / jobs)} at ${jobs} jobs)`);
  console.log(JSON.stringify({ spec: name, runs: rows, cpu_seconds_left: Math.round(total), jobs }));
}

// The runs of a sweep (those --filter keeps), each with its commands and
// its parameter count: every command can be built and every shape counted
// before anything runs.
function sweepPlan(path, opts) {
  const { spec, name, runs: all } = loadSpec(path);
  let runs = all;
  if (opts.filter) {
    let re;
    try { re = new RegExp(opts.filter); } catch (e) { die(`--filter: not a regular expression (${e.message})`); }
    runs = runs.filter(r => re.test(r.id));
    if (!runs.length) die(`--filter '${opts.filter}' matches none of the ${all.length} runs of ${name} (tools/research list ${path})`);
  }
  let plan;
  try { plan = runs.map(r => ({ run: r, cmd: commandsFor(name, spec, r), p: paramsOf(r.flags) })); }
  catch (e) { if (e instanceof SpecError) die(e.message); throw e; }
  return { spec, name, plan };
}

async function sweep(path, opts) {
  const { spec, name, plan } = sweepPlan(path, opts);
  if (opts.emit) return emit(path, name, spec, plan, opts);
  if (opts['dry-run']) return dryRun(spec, name, plan, opts);
  let todo = plan.filter(x => !existsSync(resultPath(name, x.run.id)));
  const doneAtStart = plan.length - todo.length;
  if (opts.limit) todo = todo.slice(0, opts.limit);
  const jobs = Math.max(1, opts.jobs || os.cpus().length);
  const running = new Map();
  let finished = 0, failed = 0, doneBytes = 0, doneSeconds = 0;
  const t0 = Date.now();
  const progress = () => {
    const cur = [...running.values()].map(x => `${x.run.id} ${logStep(resolve(root, x.cmd.log))}/${x.cmd.steps}`);
    const left = todo.slice(finished + failed).reduce((s, x) => s + runBytes(x.run.flags), 0);
    const curDone = [...running.values()].reduce((s, x) => s + logStep(resolve(root, x.cmd.log)) * (x.run.flags.batch ?? 16) * (x.run.flags.seq ?? 64), 0);
    const el = (Date.now() - t0) / 1000;
    const rate = (doneBytes + curDone) / Math.max(1, el);
    const eta = rate > 0 ? (left - curDone) / rate : NaN;
    process.stderr.write(`research: ${name}: ${doneAtStart + finished}/${plan.length} done${failed ? `, ${failed} failed` : ''}; running ${cur.join(', ') || '-'}; ETA ${fmtDur(eta)}\n`);
  };
  const timer = setInterval(progress, opts.every ? opts.every * 1000 : 30000);
  let next = 0;
  await new Promise((resolveAll) => {
    const launch = () => {
      while (running.size < jobs && next < todo.length) {
        const x = todo[next++];
        running.set(x.run.id, x);
        runCell(name, spec, x.run, { commit: opts.commit }).then(r => {
          finished++;
          doneBytes += runBytes(x.run.flags);
          doneSeconds += r.result.seconds;
        }).catch(e => { failed++; process.stderr.write(`research: ${e.message}\n`); })
          .finally(() => { running.delete(x.run.id); if (running.size === 0 && next >= todo.length) resolveAll(); else launch(); });
      }
      if (running.size === 0 && next >= todo.length) resolveAll();
    };
    launch();
  });
  clearInterval(timer);
  progress();
  console.log(JSON.stringify({ spec: name, runs: plan.length, done: doneAtStart + finished, ran: finished, failed, seconds: Math.round((Date.now() - t0) / 1000) }));
  if (failed) process.exitCode = 1;
}

// ---- emitted job lists ----
// Only the selected runs without a result are emitted. The Slurm script
// carries no path of this machine: the checkout comes from ATOME_ROOT (or the
// directory sbatch was called from) and the log folder from ATOME_LOG_DIR
// (default <checkout>/research/runs/<spec>), both read when a task starts;
// --time and --mem come from the single-thread probe of the costliest run.
function slurmLimits(spec, todo) {
  let sec = 0, mem = 0;
  const fileBytes = (v) => { try { return statSync(sharedPath(v)).size; } catch { return 0; } };
  for (const x of todo) {
    const f = x.run.flags;
    sec = Math.max(sec, estimateOf(spec, f));
    const data = fileBytes(f.data) + (f.valid ? fileBytes(f.valid) : 0) + fileBytes((spec.eval || {}).data || 'valid');
    mem = Math.max(mem, probe(spec, f).rss + data);
  }
  if (!Number.isFinite(sec) || !Number.isFinite(mem)) die('--emit slurm: the timing probe failed (is build/native/atome built?)', 1);
  const t = Math.ceil(sec * 1.5 + 600);
  const time = `${Math.floor(t / 86400)}-${String(Math.floor(t / 3600) % 24).padStart(2, '0')}:${String(Math.floor(t / 60) % 60).padStart(2, '0')}:${String(t % 60).padStart(2, '0')}`;
  return { time, memMB: Math.max(256, Math.ceil(mem * 1.5 / 2 ** 20)), estimate_s: Math.round(sec) };
}

function slurmScript(specRel, name, todo, lim, outName) {
  const logDefault = process.env.ATOME_RESEARCH_DIR ? `${outRel}/runs/${name}` : `research/runs/${name}`;
  return [
    '#!/usr/bin/env bash',
    `# tools/research sweep ${specRel} --emit slurm: one array task per run of the spec`,
    '# that had no result when this was written (the same result files as the built-in runner).',
    `# Submit from the checkout, or from anywhere with ATOME_ROOT=<checkout>: sbatch ${outName}`,
    `# Logs: $ATOME_LOG_DIR, default <checkout>/${logDefault}/, one file per task.`,
    `# --time: the costliest run's single-thread estimate (${fmtDur(lim.estimate_s)}) x 1.5 + 10 min;`,
    '# --mem: its probe\'s peak resident set plus the data files it loads, x 1.5.',
    `#SBATCH --job-name=atome-${name}`,
    `#SBATCH --array=0-${todo.length - 1}`,
    '#SBATCH --ntasks=1',
    '#SBATCH --cpus-per-task=1',
    `#SBATCH --time=${lim.time}`,
    `#SBATCH --mem=${lim.memMB}M`,
    'set -euo pipefail',
    'ROOT="${ATOME_ROOT:-${SLURM_SUBMIT_DIR:-$PWD}}"',
    `[ -x "$ROOT/tools/research" ] || { echo "atome-${name}: '$ROOT' is not an Atome checkout: set ATOME_ROOT" >&2; exit 2; }`,
    'cd "$ROOT"',
    ...(process.env.ATOME_RESEARCH_DIR ? [`export ATOME_RESEARCH_DIR=${shq(outRel)}`] : []),
    `LOG="\${ATOME_LOG_DIR:-${logDefault.startsWith('/') ? logDefault : `$ROOT/${logDefault}`}}"`,
    'mkdir -p "$LOG"',
    'exec > "$LOG/slurm-${SLURM_ARRAY_JOB_ID:-local}_${SLURM_ARRAY_TASK_ID}.out" 2>&1',
    `RUNS=(${todo.map(x => shq(x.run.id)).join(' ')})`,
    `exec tools/research run ${shq(specRel)} --run "\${RUNS[$SLURM_ARRAY_TASK_ID]}"`,
    '',
  ].join('\n');
}

function emit(path, name, spec, plan, opts) {
  if (!opts.out) die('--emit needs --out FILE');
  if (opts.emit !== 'gnu-parallel' && opts.emit !== 'slurm') die(`--emit takes gnu-parallel or slurm (got '${opts.emit}')`);
  const todo = plan.filter(x => !existsSync(resultPath(name, x.run.id)));
  if (!todo.length) die(`every selected run of ${name} has a result: nothing to emit`);
  const specRel = relative(root, resolve(path));
  const tool = process.env.ATOME_RESEARCH_DIR ? `ATOME_RESEARCH_DIR=${shq(outRel)} tools/research` : 'tools/research';
  let text, extra = {};
  if (opts.emit === 'gnu-parallel') {
    text = todo.map(x => `cd "\${ATOME_ROOT:-${root}}" && ${tool} run ${shq(specRel)} --run ${shq(x.run.id)}`).join('\n') + '\n';
  } else {
    const lim = slurmLimits(spec, todo);
    text = slurmScript(specRel, name, todo, lim, basename(opts.out));
    extra = { time: lim.time, mem_mb: lim.memMB };
  }
  writeAtomic(resolve(opts.out), text);
  console.log(JSON.stringify({ spec: name, emit: opts.emit, out: opts.out, runs: todo.length, done: plan.length - todo.length, ...extra }));
}

// ---- main ----
async function main() {
  const [cmd, ...rest] = process.argv.slice(2);
  process.on('SIGINT', () => { killChildren(); process.exit(130); });
  process.on('SIGTERM', () => { killChildren(); process.exit(143); });
  if (!cmd || cmd === '--help' || cmd === '-h') {
    console.log(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(2, 8).map(l => l.replace(/^\/\/ ?/, '')).join('\n'));
    return;
  }
  if (cmd === 'sweep') {
    const o = parseArgs(rest, { jobs: 'int', 'dry-run': 'flag', emit: 'str', out: 'str', filter: 'str', limit: 'int', commit: 'flag', every: 'int' }, 'sweep');
    if (o._.length !== 1) die(USAGE.sweep.split('\n')[0]);
    return sweep(o._[0], o);
  }
  if (cmd === 'run') {
    const o = parseArgs(rest, { run: 'str', commit: 'flag' }, 'run');
    if (o._.length !== 1 || !o.run) die(USAGE.run.split('\n')[0]);
    const { spec, name, runs } = loadSpec(o._[0]);
    const run = runs.find(r => r.id === o.run);
    if (!run) die(`${name} has no run '${o.run}' (tools/research list ${o._[0]})`);
    try {
      const r = await runCell(name, spec, run, { commit: o.commit });
      console.log(JSON.stringify({ spec: name, run: run.id, skipped: !!r.skipped, nats_per_byte: r.result.nats_per_byte, bpb: r.result.bpb }));
    } catch (e) { die(e.message, 1); }
    return;
  }
  if (cmd === 'list') {
    const o = parseArgs(rest, {}, 'list');
    if (o._.length !== 1) die(USAGE.list.split('\n')[0]);
    const { name, runs } = loadSpec(o._[0]);
    for (const r of runs) console.log(`${r.id}\t${existsSync(resultPath(name, r.id)) ? 'done' : 'todo'}\t${JSON.stringify(r.flags)}`);
    return;
  }
  if (cmd === 'report') {
    const o = parseArgs(rest, { results: 'str', out: 'str', 'no-figures': 'flag', check: 'flag' }, 'report');
    const { report } = await import('./research-report.mjs');
    return report({ results: resolve(o.results || join(root, 'research/results')), out: resolve(o.out || join(root, 'docs/RESULTS.md')),
      figures: !o['no-figures'], check: !!o.check, root });
  }
  die(`unknown command '${cmd}' (sweep, run, list, report)`);
}

main().catch(e => die(e.stack || String(e), 1));
