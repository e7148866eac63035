// tests/node/options.test.mjs — the one table of training options
// (core/train/options.h) behind `atome train`, the JS API (wasm/atome.mjs)
// and the page (web/train.mjs):
//  - the CLI (`atome train --options-json`) and the module (atome_options_json)
//    export the same table, and its defaults are the ones a model gets;
//  - steps 0, steps above the maximum, lr negative and batch 0 are refused by
//    all three with the same words ("must be <want> (got '<text>')", after
//    each front end's name for the field), and the maximum steps is accepted
//    by all three (a run starts with it);
//  - the JS twin of the parser (checkOption, which the page uses) accepts and
//    refuses exactly what the C parser does, with the same words, on odd texts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { load, corpus, native } from './artifacts.mjs';
import { checkOption, findOption } from '../../wasm/atome.mjs';
import { useBrowser, open, errorText, expectError, state, setTrain, waitTrain } from './web-harness.mjs';

useBrowser();
const a = await load('simd');
const table = a.trainOptions();
const dir = mkdtempSync(path.join(tmpdir(), 'atome-options-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const data = path.join(dir, 'small.txt');
writeFileSync(data, corpus(20000));
const cli = (flags) => native(['train', '--config', 'atome-tiny', '--data', data, '--out', path.join(dir, 'm.ckpt'), '--quiet', ...flags]);

const MAX_STEPS = 2 ** 40;
// [option, text, the page's field]
const BAD = [['steps', '0', 'steps'], ['steps', String(MAX_STEPS + 1), 'steps'], ['lr', '-1', 'lr'], ['batch', '0', 'batch']];
const words = (msg) => msg.slice(msg.indexOf('must be'));

test('the CLI and the module export the same option table, and a model gets its defaults', async () => {
  const r = await native(['train', '--options-json']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout.toString()).options, table);
  for (const name of ['steps', 'batch', 'seq', 'lr', 'seed', 'warmup', 'eval-every', 'threads'])
    assert.ok(findOption(table, name), `no row for ${name}`);
  assert.equal(findOption(table, 'steps').max, MAX_STEPS);
  const m = a.createModel('atome-tiny');
  try {
    assert.equal(m.steps, findOption(table, 'steps').default);
    assert.equal(m.batch, findOption(table, 'batch').default);
    assert.equal(m.seq, findOption(table, 'seq').default);
    assert.equal(m.quant, 'ternary', 'the atome family defaults to ternary (default_note)');
    assert.deepEqual(Object.keys(m.stats()), ['step', 'steps', 'loss', 'lr', 'grad_norm', 'params', 'quant', 'stage', 'batch',
      'seq', 'vocab', 'family', 'elapsed_s']);
    assert.equal(m.stats().family, 'atome');
  } finally { m.free(); }
});

// The words each front end gives, by case: filled by the CLI and JS tests,
// compared with the page's.
const said = new Map();

test('the CLI and the JS API refuse out-of-range values with the same words', async () => {
  for (const [name, text] of BAD) {
    const opt = findOption(table, name);
    const want = `must be ${opt.want} (got '${text}')`;
    const r = await cli([`--${name}`, text]);
    assert.equal(r.code, 2, `--${name} ${text}: exit ${r.code}`);
    assert.equal(r.stderr.split('\n').filter((l) => l).length, 1, `--${name} ${text}: one line (${r.stderr})`);
    assert.equal(r.stderr, `atome: train: --${name} ${want}\n`);
    let e = null;
    try { a.createModel('atome-tiny', { [opt.key]: Number(text) }).free(); } catch (x) { e = x; }
    assert.ok(e, `the JS API took ${name} ${text}`);
    assert.equal(e.usage, true);
    assert.equal(e.message, `${name} ${want}`);
    assert.equal(words(e.message), words(r.stderr.trim()));
    said.set(`${name} ${text}`, words(e.message));
  }
});

test('the CLI and the JS API accept the largest step count', async () => {
  const r = await cli(['--steps', String(MAX_STEPS), '--stop-at', '1', '--batch', '2', '--seq', '16']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout.toString()).steps, 1);
  const saved = a.loadCheckpoint(readFileSync(path.join(dir, 'm.ckpt')));   // the run's total, as the CLI stored it
  try { assert.equal(saved.steps, MAX_STEPS); } finally { saved.free(); }
  const m = a.createModel('atome-tiny', { steps: MAX_STEPS, batch: 2, seq: 16 });
  try {
    assert.equal(m.steps, MAX_STEPS);
    m.setData(corpus(20000), { split: 0.9 });
    assert.equal(m.trainSteps(1).done, 1);
  } finally { m.free(); }
});

// Texts at the edges of the grammar and of the ranges.
const ODD = ['0', '1', '-1', '+5', '-0', '007', '1.5', '1.', '.5', '+.5', '1e3', '1E+3', '1e-3', '3e-4', '1e999', '1e-400',
  '', ' 1', '1 ', '0x10', '0x1p3', 'inf', 'Infinity', 'nan', 'NaN', 'abc', '1e', 'e3', '.', '-', '1..2', '99999999999999999999',
  '65536', '65537', '65538', '4294967295', '4294967296', '1000', '1000.0001', '0.9999999', '0.99999991', '1099511627776',
  '1099511627777', 'ternary', 'fp32', 'int8', 'true'];

test('checkOption (JS, the page) and the C parser (the CLI, the JS API) agree, with the same words', () => {
  const h = a.ex.atome_new();
  try {
    for (const opt of table.filter((o) => o.scope === 'model')) {
      for (const text of ODD) {
        assert.equal(a.withBytes('atome-tiny', (p) => a.ex.atome_config(h, p)), 0);
        const rc = a.withBytes(opt.name, (n) => a.withBytes(text, (t) => a.ex.atome_option(h, n, t)));
        let js = null;
        try { checkOption(opt, text); } catch (e) { js = e.message; }
        const c = rc === 0 ? null : a.cstr(a.ex.atome_error(h));
        assert.equal(js, c, `${opt.name} '${text}': JS says ${js}, C says ${c}`);
        if (rc !== 0) assert.equal(rc, -2);
      }
    }
  } finally { a.ex.atome_delete(h); }
});

test('the page refuses the same values with the same words and accepts the largest step count', async () => {
  assert.equal(said.size, BAD.length, 'the CLI / JS test ran first');
  const { ctx, page } = await open();
  try {
    await setTrain(page, {});
    for (const [name, text, field] of BAD) {
      const before = await page.inputValue(`#${field}`);
      await page.fill(`#${field}`, text);
      await page.click('#train-start');
      await expectError(page, /must be/, `${field} ${text}`);
      const msg = await errorText(page);
      const label = (await page.textContent(`label[for="${field}"]`)).trim();
      assert.equal(msg, `${label} ${said.get(`${name} ${text}`)}`, `${field} ${text}`);
      assert.equal(await page.getAttribute(`#${field}`, 'aria-invalid'), 'true');
      assert.equal((await state(page)).state, 'idle', 'nothing started');
      await page.fill(`#${field}`, before);
      await page.click('#error-close');
    }
    await page.fill('#steps', String(MAX_STEPS));
    await page.click('#train-start');
    await waitTrain(page, 'running', 60000);
    assert.equal(await errorText(page), null);
    assert.equal(await page.evaluate(() => document.getElementById('train-progress').max), MAX_STEPS);
    await page.click('#train-stop');
    await waitTrain(page, 'done', 180000);
  } finally { await ctx.close(); }
});
