// tests/node/web-threads.test.mjs — the training panel's presets and threads
// (issue #16): the page opens on the minute preset (issue #43; tests/node/web-minute.test.mjs) with
// threads on auto; on quick, Steps keeps the preset and recomputes its warmup,
// another field makes it custom, reference fills the papers' recipe and its
// 500 KB corpus; the thread count goes up to the cores (capped at 4); a
// short quick run on two threads makes the model one thread makes, bit for
// bit. tests/node/web-threads-fallback.test.mjs covers a page that is not
// cross-origin isolated.
import test from 'node:test';
import assert from 'node:assert/strict';
import { useBrowser, open, waitTrain, grab, shot } from './web-harness.mjs';

useBrowser();
const val = (page, id) => page.inputValue(`#${id}`);

test('presets: minute by default, quick\'s Steps keeps it, another field is custom, reference is the papers\' recipe', async () => {
  const { ctx, page } = await open();
  try {
    // the tab offers the cores it has, up to 4, and starts at all of them (web/presets.mjs PAGE_THREADS)
    await page.waitForFunction(() => /^Up to \d+ threads? here/.test(document.getElementById('train-threads-note').textContent));
    const cores = await page.evaluate(() => navigator.hardwareConcurrency);
    assert.equal(await val(page, 'train-preset'), 'minute');
    assert.equal(await val(page, 'train-threads'), cores > 1 ? 'auto' : '1');
    assert.equal(await page.getAttribute('#train-threads', 'max'), String(Math.max(1, Math.min(4, cores))));
    await page.selectOption('#train-preset', 'quick');
    assert.equal(await val(page, 'steps'), '5000');
    assert.equal(await val(page, 'warmup'), '100');
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
    assert.equal(await val(page, 'steps'), '5000');
    assert.equal(await val(page, 'lr'), '1.2e-2');
    await shot(page, 'train-presets', ['sec-train']);
  } finally { await ctx.close(); }
});

test('a short quick run trains on the built-in 2 MB corpus; two threads make one thread\'s model, bit for bit', { timeout: 300000 }, async () => {
  const runs = [];
  for (const threads of [1, 2]) {
    const { ctx, page } = await open(`?steps=60&train-threads=${threads}`);
    try {
      assert.equal(await val(page, 'train-preset'), 'quick');
      await page.click('#train-start');
      const st = await waitTrain(page, 'done');
      assert.ok(Number(st.valBpb) > 0 && Number(st.valBpb) < 6, `validation bpb ${st.valBpb}`);
      const d = await grab(page, '#download-atome02');
      assert.ok(d.bytes.length > 10000);
      runs.push({ valBpb: st.valBpb, model: Buffer.from(d.bytes).toString('hex') });
    } finally { await ctx.close(); }
  }
  assert.equal(runs[1].valBpb, runs[0].valBpb, 'the same validation bpb on 1 and 2 threads');
  assert.ok(runs[1].model === runs[0].model, 'the same ATOME02 bytes on 1 and 2 threads');
});
