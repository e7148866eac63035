#!/usr/bin/env node
// tools/bench-web-train.mjs — the page's default training run, end to end,
// in headless Chromium, next to the same run in Node's wasm and natively,
// measured in the same invocation (not a test: tools/test does not run it).
//
//   node tools/bench-web-train.mjs [--steps 3000] [--rounds 1] [--skip node,native]
//   node tools/bench-web-train.mjs --preset quick|reference [--threads 1,2] [--rounds 1]
//
// --preset: the page's own run of that preset (#train-preset), in Chromium
// only, once per thread count (#train-threads; the page is cross-origin
// isolated), same invocation: wall-clock from the click to done, the
// trainer's time, the page's validation bpb, and the downloaded ATOME02 model
// scored by the native `atome eval` on tinystories-valid.txt and on unseen
// TinyStories text (tinystories-train.txt from byte 8,000,000: no preset
// trains past its first 2,000,000 bytes). Ratios are against one thread.
//
// The run is the page's default: atome-60k ternary, batch 16 x seq 64, lr
// 3e-4 constant, seed 0, the first 500,000 bytes of the built-in corpus web/data/tinystories-2m.txt
// (90% train / 10% validation chunks), a validation pass at step 0, every
// 500 steps and at the end, a sample every 500 steps, checkpoints to
// IndexedDB every 3 s. Three ways:
//   chromium  the page (tools/serve on 127.0.0.1, Debian's chromium through
//             playwright-core): wall-clock from the click on #train-start to
//             #train-status data-state=done (worker start-up, corpus fetch,
//             evaluations, samples, saves and the final export included), and
//             the trainer's own time (the worker's sum over its training
//             slices, `seconds` of the done message);
//   node      the same steps, evaluations and samples with build/wasm/atome.wasm
//             in Node (wall-clock of the whole run; trainer time too);
//   native    `atome train` with the same flags, single thread, its fastest
//             kernels (wall-clock of the process; its summary's `seconds`).
// trained bytes/s = steps * batch * (seq - 1) / seconds. The rounds take
// turns (chromium, node, native) and each way reports its best round.
// Output: a table, then one line "JSON: {...}".
import { existsSync, readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { loadAtome } from '../../wasm/atome.mjs';
import { startServer, missingArtifacts } from '../web/serve.mjs';
import { launchChromium } from '../web/chromium.mjs';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const args = { steps: 3000, rounds: 1, skip: '', preset: '', threads: '1,2' };
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  if (a === '--help' || a === '-h') {
    const lines = readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(1);
    process.stdout.write(lines.slice(0, lines.findIndex((l) => !l.startsWith('//'))).map((l) => l.replace(/^\/\/ ?/, '')).join('\n') + '\n');
    process.exit(0);
  }
  const k = a.replace(/^--/, '');
  if (!(k in args) || i + 1 >= process.argv.length) { console.error(`bench-web-train: unknown flag or missing value: ${a}`); process.exit(2); }
  args[k] = ['skip', 'preset', 'threads'].includes(k) ? process.argv[++i] : Number(process.argv[++i]);
}
const skip = new Set(args.skip.split(',').filter(Boolean));
const S = { config: 'atome-60k', batch: 16, seq: 64, lr: 3e-4, seed: 0, every: 500 };
const corpus = () => new Uint8Array(readFileSync(path.join(repo, 'web/data/tinystories-2m.txt'))).subarray(0, 500000);
const predicted = args.steps * S.batch * (S.seq - 1);

// Opens the page at `query`, presses Start training and waits for the run to
// end; its wall time, the status and the training panel's text (throws if the
// run ended in an error).
async function trainOnPage(page, port, query) {
  await page.goto(`http://127.0.0.1:${port}/${query}`);
  await page.waitForFunction(() => !document.getElementById('train-start').disabled, null, { timeout: 30000 });
  const note = await page.textContent('#train-preset-note');
  const t0 = Date.now();
  await page.click('#train-start');
  await page.waitForFunction(() => ['done', 'error'].includes(document.getElementById('train-status').dataset.state),
    null, { timeout: 30 * 60000, polling: 100 });
  const wall = (Date.now() - t0) / 1000;
  const r = await page.evaluate(() => ({ state: document.getElementById('train-status').dataset.state,
    valBpb: Number(document.getElementById('train-status').dataset.valBpb), text: document.getElementById('train-text').textContent,
    error: document.getElementById('error-text').textContent, threads: document.getElementById('train-threads').value,
    // the samples list is newest first (web/chart.mjs addSample)
    samples: [...document.querySelectorAll('#samples .sample')].map((d) => d.textContent).slice(0, 1) }));
  if (r.state !== 'done') throw new Error(`the page's run ended in ${r.state}: ${r.error}`);
  return { ...r, wall_s: wall, trainer_s: Number(r.text.match(/steps in ([\d.]+) s/)[1]), note };
}

async function chromiumRun() {
  const missing = missingArtifacts();
  if (missing.length) throw new Error(`missing ${missing.map(([f]) => f).join(', ')}: run tools/setup`);
  const server = await startServer({ port: 0 });
  const browser = await launchChromium();
  try {
    const r = await trainOnPage(await browser.newPage(), server.address().port, `?steps=${args.steps}`);
    return { wall_s: r.wall_s, trainer_s: r.trainer_s, val_bpb: r.valBpb };
  } finally { await browser.close(); server.close(); }
}

async function nodeRun() {
  const atome = await loadAtome(readFileSync(path.join(repo, 'build/wasm/atome.wasm')));
  const t0 = performance.now();
  const m = atome.createModel(S.config, { seed: S.seed, steps: args.steps, batch: S.batch, seq: S.seq, lr: S.lr });
  m.setData(corpus(), { split: 0.9, trainName: 'tinystories-500k.txt' });
  let trainer = 0;
  m.evaluate({ batch: 16 });
  while (m.step < m.steps) {
    const k = Math.min(S.every - (m.step % S.every), m.steps - m.step);
    const a = performance.now();
    for (let i = 0; i < k; i++) m.trainSteps(1);
    trainer += performance.now() - a;
    if (m.step % S.every === 0) {
      if (m.step < m.steps) m.evaluate({ batch: 16 });
      m.generateBytes('Once upon a time', { n: 160, temperature: '0.8', topK: 40, seed: 1 });
    }
  }
  const v = m.evaluate({ batch: 16 }).bpb;
  m.exportAtome({ encoding: 1 });
  m.exportAtome({ encoding: 2 });
  m.saveCheckpoint();
  const wall = (performance.now() - t0) / 1000;
  m.free();
  return { wall_s: wall, trainer_s: trainer / 1000, val_bpb: v };
}

function nativeRun() {
  const tmp = mkdtempSync(path.join(tmpdir(), 'atome-bench-web-'));
  const bin = path.join(process.env.ATOME_NATIVE_BUILD ?? path.join(repo, 'build/native'), 'atome');
  if (!existsSync(bin)) throw new Error(`missing ${bin}: run tools/setup`);
  const corpusFile = path.join(tmp, 'tinystories-500k.txt');
  writeFileSync(corpusFile, corpus());
  const a = ['train', '--config', S.config, '--quant', 'ternary', '--data', corpusFile, '--split', '0.9', '--steps', String(args.steps),
    '--batch', String(S.batch), '--seq', String(S.seq), '--lr', String(S.lr), '--seed', String(S.seed), '--eval-every', String(S.every),
    '--out', path.join(tmp, 'n.ckpt'), '--quiet'];
  const t0 = performance.now();
  return new Promise((resolve, reject) => execFile(bin, a, { maxBuffer: 1 << 24 }, (err, stdout) => {
    const wall = (performance.now() - t0) / 1000;
    rmSync(tmp, { recursive: true, force: true });
    if (err) { reject(err); return; }
    const j = JSON.parse(stdout.trim().split('\n').at(-1));
    resolve({ wall_s: wall, trainer_s: j.seconds, val_bpb: j.bpb });
  }));
}

if (args.preset) { await presetBench(); process.exit(0); }

// The page's run of one preset on `threads` threads; the model it made.
async function presetRun(threads) {
  const server = await startServer({ port: 0 });
  const browser = await launchChromium();
  try {
    const ctx = await browser.newContext({ acceptDownloads: true });
    const page = await ctx.newPage();
    const r = await trainOnPage(page, server.address().port, `?train-preset=${args.preset}&train-threads=${threads}`);
    const [d] = await Promise.all([page.waitForEvent('download'), page.click('#download-atome02')]);
    const tmp = mkdtempSync(path.join(tmpdir(), 'atome-bench-preset-'));
    const file = path.join(tmp, 'model.atome');
    await d.saveAs(file);
    return { threads: Number(r.threads), wall_s: r.wall_s, trainer_s: r.trainer_s, val_bpb: r.valBpb,
      note: r.note, sample: r.samples[0] ?? '', file, tmp };
  } finally { await browser.close(); server.close(); }
}

function evalNative(model, data, extra = []) {
  const bin = path.join(process.env.ATOME_NATIVE_BUILD ?? path.join(repo, 'build/native'), 'atome');
  return new Promise((resolve, reject) => execFile(bin, ['eval', '--model', model, '--data', data, ...extra], { maxBuffer: 1 << 24 },
    (err, stdout) => (err ? reject(err) : resolve(JSON.parse(stdout.trim().split('\n').at(-1)).bpb))));
}

async function presetBench() {
  const shared = process.env.ATOME_SHARED_DIR ?? path.join(repo, '../shared');
  const valid = path.join(shared, 'data/tinystories-valid.txt');
  const unseenSrc = path.join(shared, 'data/tinystories-train.txt');
  const unseen = path.join(mkdtempSync(path.join(tmpdir(), 'atome-unseen-')), 'unseen.txt');
  const { writeFileSync } = await import('node:fs');
  writeFileSync(unseen, readFileSync(unseenSrc).subarray(8000000, 9000000));
  const counts = args.threads.split(',').map(Number);
  const best = {};
  for (let r = 0; r < args.rounds; r++)
    for (const t of counts) {
      const x = await presetRun(t);
      x.valid_bpb = await evalNative(x.file, valid);
      x.unseen_bpb = await evalNative(x.file, unseen);
      rmSync(x.tmp, { recursive: true, force: true });
      delete x.file; delete x.tmp;
      process.stderr.write(`round ${r + 1}, ${t} thread(s): ${x.wall_s.toFixed(1)} s wall, ${x.trainer_s.toFixed(1)} s trainer, ` +
        `valid ${x.valid_bpb.toFixed(4)} bpb, unseen ${x.unseen_bpb.toFixed(4)} bpb\n`);
      if (!best[t] || x.wall_s < best[t].wall_s) best[t] = x;
    }
  const one = best[1];
  console.log(`the page's ${args.preset} preset in headless Chromium, best of ${args.rounds} round(s)`);
  console.log('| threads | wall s | trainer s | vs 1 thread | page val bpb | valid.txt bpb | unseen bpb |');
  console.log('|--------:|-------:|----------:|------------:|-------------:|--------------:|-----------:|');
  for (const x of Object.values(best))
    console.log(`| ${x.threads} | ${x.wall_s.toFixed(1)} | ${x.trainer_s.toFixed(1)} | ${one ? (one.wall_s / x.wall_s).toFixed(2) + 'x' : '-'} | ` +
      `${x.val_bpb.toFixed(4)} | ${x.valid_bpb.toFixed(4)} | ${x.unseen_bpb.toFixed(4)} |`);
  const last = Object.values(best).at(-1);
  console.log(`sample: ${JSON.stringify(last.sample)}`);
  console.log(`JSON: ${JSON.stringify({ bench: 'web-train-preset', preset: args.preset, rounds: args.rounds, runs: Object.values(best).map((x) => ({
    ...x, vs_1thread: one ? +(one.wall_s / x.wall_s).toFixed(3) : null })) })}`);
}

const ways = [['chromium', chromiumRun], ['node', nodeRun], ['native', nativeRun]].filter(([k]) => !skip.has(k));
const best = {};
for (let r = 0; r < args.rounds; r++) {
  for (const [k, fn] of ways) {
    const x = await fn();
    if (!best[k] || x.wall_s < best[k].wall_s) best[k] = x;
    process.stderr.write(`round ${r + 1} ${k}: ${x.wall_s.toFixed(1)} s wall, ${x.trainer_s.toFixed(1)} s trainer, val ${x.val_bpb.toFixed(4)} bpb\n`);
  }
}
for (const x of Object.values(best)) {
  x.bytes_per_s = predicted / x.wall_s;
  x.trainer_bytes_per_s = predicted / x.trainer_s;
}
const row = (k, x) => `| ${k.padEnd(8)} | ${x.wall_s.toFixed(1).padStart(7)} | ${Math.round(x.bytes_per_s).toLocaleString('en-US').padStart(9)} | ` +
  `${x.trainer_s.toFixed(1).padStart(9)} | ${Math.round(x.trainer_bytes_per_s).toLocaleString('en-US').padStart(9)} | ${x.val_bpb.toFixed(4)} |`;
console.log(`atome-60k ternary, ${args.steps} steps of ${S.batch} x ${S.seq} (${predicted.toLocaleString('en-US')} trained bytes), ` +
  `built-in corpus; best of ${args.rounds} round(s)`);
console.log('| run      | wall s  | bytes/s   | trainer s | bytes/s   | val bpb |');
console.log('|----------|--------:|----------:|----------:|----------:|--------:|');
for (const [k, x] of Object.entries(best)) console.log(row(k, x));
const ratio = (a, b) => (best[a] && best[b] ? +(best[b].wall_s / best[a].wall_s).toFixed(3) : null);
const out = { config: S.config, steps: args.steps, batch: S.batch, seq: S.seq, trained_bytes: predicted, rounds: args.rounds,
  runs: best, chromium_vs_native: ratio('chromium', 'native'), chromium_vs_node: ratio('chromium', 'node'),
  goal_s: 45, chromium_meets_goal: best.chromium ? best.chromium.wall_s <= 45 : null };
console.log(`JSON: ${JSON.stringify(out)}`);
