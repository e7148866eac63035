// tests/node/minute-schedule.test.mjs — the minute preset's schedule table
// (issue #43): web/data/minute-schedule.json is what `node
// tools/minute-schedule.mjs` derives from the committed results of
// research/q2-minute-schedule.json, byte for byte; the page's arithmetic
// (web/minute.mjs): the row of a step count (the nearest swept count at or
// below, clamped at both ends), the step count that fills a budget, and the
// ETA that never shows a figure more than a tenth above the one before.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { deriveSchedule, scheduleText, OUT, COMMAND } from '../../tools/minute-schedule.mjs';
import { scheduleRow, scheduleFields, stepsForBudget, runSeconds, overheadSeconds, etaSmoother, numText, runThreads, pageShare, PAGE_SHARE, BUSY_PAGE_SHARE } from '../../web/minute.mjs';
import { repo, run } from './artifacts.mjs';

const committed = readFileSync(path.join(repo, OUT), 'utf8');
const table = JSON.parse(committed);

test('the committed schedule table is what the tool derives from the committed results', async () => {
  assert.equal(committed, scheduleText(deriveSchedule()), `${OUT} is stale: run ${COMMAND}`);
  const r = await run(process.execPath, [path.join(repo, 'tools/minute-schedule.mjs'), '--check']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(table.runs, 108);
  assert.deepEqual(table.rows.map((x) => x.steps), [500, 1000, 1500, 2000, 3000, 4000, 5000, 6000, 8000]);
  for (const row of table.rows) {
    // the row's lr is the lowest mean of its step count
    const best = Object.entries(row.bpbByLr).sort((a, b) => a[1] - b[1])[0];
    assert.equal(row.lr, Number(best[0]), `${row.steps} steps`);
    assert.equal(row.bpb, best[1]);
    assert.deepEqual([row.warmupFraction, row.lrMin, row.clip, row.batch, row.seq, row.corpus], [0.02, 1e-4, 1, 16, 64, 2000000]);
  }
});

test('a step count takes the row of the nearest swept count at or below it, clamped at both ends', () => {
  const at = (n) => scheduleRow(table, n).steps;
  assert.deepEqual([10, 499, 500, 999, 1000, 1999, 2000, 2999, 7999, 8000, 100000].map(at),
    [500, 500, 500, 500, 1000, 1500, 2000, 2000, 6000, 8000, 8000]);
  const f = scheduleFields(table, 2500).fields;
  assert.deepEqual(f, { steps: '2500', batch: '16', seq: '64', lr: numText(scheduleRow(table, 2500).lr), warmup: '50', cosine: '1',
    'lr-min': '1e-4', clip: '1' });
  assert.deepEqual([0.016, 0.008, 0.012, 1e-4, 3e-4, 1, 0.5].map(numText), ['1.6e-2', '8e-3', '1.2e-2', '1e-4', '3e-4', '1', '0.5']);
});

test('the step count fills the budget: its steps and overhead fit, ten more steps would not', () => {
  const m = { msPerStep: 9.5, evalMsPerChunk: 0.3, sampleMs: 60, setupMs: 150, saveMs: 10, exportMs: 250, evalChunks: 3125 };
  const k0 = 1000;
  for (const left of [8, 23, 48, 600]) {
    const n = stepsForBudget(m, left);
    const cost = (k) => runSeconds(m, k);
    assert.ok(cost(k0) > k0 * m.msPerStep / 1000 + overheadSeconds(m, k0), 'the page\'s share and a reserve are counted');
    assert.equal(n % 10, 0);
    assert.ok(cost(n) <= left, `${left} s: ${n} steps cost ${cost(n)} s`);
    assert.ok(cost(n + 10) > left, `${left} s: ${n} steps leave room`);
  }
  assert.equal(stepsForBudget(m, 0.5), 10, 'at least 10 steps');
  assert.ok(stepsForBudget({ ...m, msPerStep: 16 }, 48) < stepsForBudget(m, 48));
});

test('threads: the pool on every core pays the larger page share; the count is the faster after it', () => {
  assert.equal(pageShare(1, 2), PAGE_SHARE);
  assert.equal(pageShare(2, 2), BUSY_PAGE_SHARE);
  assert.equal(pageShare(4, 8), PAGE_SHARE);
  assert.ok(BUSY_PAGE_SHARE > PAGE_SHARE);
  assert.equal(runThreads({ 1: 10, 2: 7 }, 2), 2, 'a third faster: the pool');
  assert.equal(runThreads({ 1: 10, 2: 9 }, 2), 1, 'a tenth faster on both cores: one thread, which leaves the page a core');
  assert.equal(runThreads({ 1: 10, 4: 9 }, 8), 4, 'a free core left for the page: the faster count');
  assert.equal(runThreads({ 1: 10, 2: 10 * (1 + PAGE_SHARE) / (1 + BUSY_PAGE_SHARE) }, 2), 1, 'a tie: the smaller count');
  const m = { msPerStep: 8, evalMsPerChunk: 0.3, sampleMs: 60, setupMs: 150, saveMs: 10, exportMs: 250, evalChunks: 3125 };
  assert.ok(stepsForBudget({ ...m, pageShare: BUSY_PAGE_SHARE }, 48) < stepsForBudget(m, 48), 'the larger share plans fewer steps');
});

test('the ETA is smoothed and never shows a figure more than a tenth above the one before', () => {
  const e = etaSmoother();
  const shown = [];
  let now = 0;
  // a run that slows down twice, then speeds up, with noise
  for (let i = 0; i < 400; i++) {
    now += 250;
    const rate = i < 100 ? 1 : i < 200 ? 0.5 : i < 250 ? 0.3 : 1.2;
    const raw = Math.max(0, (100 - i / 4) / rate * (1 + 0.3 * Math.sin(i * 1.7)));
    shown.push(e.next(raw, now));
  }
  for (let i = 1; i < shown.length; i++) assert.ok(shown[i] <= Math.max(shown[i - 1], Math.floor(shown[i - 1] * 1.1)), `${shown[i - 1]} then ${shown[i]}`);
  assert.equal(e.next(0, now + 60000), 0, 'ends at 0');
});
