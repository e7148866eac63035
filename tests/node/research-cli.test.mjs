// tests/node/research-cli.test.mjs — what the research harness needs from the
// CLI: `atome match` (the library's matcher, listed within a tolerance),
// `atome train --train-bytes`, vanilla `--pos none|ternary`, and
// `atome eval --router` (checkpoints and .atome files; on a .atome it equals
// the per-byte router weights of `generate --router-json` averaged over the
// same bytes at the same window).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { native, corpusPath } from './artifacts.mjs';

const tmp = mkdtempSync(path.join(tmpdir(), 'atome-rcli-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));
const J = (r) => JSON.parse(r.stdout.toString().trim().split('\n').pop());
const D = corpusPath();

test('atome match: the library answer, every listed shape within the tolerance, filters', async () => {
  let r = await native(['match', '--family', 'vanilla', '--params', '60800']);
  assert.equal(r.code, 0, r.stderr);
  let m = J(r);
  // the reference's param-fair baseline (docs/models.md): d 44, 3 layers, d_ff 44, 60,808
  assert.deepEqual([m.library.d_model, m.library.layers, m.library.d_ff, m.library.params], [44, 3, 44, 60808]);
  assert.deepEqual(m.closest, m.library);
  r = await native(['match', '--family', 'vanilla', '--params', '60800', '--max-seq', '256', '--tol', '0.03']);
  m = J(r);
  assert.ok(m.shapes.length > 5);
  for (const s of m.shapes) {
    assert.ok(Math.abs(s.params - 60800) <= 0.03 * 60800, JSON.stringify(s));
    const p = J(await native(['params', '--config', 'vanilla-60k', '--d-model', String(s.d_model), '--layers', String(s.layers),
      '--d-ff', String(s.d_ff), '--max-seq', '256']));
    assert.equal(p.params, s.params, 'match counts what params counts');
  }
  // depths ascending; the paper's best and worst shapes are in the list
  assert.deepEqual(m.shapes.map(s => s.layers), [...m.shapes.map(s => s.layers)].sort((a, b) => a - b));
  assert.ok(m.shapes.some(s => s.layers === 1 && s.d_model === 52 && s.d_ff === 104));
  assert.ok(m.shapes.some(s => s.layers === 6 && s.d_model === 24 && s.d_ff === 96));
  r = await native(['match', '--family', 'vanilla', '--params', '60800', '--max-seq', '256', '--tol', '0.03', '--layers', '6', '--ffn-ratio', '4']);
  m = J(r);
  assert.ok(m.shapes.length >= 1 && m.shapes.every(s => s.layers === 6 && s.ffn_ratio === 4));
  // no position table: fewer parameters per shape
  const none = J(await native(['match', '--family', 'vanilla', '--params', '60800', '--max-seq', '256', '--tol', '0.5', '--layers', '1', '--pos', 'none']));
  const s52 = none.shapes.find(s => s.d_model === 52 && s.d_ff === 104);
  assert.equal(s52.params, 61880 - 256 * 52);
  const g = J(await native(['match', '--family', 'gssm', '--params', '60800']));
  assert.deepEqual([g.library.d_model, g.library.layers, g.library.params], [44, 3, 64196]);
  for (const [args, want] of [
    [['match', '--params', '100'], /--family is required/],
    [['match', '--family', 'atome', '--params', '100'], /vanilla or gssm/],
    [['match', '--family', 'vanilla'], /--params is required/],
    [['match', '--family', 'vanilla', '--params', '60800', '--tol', '0'], /no vanilla shape/],
  ]) {
    const e = await native(args);
    assert.notEqual(e.code, 0, args.join(' '));
    assert.match(e.stderr, want);
    assert.equal(e.stderr.trim().split('\n').length, 1);
  }
});

test('train --train-bytes sets steps = ceil(N / (batch x seq)) and is refused with --steps', async () => {
  const out = path.join(tmp, 'tb.ckpt');
  const r = await native(['train', '--config', 'atome-tiny', '--data', D, '--max-bytes', '100000', '--train-bytes', '10000',
    '--batch', '4', '--seq', '32', '--out', out, '--quiet']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(J(r).steps, Math.ceil(10000 / 128));
  const e = await native(['train', '--config', 'atome-tiny', '--data', D, '--train-bytes', '10000', '--steps', '3', '--out', out]);
  assert.equal(e.code, 2);
  assert.match(e.stderr, /--steps or --train-bytes, not both/);
  // a resumed run keeps its budget: the same total steps
  const half = path.join(tmp, 'tb2.ckpt');
  const a = await native(['train', '--config', 'atome-tiny', '--data', D, '--max-bytes', '100000', '--train-bytes', '10000',
    '--batch', '4', '--seq', '32', '--out', half, '--stop-at', '20', '--quiet']);
  assert.equal(a.code, 0, a.stderr);
  const b = await native(['train', '--resume', half, '--data', D, '--train-bytes', '10000', '--quiet']);
  assert.equal(b.code, 0, b.stderr);
  assert.equal(J(b).steps, 79);
  assert.equal(J(b).nats_per_byte, J(r).nats_per_byte, 'resumed to the same budget = uninterrupted');
});

test('vanilla --pos: none has no position table, ternary quantises it; both train, save and resume', async () => {
  const p = {};
  for (const pos of ['learned', 'none', 'ternary']) p[pos] = J(await native(['params', '--config', 'vanilla-tiny', '--pos', pos, '--quant', 'ternary']));
  assert.equal(p.learned.params - p.none.params, 64 * 16);
  assert.ok(!p.none.tensors.some(t => t.name === 'pos_emb'));
  assert.equal(p.ternary.tensors.find(t => t.name === 'pos_emb').kind, 'quant');
  assert.equal(p.learned.tensors.find(t => t.name === 'pos_emb').kind, 'fp32');
  assert.equal(p.ternary.params, p.learned.params);
  const res = {};
  for (const pos of ['learned', 'none', 'ternary']) {
    const out = path.join(tmp, `v-${pos}.ckpt`);
    const r = await native(['train', '--config', 'vanilla-tiny', '--pos', pos, '--quant', 'ternary', '--data', D, '--max-bytes', '60000',
      '--steps', '30', '--batch', '4', '--seq', '32', '--out', out, '--quiet']);
    assert.equal(r.code, 0, r.stderr);
    res[pos] = J(r);
    assert.equal(res[pos].params, p[pos].params);
    // the checkpoint keeps the scheme: eval gives the training summary's score
    const e = J(await native(['eval', '--model', out, '--data', D, '--max-bytes', '60000', '--split', '0.9']));
    assert.equal(e.nats_per_byte, res[pos].nats_per_byte, pos);
    // resume needs the same scheme
    if (pos !== 'learned') {
      const bad = await native(['train', '--resume', out, '--config', 'vanilla-tiny', '--steps', '31', '--out', path.join(tmp, 'x.ckpt'), '--quiet']);
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /differs from the checkpoint's model/);
      const good = await native(['train', '--resume', out, '--config', 'vanilla-tiny', '--pos', pos, '--steps', '31', '--out', path.join(tmp, 'x.ckpt'), '--quiet']);
      assert.equal(good.code, 0, good.stderr);
    }
  }
  assert.notEqual(res.learned.nats_per_byte, res.ternary.nats_per_byte, 'quantised positions change the model');
  // learned is the default: same bits as without the flag
  const out = path.join(tmp, 'v-default.ckpt');
  const d = J(await native(['train', '--config', 'vanilla-tiny', '--quant', 'ternary', '--data', D, '--max-bytes', '60000',
    '--steps', '30', '--batch', '4', '--seq', '32', '--out', out, '--quiet']));
  assert.equal(d.nats_per_byte, res.learned.nats_per_byte);
  // the weights and moments (from the WGHT section to the CRC; the STAT section's elapsed time differs)
  const wts = (f) => { const b = readFileSync(f); return b.subarray(b.indexOf('WGHT'), b.length - 4); };
  assert.ok(wts(out).equals(wts(path.join(tmp, 'v-learned.ckpt'))));
  assert.equal(readFileSync(out).indexOf('VPOS'), -1, 'no VPOS section for learned positions');
  assert.ok(readFileSync(path.join(tmp, 'v-none.ckpt')).indexOf('VPOS') > 0);
  const e = await native(['params', '--config', 'atome-tiny', '--pos', 'none']);
  assert.equal(e.code, 2);
  assert.match(e.stderr, /--pos does not apply to the atome family/);
  const f = await native(['params', '--config', 'vanilla-tiny', '--pos', 'rope']);
  assert.equal(f.code, 2);
  assert.match(f.stderr, /--pos must be learned, none or ternary/);
});

test('eval --router: checkpoint and .atome statistics; the .atome ones are generate --router-json averaged', async () => {
  const ck = path.join(tmp, 'r.ckpt'), at = path.join(tmp, 'r.atome');
  let r = await native(['train', '--config', 'atome-tiny', '--data', D, '--max-bytes', '100000', '--steps', '60', '--batch', '8',
    '--seq', '48', '--lr', '3e-3', '--out', ck, '--quiet']);
  assert.equal(r.code, 0, r.stderr);
  r = await native(['export', '--model', ck, '--format', 'atome02', '--out', at, '--quiet']);
  assert.equal(r.code, 0, r.stderr);
  // float statistics: per layer weights sum to 1, entropy in [0, ln 3]
  const fe = J(await native(['eval', '--model', ck, '--data', D, '--max-bytes', '20000', '--router']));
  assert.equal(fe.router.length, 2);
  for (const w of fe.router) assert.ok(Math.abs(w[0] + w[1] + w[2] - 1) < 1e-6);
  for (const h of fe.router_entropy) assert.ok(h > 0 && h <= Math.log(3) + 1e-9);
  assert.equal(fe.router_positions, fe.bytes);
  const plain = J(await native(['eval', '--model', ck, '--data', D, '--max-bytes', '20000']));
  assert.equal(plain.router, undefined);
  assert.equal(plain.nats_per_byte, fe.nats_per_byte, '--router does not change the score');
  // the engine's statistics track the float model's
  const ee = J(await native(['eval', '--model', at, '--data', D, '--max-bytes', '20000', '--router']));
  for (let l = 0; l < 2; l++) for (let p = 0; p < 3; p++) assert.ok(Math.abs(ee.router[l][p] - fe.router[l][p]) < 0.02);
  // generate --router-json over a greedy continuation; eval the same bytes as one chunk at the same window
  const N = 47, W = 20;
  const rj = path.join(tmp, 'r.jsonl');
  const g = await native(['generate', '--model', at, '--prompt', 'O', '--n', String(N), '--window', String(W), '--router-json', rj]);
  assert.equal(g.code, 0, g.stderr);
  const chunk = Buffer.concat([Buffer.from('O'), g.stdout]);
  const df = path.join(tmp, 'chunk.bin');
  writeFileSync(df, chunk);
  const ev = J(await native(['eval', '--model', at, '--data', df, '--seq', String(N + 1), '--window', String(W), '--router']));
  assert.equal(ev.router_positions, N);
  const lines = readFileSync(rj, 'utf8').trim().split('\n').map(l => JSON.parse(l));
  assert.equal(lines.length, N);
  for (let l = 0; l < 2; l++) {
    for (let p = 0; p < 3; p++) {
      const avg = lines.reduce((s, x) => s + x.router[l][p], 0) / N;
      assert.ok(Math.abs(avg - ev.router[l][p]) <= 5e-5 + 1e-12, `layer ${l} pathway ${p}: ${avg} vs ${ev.router[l][p]}`);
    }
    const h = lines.reduce((s, x) => s + x.entropy[l], 0) / N;
    assert.ok(Math.abs(h - ev.router_entropy[l]) <= 5e-5 + 1e-12, `layer ${l} entropy`);
  }
  // a pathway the model lacks weighs 0
  const ab = path.join(tmp, 'ab.ckpt');
  await native(['train', '--config', 'atome-tiny', '--pathways', 'conv,ssm', '--data', D, '--max-bytes', '50000', '--steps', '5', '--out', ab, '--quiet']);
  const ae = J(await native(['eval', '--model', ab, '--data', D, '--max-bytes', '10000', '--router']));
  assert.ok(ae.router.every(w => w[2] === 0 && Math.abs(w[0] + w[1] - 1) < 1e-6));
  const v = path.join(tmp, 'v-learned.ckpt');
  const bad = await native(['eval', '--model', v, '--data', D, '--max-bytes', '10000', '--router']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--router needs an atome-family model/);
});
