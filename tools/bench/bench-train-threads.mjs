#!/usr/bin/env node
// tools/bench/bench-train-threads.mjs — the measure of the trainer's
// threads: the training loop's own `seconds` from `atome train`'s JSON line,
// one thread against more, runs taking turns in the same invocation.
//
//   node tools/bench/bench-train-threads.mjs [--configs atome-60k:1500,atome-944k:100]
//                                      [--threads 1,2] [--rounds 5] [--bin build/native/atome]
//
// Each config is NAME:STEPS (batch 16 x seq 64, the CLI's defaults) on the
// first 2,000,000 bytes of tinystories-train.txt (ATOME_SHARED_DIR, default
// ../shared). A round runs every thread count once, in order, so a busy
// spell of the machine (this VM's speed drifts by a third) lands on both
// sides. Every run's final line must carry the same held-out bpb as the
// one-thread run (the pool keeps the bits), or the bench fails. Prints a
// table (best and median seconds per count, and their ratios to one thread,
// best/best and median/median, plus the range of the per-round ratios) and
// one line "JSON: {...}". Builds nothing: build the native preset first.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readSync, closeSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

function parseArgs(argv) {
  const o = { configs: 'atome-60k:1500,atome-944k:100', threads: '1,2', rounds: 5, bin: join(ROOT, 'build/native/atome') };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i], v = argv[i + 1];
    if (k === '--help' || k === '-h') { o.help = true; continue; }
    if (!['--configs', '--threads', '--rounds', '--bin'].includes(k) || v === undefined) {
      throw new Error(`unknown or incomplete option ${k} (see --help)`);
    }
    o[k.slice(2)] = k === '--rounds' ? Number(v) : v;
    i++;
  }
  o.threads = String(o.threads).split(',').map(Number);
  if (!o.threads.every((n) => Number.isInteger(n) && n >= 1) || o.threads[0] !== 1) throw new Error('--threads: counts from 1, e.g. 1,2');
  if (!Number.isInteger(o.rounds) || o.rounds < 1) throw new Error('--rounds: a positive integer');
  o.configs = String(o.configs).split(',').map((c) => {
    const [name, steps] = c.split(':');
    if (!name || !(Number(steps) > 0)) throw new Error(`--configs: NAME:STEPS, got ${c}`);
    return { name, steps: Number(steps) };
  });
  return o;
}

function corpusSlice(dir) {
  const shared = process.env.ATOME_SHARED_DIR || join(ROOT, '..', 'shared');
  const src = join(shared, 'data', 'tinystories-train.txt');
  if (!existsSync(src)) throw new Error(`no corpus at ${src} (set ATOME_SHARED_DIR)`);
  const buf = Buffer.alloc(2000000);
  const fd = openSync(src, 'r');
  const n = readSync(fd, buf, 0, buf.length, 0);
  closeSync(fd);
  const out = join(dir, 'train-2m.txt');
  writeFileSync(out, buf.subarray(0, n));
  return out;
}

function trainOnce(o, dir, data, cfg, threads) {
  const out = execFileSync(o.bin, ['train', '--config', cfg.name, '--data', data, '--out', join(dir, `t${threads}.ckpt`),
    '--steps', String(cfg.steps), '--threads', String(threads), '--quiet'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const line = out.trim().split('\n').pop();
  const j = JSON.parse(line);
  return { seconds: j.seconds, bpb: j.bpb };
}

const median = (a) => { const s = [...a].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

function benchConfig(o, dir, data, cfg) {
  const secs = Object.fromEntries(o.threads.map((t) => [t, []]));
  let bpb = null;
  for (let r = 0; r < o.rounds; r++) {
    for (const t of o.threads) {
      const run = trainOnce(o, dir, data, cfg, t);
      if (bpb === null) bpb = run.bpb;
      else if (run.bpb !== bpb) throw new Error(`${cfg.name}: ${t} threads gave bpb ${run.bpb}, one thread ${bpb}`);
      secs[t].push(run.seconds);
      process.stderr.write(`${cfg.name} round ${r + 1}, ${t} thread(s): ${run.seconds.toFixed(2)} s\n`);
    }
  }
  const one = secs[1];
  return o.threads.map((t) => {
    const pairs = secs[t].map((s, i) => one[i] / s);
    return {
      config: cfg.name, steps: cfg.steps, threads: t, seconds: secs[t].map((s) => +s.toFixed(3)),
      best_s: +Math.min(...secs[t]).toFixed(3), median_s: +median(secs[t]).toFixed(3),
      best_ratio: +(Math.min(...one) / Math.min(...secs[t])).toFixed(3),
      median_ratio: +(median(one) / median(secs[t])).toFixed(3),
      round_ratio_min: +Math.min(...pairs).toFixed(3), round_ratio_max: +Math.max(...pairs).toFixed(3), bpb,
    };
  });
}

function main() {
  const o = parseArgs(process.argv.slice(2));
  if (o.help) {
    console.log('usage: node tools/bench/bench-train-threads.mjs [--configs atome-60k:1500,atome-944k:100] [--threads 1,2] [--rounds 5] [--bin PATH]');
    return;
  }
  if (!existsSync(o.bin)) throw new Error(`no ${o.bin}: build the native preset first (cmake --build --preset native)`);
  const dir = mkdtempSync(join(tmpdir(), 'atome-bench-threads-'));
  try {
    const data = corpusSlice(dir);
    const rows = o.configs.flatMap((cfg) => benchConfig(o, dir, data, cfg));
    console.log(`atome train's own seconds, ${o.rounds} round(s), counts taking turns`);
    console.log('| config | steps | threads | best s | median s | best/best | median/median | per-round ratios |');
    console.log('|---|---:|---:|---:|---:|---:|---:|---|');
    for (const r of rows) {
      console.log(`| ${r.config} | ${r.steps} | ${r.threads} | ${r.best_s.toFixed(2)} | ${r.median_s.toFixed(2)} | ${r.best_ratio.toFixed(2)}x | ${r.median_ratio.toFixed(2)}x | ${r.round_ratio_min.toFixed(2)}-${r.round_ratio_max.toFixed(2)}x |`);
    }
    console.log('JSON: ' + JSON.stringify({ bench: 'train-threads', rounds: o.rounds, results: rows }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

try {
  main();
} catch (e) {
  console.error(`bench-train-threads: ${e.message}`);
  process.exit(2);
}
