// tests/node/models.test.mjs — the shipped models against their cards:
// models/ holds exactly two .atome files (the board model atome-60k.atome and
// the web model, the largest one whose name does not contain atome-60k), each
// with its card (models/<name>.md, written by tools/models/model-card.mjs) and
// training log; each opens natively and in wasm with the card's size and
// parameter count; re-scored natively on the fixed first 64 KiB of
// tinystories-valid.txt it matches the card within 0.5 %, and the wasm
// engine gives the same bytes as the native one; the board model fits the
// micro:bit image at window 32, both fit the mps2-an385 slot and the
// Raspberry Pi Pico at window 64.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { repo, sharedDir, native, load } from './artifacts.mjs';

const MODELS = path.join(repo, 'models');
const VALID = path.join(sharedDir, 'data/tinystories-valid.txt');

function card(name) {
  const md = readFileSync(path.join(MODELS, `${name}.md`), 'utf8');
  const m = md.match(/<!-- card: (\{.*\}) -->/);
  assert.ok(m, `models/${name}.md has no card line`);
  return JSON.parse(m[1]);
}

const shipped = () => readdirSync(MODELS).filter((f) => f.endsWith('.atome')).sort();

test('models/ ships the board model and the web model, each with its card and log', () => {
  const files = shipped();
  assert.equal(files.length, 2, `models/ holds ${files.join(', ')}`);
  assert.ok(files.includes('atome-60k.atome'));
  const web = files.filter((f) => !f.includes('atome-60k')).sort((a, b) => statSync(path.join(MODELS, b)).size - statSync(path.join(MODELS, a)).size)[0];
  assert.ok(web, 'no web model');
  for (const f of files) {
    const n = f.replace(/\.atome$/, '');
    for (const ext of ['.md', '.log.jsonl']) assert.ok(existsSync(path.join(MODELS, n + ext)), `models/${n}${ext} is missing`);
    // the board model's float checkpoint is committed; the web model's (3.8 MB) is not: kept out of git
    if (n === 'atome-60k') assert.ok(existsSync(path.join(MODELS, n + '.ckpt')), `models/${n}.ckpt is missing`);
    const log = readFileSync(path.join(MODELS, `${n}.log.jsonl`), 'utf8').trim().split('\n');
    assert.ok(log.length > 10 && log.length < 600, `${n}.log.jsonl has ${log.length} lines (kept small)`);
    for (const l of log) JSON.parse(l);
  }
  // models/README.md indexes them with the cards' figures
  const idx = readFileSync(path.join(MODELS, 'README.md'), 'utf8').split('\n');
  for (const f of files) {
    const c = card(f.replace(/\.atome$/, ''));
    const row = idx.find((l) => l.startsWith(`| \`${f}\` |`));
    assert.ok(row, `models/README.md has no row for ${f}`);
    const cells = row.split('|').map((x) => x.trim());
    assert.equal(cells[3], c.params.toLocaleString('en-US'), `${f}: README parameters`);
    assert.equal(cells[4], c.bytes_atome02.toLocaleString('en-US'), `${f}: README bytes`);
    assert.equal(cells[5], c.engine_bpb.toFixed(4), `${f}: README bpb`);
  }
});

test('each model matches its card: size, parameters, and the 64 KiB re-score within 0.5 %', async () => {
  const atome = await load('simd');
  for (const f of shipped()) {
    const name = f.replace(/\.atome$/, ''), file = path.join(MODELS, f), c = card(name);
    const bytes = readFileSync(file);
    assert.equal(bytes.length, c.bytes_atome02, `${f}: size`);
    assert.equal(createHash('sha256').update(bytes).digest('hex'), c.sha256_atome, `${f}: the card describes another file`);
    const ins = await native(['inspect', file]);
    assert.equal(ins.code, 0, ins.stderr);
    const j = JSON.parse(ins.stdout.toString());
    assert.equal(j.valid, true);
    assert.equal(j.encoding, 'ATOME02');
    assert.equal(j.params, c.params);
    const r = await native(['eval', '--model', file, '--data', VALID, '--max-bytes', '65536'], { timeout: 300000 });
    assert.equal(r.code, 0, r.stderr);
    const bpb = JSON.parse(r.stdout.toString()).bpb;
    assert.ok(Math.abs(bpb - c.slice_65536_bpb) <= 0.005 * c.slice_65536_bpb,
      `${f}: ${bpb} bpb on the first 64 KiB of tinystories-valid.txt, the card says ${c.slice_65536_bpb}`);
    // the wasm engine: the same bytes as the native one
    const p = atome.loadModel(bytes);
    try {
      const opts = { n: 200, temperature: '0.8', topK: 40, topP: '0.95', seed: 1 };
      const g = await native(['generate', '--model', file, '--prompt', 'Once upon a time', '--n', '200', '--temperature', '0.8',
        '--top-k', '40', '--top-p', '0.95', '--seed', '1']);
      assert.equal(g.code, 0, g.stderr);
      assert.ok(Buffer.from(p.generateBytes('Once upon a time', opts)).equals(g.stdout), `${f}: wasm and native bytes differ`);
    } finally { p.free(); }
  }
});

test('the board model fits the micro:bit at window 32; both fit the mps2-an385, and the Pico at window 64', async () => {
  const least = { microbit: 32, 'mps2-an385': 256, pico: 64 };
  for (const f of shipped()) {
    for (const board of ['mps2-an385', 'microbit', 'pico']) {
      if (board === 'microbit' && !f.includes('atome-60k')) continue;
      const out = path.join(repo, 'build', `models-test-${board}.elf`);
      // the Pico runs standalone images only: a short story's settings
      const r = await native(['firmware', '--model', path.join(MODELS, f), '--board', board, '--out', out,
        ...(board === 'pico' ? ['--prompt', 'Once', '--n', '1', '--window', '64'] : [])]);
      assert.equal(r.code, 0, `${f} on ${board}: ${r.stderr}`);
      const j = JSON.parse(r.stdout.toString());
      assert.ok(j.max_window >= least[board], `${f} on ${board}: largest window ${j.max_window}`);
    }
  }
});
