// tests/node/web-threads.test.mjs — the training panel's presets and threads
// (issue #16): the page opens on the quick preset; Steps keeps the preset and recomputes its warmup,
// another field makes it custom, reference fills the papers' recipe and its
// 500 KB corpus; a short quick run trains (on one thread: web/presets.mjs
// PAGE_THREADS). tests/node/web-threads-fallback.test.mjs covers a
// page that is not cross-origin isolated.
import test from 'node:test';
import assert from 'node:assert/strict';
import { useBrowser, open, waitTrain, grab, shot } from './web-harness.mjs';

useBrowser();
const val = (page, id) => page.inputValue(`#${id}`);

test('presets: quick by default, Steps keeps it, another field is custom, reference is the papers\' recipe', async () => {
  const { ctx, page } = await open();
  try {
    // the tab trains on one thread for now (web/presets.mjs PAGE_THREADS), and says so
    await page.waitForFunction(() => /one thread/.test(document.getElementById('train-threads-note').textContent));
    assert.equal(await val(page, 'train-preset'), 'quick');
    assert.equal(await val(page, 'train-threads'), '1');
    assert.equal(await val(page, 'steps'), '3500');
    assert.equal(await val(page, 'warmup'), '70');
    assert.match(await page.textContent('#corpus-name'), /first 2,000,000 bytes/);
    assert.match(await page.textContent('#train-preset-note'), /^Quick/);
    await page.fill('#steps', '1234');
    assert.equal(await val(page, 'train-preset'), 'quick');
    assert.equal(await val(page, 'warmup'), '25');
    await page.fill('#lr', '5e-3');
    assert.equal(await val(page, 'train-preset'), 'custom');
    assert.match(await page.textContent('#train-preset-note'), /^Custom/);
    await page.selectOption('#train-preset', 'reference');
    assert.match(await page.textContent('#corpus-name'), /first 500,000 bytes/);
    for (const [id, v] of Object.entries({ steps: '3000', lr: '3e-4', warmup: '0', cosine: '0', 'lr-min': '0', clip: '0', batch: '16', seq: '64' }))
      assert.equal(await val(page, id), v, `reference: #${id}`);
    assert.match(await page.textContent('#train-preset-note'), /^Reference/);
    await page.selectOption('#train-preset', 'quick');
    assert.equal(await val(page, 'steps'), '3500');
    assert.equal(await val(page, 'lr'), '8e-3');
    await shot(page, 'train-presets', ['sec-train']);
  } finally { await ctx.close(); }
});

test('a short quick run trains on the built-in 2 MB corpus and its model downloads', { timeout: 300000 }, async () => {
  const { ctx, page } = await open('?steps=60');
  try {
    assert.equal(await val(page, 'train-preset'), 'quick');
    await page.click('#train-start');
    const st = await waitTrain(page, 'done');
    assert.ok(Number(st.valBpb) > 0 && Number(st.valBpb) < 6, `validation bpb ${st.valBpb}`);
    const d = await grab(page, '#download-atome02');
    assert.ok(d.bytes.length > 10000);
  } finally { await ctx.close(); }
});
