// tests/node/web-demanding.test.mjs — the page under a demanding user (issue
// #19), in headless Chromium: a 16 MiB corpus trains at the default batch and
// seq; after a failed run the next one trains and the failed one is never
// offered to continue; two pages of one browser never train the same run;
// a window too large for the engine names the field and the largest window
// that fits; Generate, the board files and `atome firmware` share the limits
// of n and the meaning of an empty field; and the smaller things a person
// notices (prompt feedback, totals and ETA, Copy and Save, "bits per byte",
// samples from the user's corpus, numbers as typed, the interrupted run's
// settings, the board card's wording, the keyboard's place).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { repo, native, corpusPath } from './artifacts.mjs';
import { useBrowser, open, waitReady, shot, errorText, expectError, fillSettings, finished, grab, state, setTrain, waitTrain,
  MODEL, hex } from './web-harness.mjs';

const B = useBrowser();
const TEXT = readFileSync(corpusPath());

// a text file of exactly n bytes: a first line of its own, then TinyStories repeated
const HEAD = Buffer.from('Zebras ran far.\n');
function textOf(n) {
  const b = Buffer.alloc(n);
  HEAD.copy(b, 0);
  for (let o = HEAD.length; o < n; o += TEXT.length) TEXT.copy(b, o, 0, Math.min(TEXT.length, n - o));
  return b;
}
// (from a file on disk: Chromium reads it there, where a 16 MiB buffer would cross the DevTools pipe as base64)
async function pickCorpus(page, name, bytes) {
  const file = path.join(B.tmp(), name);
  writeFileSync(file, bytes);
  await page.setInputFiles('#corpus-file', file);
  await page.waitForFunction((n) => document.getElementById('corpus-name').textContent.startsWith(n), name);
}
const runsList = (page) => page.evaluate(() => [...document.querySelectorAll('#runs li')].map((li) => ({
  id: li.dataset.runId ?? null, text: li.textContent, elsewhere: li.dataset.elsewhere === '1',
  buttons: [...li.querySelectorAll('button')].map((b) => b.textContent) })));

test('a 16 MiB corpus trains 20 steps at batch 16 x seq 64; the status line starts afresh', { timeout: 300000 }, async () => {
  const { ctx, page } = await open('?steps=20');
  try {
    await page.click('#train-start');             // a built-in run first: its "finished" line must not linger
    await waitTrain(page);
    // the final save lands in IndexedDB a moment after the status says done
    await page.waitForFunction(() => /finished/.test(document.getElementById('train-saved').textContent), null, { timeout: 20000 });
    await pickCorpus(page, 'big.txt', textOf(16 * 1024 * 1024));
    // what the panel shows the moment the new run is launched (its 'Starting…' line), read in that
    // task: a read after the click returns can come steps later on a busy machine
    await page.evaluate(() => {
      const t = document.getElementById('train-text');
      window.__fresh = null;
      const o = new MutationObserver(() => {
        if (window.__fresh || t.textContent !== 'Starting…') return;
        window.__fresh = { saved: document.getElementById('train-saved').textContent, bar: document.getElementById('train-progress').value };
        o.disconnect();
      });
      o.observe(t, { childList: true, characterData: true, subtree: true });
    });
    await page.click('#train-start');
    await page.waitForFunction(() => window.__fresh);
    const fresh = await page.evaluate(() => window.__fresh);
    assert.ok(!/finished/.test(fresh.saved), `the previous run's line stays: '${fresh.saved}'`);
    assert.equal(fresh.bar, 0, 'the progress bar starts at 0');
    const st = await waitTrain(page, 'done', 240000);
    assert.ok(Number(st.valBpb) > 0 && Number(st.valBpb) < 8, `val bpb ${st.valBpb}`);
    assert.equal(await errorText(page), null);
    // its samples start from the start of the user's corpus, not from a fixed prompt
    const sample = await page.textContent('#samples .sample span');
    assert.ok(sample.startsWith('Zebras ran far.'), `sample '${sample.slice(0, 40)}' does not start with the corpus's first line`);
    await shot(page, '19-big-corpus');
  } finally { await ctx.close(); }
});

test('after a failed run the next built-in run finishes; a failed run is not offered for resuming', { timeout: 300000 }, async () => {
  const { ctx, page } = await open('?steps=40&fail-at=5&save-ms=100');
  try {
    await page.click('#train-start');
    await waitTrain(page, 'error');
    await expectError(page, /made to fail at step 5/, 'the made-to-fail run');
    assert.equal(await page.evaluate(() => document.getElementById('train-progress').value), 0);
    assert.equal(await page.textContent('#train-saved'), '');
    await shot(page, '19-failed-run');
    let runs = await runsList(page);
    const failedRun = runs.find((r) => /failed/.test(r.text));
    assert.ok(failedRun, `the failed run is listed as failed: ${JSON.stringify(runs)}`);
    assert.ok(!failedRun.buttons.includes('Continue'));
    // the worker is as before: the next run (the hook fires once) trains to the end
    await page.click('#error-close');
    await page.click('#train-start');
    await waitTrain(page);
    // a start that cannot fit: out of memory names the cause and the largest batch that fits; nothing is saved
    await pickCorpus(page, 'big.txt', textOf(16 * 1024 * 1024));     // enough text for one batch of 2048 x 4096
    await setTrain(page, { batch: 2048, seq: 4096, steps: 5 });
    const before = (await runsList(page)).length;
    await page.click('#train-start');
    await waitTrain(page, 'error', 240000);
    const oom = await errorText(page);
    assert.match(oom, /out of memory: atome-60k at batch 2048 × seq 4096 with a 16,777,216-byte corpus needs more than the training module's 1 GiB of memory; the largest batch that fits at seq 4096 is \d+/, oom);
    assert.equal((await runsList(page)).length, before, 'a run that never started is not saved');
    // a reload offers nothing to continue
    await page.reload();
    await waitReady(page);
    await page.waitForTimeout(500);
    assert.equal(await page.isVisible('#resume-banner'), false, 'a failed run is offered after a reload');
    runs = await runsList(page);
    assert.ok(runs.every((r) => !(/failed/.test(r.text) && r.buttons.includes('Continue'))));
  } finally { await ctx.close(); }
});

test('two pages of one browser never train the same run; the offer comes back when the first closes', { timeout: 300000 }, async () => {
  const { ctx, page: a } = await open('?steps=1500&save-ms=200');
  try {
    await a.click('#train-start');
    await a.waitForFunction(() => window.__atome.savedStep >= 20, null, { timeout: 60000 });
    const runId = await a.evaluate(() => window.__atome.runId);
    const b = await ctx.newPage();
    await b.goto(`${B.origin()}/?model-select=atome-60k.atome`);
    await waitReady(b);
    await b.waitForFunction((id) => document.querySelector(`#runs li[data-run-id="${id}"]`), runId);
    await b.waitForTimeout(300);
    assert.equal(await b.isVisible('#resume-banner'), false, 'the second tab offers a run live in the first');
    const item = (await runsList(b)).find((r) => r.id === runId);
    assert.ok(item.elsewhere && /training in another tab/.test(item.text), JSON.stringify(item));
    assert.ok(!item.buttons.includes('Continue') && !item.buttons.some((t) => /Delete/.test(t)), JSON.stringify(item));
    await shot(b, '19-second-tab');
    // the first tab goes away: the second offers the run
    await a.close();
    await b.waitForSelector('#resume-banner:not([hidden])', { timeout: 20000 });
    await b.waitForFunction((id) => document.getElementById(`continue-${id}`), runId, { timeout: 20000 });
    // and the form shows that run's settings
    assert.equal(await b.inputValue('#steps'), '1500');
    await b.click('#resume-continue');
    await b.waitForFunction(() => document.getElementById('train-status').dataset.state === 'running', null, { timeout: 30000 });
    await b.click('#train-stop');
    await waitTrain(b, 'done', 120000);
  } finally { await ctx.close(); }
});

test('window 32768 on atome-944k names the window field and the largest window that fits', { timeout: 120000 }, async () => {
  const { ctx, page } = await open('?model-select=atome-944k.atome');
  try {
    await fillSettings(page, { prompt: 'Once', n: 20, window: 32768 });
    await page.click('#generate');
    await expectError(page, /^Window: 32,768 positions need [\d,]+ bytes of engine memory, more than the 67,108,864 bytes the page gives the engine; the largest window that fits atome-944k.atome is ([\d,]+)$/, 'window 32768');
    const t = await errorText(page);
    const w = Number(/is ([\d,]+)$/.exec(t)[1].replace(/,/g, ''));
    assert.ok(w > 64 && w < 32768, t);
    assert.equal(await page.evaluate(() => document.activeElement.id), 'window');
    assert.equal(await page.getAttribute('#window', 'aria-invalid'), 'true');
    await shot(page, '19-window-too-large');
    // the largest window it names does generate
    await page.click('#error-close');
    await fillSettings(page, { prompt: 'Once', n: 8, window: w });
    await finished(await (async () => { await page.click('#generate'); return page; })());
  } finally { await ctx.close(); }
});

test('n: the same limit and the same empty field in Generate, the board files and atome firmware', { timeout: 180000 }, async () => {
  const { ctx, page } = await open();
  try {
    const over = '1000000000001';
    // Generate
    await fillSettings(page, { prompt: 'Once', n: over });
    await page.click('#generate');
    await expectError(page, /^Length must be an integer in 0\.\.1000000000000 \(got '1000000000001'\)$/, 'Generate, n too large');
    await page.click('#error-close');
    // the board file
    await page.click('#download-hex-microbit');
    await expectError(page, /^Length must be an integer in 0\.\.1000000000000 \(got '1000000000001'\)$/, 'board file, n too large');
    await page.click('#error-close');
    // the CLI
    const cli = await native(['firmware', '--model', MODEL, '--board', 'microbit', '--format', 'hex', '--out', path.join(B.tmp(), 'x.hex'),
      '--prompt', 'Once', '--n', over]);
    assert.equal(cli.code, 2);
    assert.match(cli.stderr, /--n must be an integer in 0\.\.1000000000000/);
    // an empty Length: 256 bytes everywhere
    await fillSettings(page, { prompt: 'Once', n: '', temperature: '0.8', topK: 40, seed: 5 });
    await page.fill('#n', '');
    await page.click('#generate');
    const got = await finished(page);
    assert.equal(got.length / 2, 256);
    const g = await native(['generate', '--model', MODEL, '--prompt', 'Once', '--temperature', '0.8', '--top-k', '40', '--seed', '5']);
    assert.equal(hex(g.stdout), got, 'Generate with an empty Length = atome generate without --n');
    const { bytes } = await grab(page, '#download-hex-microbit');
    const nf = path.join(B.tmp(), 'native-dflt.hex');
    const r = await native(['firmware', '--model', MODEL, '--board', 'microbit', '--format', 'hex', '--out', nf,
      '--prompt', 'Once', '--temperature', '0.8', '--top-k', '40', '--top-p', '1', '--seed', '5']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout.toString()).v1.settings.n, 256);
    assert.ok(Buffer.compare(bytes, readFileSync(nf)) === 0, 'the page\'s file with an empty Length = atome firmware without --n');
  } finally { await ctx.close(); }
});

test('what a person notices: prompt feedback, total and ETA, Copy and Save, bpb explained, numbers as typed, wording, focus', { timeout: 240000 }, async () => {
  const { ctx, page } = await open('?steps=30&lr=3e-4');
  try {
    assert.match(await page.textContent('#bpb-note'), /bits per byte \(lower is better\)/);
    // a long prompt says it is being read, then the line gives the total, a percentage and an ETA
    await fillSettings(page, { prompt: TEXT.subarray(0, 10000).toString('latin1').replace(/[^\x20-\x7e\n]/g, ' '), n: 3000, explain: false });
    // every text the status line shows, recorded as it changes (the prompt's reading can be over between two polls)
    await page.evaluate(() => {
      window.__speeds = [];
      const el = document.getElementById('speed');
      new MutationObserver((recs) => {   // each text set is a new text node: its own words, however fast the next came
        for (const r of recs) for (const n of r.addedNodes) window.__speeds.push(n.textContent);
        if (recs.some((r) => r.type === 'characterData')) window.__speeds.push(el.textContent);
      }).observe(el, { childList: true, characterData: true, subtree: true });
    });
    await page.click('#generate');
    await page.waitForFunction(() => / of 3,000 bytes \(\d+ %\) · [\d,]+ bytes\/s · ETA /.test(document.getElementById('speed').textContent) ||
      document.getElementById('output').dataset.done === '1', null, { timeout: 60000 });
    await finished(page);
    const speeds = await page.evaluate(() => window.__speeds);
    assert.ok(speeds.some((t) => /Reading the prompt/.test(t)), `the status line never said it was reading the prompt: ${speeds.slice(0, 5)}`);
    // Copy and Save
    assert.equal(await page.isEnabled('#output-copy'), true);
    const saved = await grab(page, '#output-save');
    assert.equal(saved.bytes.length, 10000 + 3000);
    await shot(page, '19-story-actions', ['sec-generate']);
    // the board card says whether its window is Generate's
    await page.fill('#window', '48');
    await page.dispatchEvent('#window', 'change');
    await page.waitForFunction(() => /Generate runs at 48/.test(document.querySelector('.board-card[data-board="microbit"]').textContent), null, { timeout: 30000 });
    // Enter on Start training keeps the keyboard's place; 3e-4 stays as typed
    await page.focus('#train-start');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.getElementById('train-status').dataset.state !== 'idle', null, { timeout: 30000 });
    await page.waitForFunction(() => document.activeElement && document.activeElement !== document.body, null, { timeout: 10000 });
    assert.notEqual(await page.evaluate(() => document.activeElement.tagName), 'BODY');
    assert.equal(await page.inputValue('#lr'), '3e-4');
    await page.click('#train-stop');
    const line = await page.textContent('#train-text');
    await page.waitForTimeout(400);
    const later = await page.textContent('#train-text');
    assert.ok(/stopping/.test(later) || (await state(page)).state === 'done', `Stop's note was overwritten: '${line}' -> '${later}'`);
    await waitTrain(page);
  } finally { await ctx.close(); }
});
