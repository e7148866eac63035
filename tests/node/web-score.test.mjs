// tests/node/web-score.test.mjs — "Score your own text" (#sec-score, issue
// #43) in headless Chromium: the bits per byte the page shows (#score-bpb
// data-bpb, #score-bpb-b) equal `atome eval --model M --data FILE` on the
// same bytes to 1e-9 for both shipped models side by side and for a model
// trained in the tab; each character is shaded, the first byte of each chunk
// is not scored, hover and the arrow keys show the top five next bytes and
// the router's mix; the text and detail fit a phone's width.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { repo, native, sharedDir } from './artifacts.mjs';
import { useBrowser, open, shot, errorText, grab, openTraining, waitTrain } from './web-harness.mjs';

const B = useBrowser();
const VALID = readFileSync(path.join(sharedDir, 'data/tinystories-valid.txt')).subarray(0, 4000);

async function nativeBpb(model, bytes) {
  const f = path.join(B.tmp(), `score-${Date.now()}.txt`);
  writeFileSync(f, bytes);
  const r = await native(['eval', '--model', model, '--data', f]);
  assert.equal(r.code, 0, `atome eval: ${r.stderr}`);
  return JSON.parse(r.stdout.toString()).bpb;
}

async function score(page, text) {
  await page.fill('#score-text', text);
  await page.click('#score-run');
  await page.waitForFunction(() => ['done', 'error'].includes(document.getElementById('sec-score').dataset.state) &&
    document.getElementById('score-status').textContent === '', null, { timeout: 120000 });
  assert.equal(await errorText(page), null);
  return page.evaluate(() => [document.getElementById('score-bpb').dataset.bpb, document.getElementById('score-bpb-b').dataset.bpb]);
}

const models = (page) => page.evaluate(() => [document.getElementById('score-model').value, document.getElementById('score-model-b').value]);

test('#score-bpb equals atome eval for both shipped models, side by side, on odd texts', { timeout: 400000 }, async () => {
  const { ctx, page } = await open();
  try {
    assert.deepEqual(await models(page), ['atome-60k.atome', 'atome-944k.atome'], 'the section starts with two models side by side');
    const texts = [
      VALID.toString('latin1').slice(0, 1000),                     // 15 whole chunks of 64 and a tail of 40 bytes
      'Lily saw a café — “hello” 🐱 and ran to the park, where the big red ball rolled under a tree.\n\nThe end.\n'.repeat(3),
      VALID.subarray(0, 3000).toString('utf8'),
    ];
    for (const t of texts) {
      const bytes = Buffer.from(t, 'utf8');
      const [a, b] = await score(page, t);
      for (const [got, m] of [[a, 'atome-60k.atome'], [b, 'atome-944k.atome']]) {
        const want = await nativeBpb(path.join(repo, 'models', m), bytes);
        assert.ok(Math.abs(Number(got) - want) < 1e-9, `${m} on ${bytes.length} bytes: page ${got}, atome eval ${want}`);
      }
    }
    // every character shaded, the first byte of each 64-byte chunk not scored
    const v = await page.evaluate(() => {
      const spans = [...document.querySelectorAll('#score-view span[data-i]')];
      return { n: spans.length, unscored: spans.filter((s) => s.className.includes('unscored')).map((s) => Number(s.dataset.i)),
        shaded: spans.filter((s) => /\bb\d\b/.test(s.className)).length };
    });
    assert.ok(v.unscored.length >= 46 && v.unscored.every((i) => i % 64 === 0), `unscored: ${v.unscored.slice(0, 8)}`);
    assert.equal(v.shaded + v.unscored.length, v.n);
    // hover: the byte's bits, the top five and the router's mix, in both panes
    await page.hover('#score-view span[data-i="70"]');
    const d = await page.evaluate(() => [document.getElementById('score-detail'), document.getElementById('score-detail-b')].map((x) => ({
      text: x.textContent, rows: x.querySelectorAll('tbody tr').length })));
    for (const x of d) {
      assert.match(x.text, /^Byte 71: .* bits \(p = [\d.]+ %\), the model's \d+(st|nd|rd|th) choice/, x.text.slice(0, 120));
      assert.match(x.text, /The model expected: (\S+ [\d.]+% · ){4}\S+ [\d.]+%/);
      assert.ok(x.rows >= 2, 'one router row a layer');
    }
    await shot(page, '43-score', ['sec-score']);
    // keyboard: Tab from Score reaches the text, the arrow keys walk it and its detail stays in view
    await page.focus('#score-run');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.id), 'score-view');
    await page.keyboard.press('Home');
    await page.keyboard.press('ArrowRight');
    const k = await page.evaluate(() => ({ cur: document.querySelector('#score-view span.cur')?.dataset.i,
      detail: document.getElementById('score-detail').textContent }));
    assert.equal(k.cur, '1');
    assert.match(k.detail, /^Byte 2: /);
    await page.keyboard.press('Home');
    assert.match(await page.textContent('#score-detail'), /not scored: it starts a 64-byte chunk/);
    // a phone: nothing wider than the screen
    await page.setViewportSize({ width: 390, height: 844 });
    await page.hover('#score-view span[data-i="70"]');
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(wide <= 390, `the page is ${wide} px wide at a 390 px screen`);
    await page.locator('#sec-score').screenshot({ path: path.join(repo, 'build/screenshots/43-score-phone-sec-score.png') });
    // a text shorter than one chunk: shaded, no bits per byte (atome eval refuses it)
    const [short] = await score(page, 'Tom had a dog.');
    assert.equal(short, '');
    assert.match(await page.textContent('#score-bpb'), /atome eval needs one whole chunk of 64 bytes/);
  } finally { await ctx.close(); }
});

test('#score-bpb equals atome eval for a model trained in the tab', { timeout: 400000 }, async () => {
  const { ctx, page } = await openTraining('?steps=30');
  try {
    await waitTrain(page);
    await page.waitForFunction(() => [...document.getElementById('score-model').options].some((o) => o.value.startsWith('trained-')), null,
      { timeout: 30000 });
    const trained = await page.evaluate(() => [...document.getElementById('score-model').options].find((o) => o.value.startsWith('trained-')).value);
    await page.selectOption('#model-select', trained);
    await page.waitForFunction(() => !document.getElementById('download-atome02').disabled);
    const file = (await grab(page, '#download-atome02')).file;
    await page.selectOption('#score-model', trained);
    const text = VALID.subarray(0, 700).toString('latin1');
    const [a] = await score(page, text);
    const want = await nativeBpb(file, Buffer.from(text, 'utf8'));
    assert.ok(Math.abs(Number(a) - want) < 1e-9, `trained: page ${a}, atome eval ${want}`);
    await shot(page, '43-score-trained', ['sec-score']);
  } finally { await ctx.close(); }
});
