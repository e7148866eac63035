#!/usr/bin/env node
// tools/harness/protocol-r.mjs — runs Protocol R (issue #2) with the native CLI and
// writes the results table.
//
// Protocol R: the first 500,000 bytes of tinystories-train.txt, 64-byte chunks,
// contiguous 90/10 split, 3,000 steps, batch 16, lr 3e-4 constant, for
// atome-60k (ternary), vanilla-60k and vanilla-6k (fp32), seeds 0 1 2.
//
// Usage: node tools/harness/protocol-r.mjs [--seeds 0,1,2] [--steps 3000] [--out-dir runs/protocol-r]
//        [--models atome-60k:ternary,vanilla-60k:fp32,vanilla-6k:fp32] [--md FILE]
// Each run writes CKPT, its training log and the eval JSON into out-dir; runs
// already finished (eval JSON present) are not repeated. Prints a markdown
// table and one JSON line; with --md FILE also writes the table there.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync, renameSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const args = process.argv.slice(2);
const opt = (name, def) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : def; };
const seeds = opt('--seeds', '0,1,2').split(',').map(Number);
const steps = Number(opt('--steps', '3000'));
const outDir = resolve(opt('--out-dir', join(root, 'runs/protocol-r')));
const models = opt('--models', 'atome-60k:ternary,vanilla-60k:fp32,vanilla-6k:fp32')
  .split(',').map(s => { const [config, quant] = s.split(':'); return { config, quant }; });
const mdFile = opt('--md', null);
const shared = process.env.ATOME_SHARED_DIR || resolve(root, '../shared');
const data = join(shared, 'data/tinystories-train.txt');
const atome = join(root, 'build/native/atome');
if (!existsSync(atome)) { console.error(`protocol-r: ${atome} missing; run tools/setup first`); process.exit(1); }
if (!existsSync(data)) { console.error(`protocol-r: corpus ${data} missing (set ATOME_SHARED_DIR)`); process.exit(1); }
mkdirSync(outDir, { recursive: true });

const common = ['--data', data, '--max-bytes', '500000', '--split', '0.9',
  '--steps', String(steps), '--batch', '16', '--seq', '64', '--lr', '3e-4'];
const rows = [];
for (const { config, quant } of models) {
  for (const seed of seeds) {
    const tag = `${config}-${quant}-s${seed}-${steps}`;
    const ckpt = join(outDir, `${tag}.ckpt`);
    const evalPath = join(outDir, `${tag}.eval.json`);
    const trainCmd = ['train', '--config', config, '--quant', quant, ...common, '--seed', String(seed),
      '--out', ckpt, '--quiet'];
    const evalCmd = ['eval', '--model', ckpt, '--data', data, '--max-bytes', '500000', '--split', '0.9'];
    if (!existsSync(evalPath)) {
      const t0 = process.hrtime.bigint();
      execFileSync(atome, trainCmd, { stdio: ['ignore', 'ignore', 'inherit'] });
      const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
      const ev = JSON.parse(execFileSync(atome, evalCmd, { encoding: 'utf8' }).trim().split('\n').pop());
      const params = JSON.parse(execFileSync(atome, ['params', '--config', config], { encoding: 'utf8' })).params;
      const rec = { config, quant, seed, steps, params, seconds, ...ev };
      writeFileSync(evalPath + '.tmp', JSON.stringify(rec) + '\n');
      renameSync(evalPath + '.tmp', evalPath);
    }
    const rec = JSON.parse(readFileSync(evalPath, 'utf8'));
    rows.push(rec);
    console.error(`protocol-r: ${tag}: bpb ${rec.bpb.toFixed(4)} ppl ${rec.ppl.toFixed(3)} (${rec.seconds.toFixed(1)} s)`);
  }
}

const fmt = (x, d) => x.toFixed(d);
let md = '| model | quant | seed | params | bpb | ppl | nats/byte | eval bytes | train seconds |\n';
md += '|---|---|---:|---:|---:|---:|---:|---:|---:|\n';
for (const r of rows)
  md += `| ${r.config} | ${r.quant} | ${r.seed} | ${r.params.toLocaleString('en-US')} | ${fmt(r.bpb, 4)} | ${fmt(r.ppl, 3)} | ${fmt(r.nats_per_byte, 4)} | ${r.bytes} | ${fmt(r.seconds, 1)} |\n`;
md += '\n| model | quant | mean bpb | min | max | mean ppl |\n|---|---|---:|---:|---:|---:|\n';
const summary = {};
for (const { config, quant } of models) {
  const rs = rows.filter(r => r.config === config && r.quant === quant);
  const b = rs.map(r => r.bpb), p = rs.map(r => r.ppl);
  const mean = a => a.reduce((x, y) => x + y, 0) / a.length;
  summary[`${config}:${quant}`] = { mean_bpb: mean(b), min_bpb: Math.min(...b), max_bpb: Math.max(...b), mean_ppl: mean(p), seeds: rs.map(r => r.seed) };
  md += `| ${config} | ${quant} | ${fmt(mean(b), 4)} | ${fmt(Math.min(...b), 4)} | ${fmt(Math.max(...b), 4)} | ${fmt(mean(p), 3)} |\n`;
}
process.stdout.write(md);
console.log(JSON.stringify({ protocol: 'R', steps, seeds, summary, runs: rows }));
if (mdFile) writeFileSync(mdFile, md);
