// tests/node/web-threads.test.mjs — the training panel's presets and threads
// (issue #16): the page opens on the quick preset with the thread count of
// the machine (capped); Steps keeps the preset and recomputes its warmup,
// another field makes it custom, reference fills the papers' recipe; a run
// on 2 threads ends with the bits of the same run on 1 (validation bpb and
// the downloaded model). tests/node/web-threads-fallback.test.mjs covers a
// page that is not cross-origin isolated.
import test from 'node:test';
import assert from 'node:assert/strict';
import { useBrowser, open, waitTrain, grab, shot } from './web-harness.mjs';

useBrowser();
const val = (page, id) => page.inputValue(`#${id}`);

test('presets: quick by default, Steps keeps it, another field is custom, reference is the papers\' recipe', async () => {
  const { ctx, page } = await open();
  try {
    await page.waitForFunction(() => /threads here/.test(document.getElementById('train-threads-note').textContent));
    assert.equal(await val(page, 'train-preset'), 'quick');
    const cores = await page.evaluate(() => navigator.hardwareConcurrency);
    assert.equal(await val(page, 'train-threads'), String(Math.min(4, cores)));
    assert.equal(await val(page, 'steps'), '5000');
    assert.equal(await val(page, 'warmup'), '100');
    assert.match(await page.textContent('#train-preset-note'), /^Quick/);
    await page.fill('#steps', '1234');
    assert.equal(await val(page, 'train-preset'), 'quick');
    assert.equal(await val(page, 'warmup'), '25');
    await page.fill('#lr', '5e-3');
    assert.equal(await val(page, 'train-preset'), 'custom');
    assert.match(await page.textContent('#train-preset-note'), /^Custom/);
    await page.selectOption('#train-preset', 'reference');
    for (const [id, v] of Object.entries({ steps: '3000', lr: '3e-4', warmup: '0', cosine: '0', 'lr-min': '0', clip: '0', batch: '16', seq: '64' }))
      assert.equal(await val(page, id), v, `reference: #${id}`);
    assert.match(await page.textContent('#train-preset-note'), /^Reference/);
    await page.selectOption('#train-preset', 'quick');
    assert.equal(await val(page, 'steps'), '5000');
    assert.equal(await val(page, 'lr'), '4e-3');
    await shot(page, 'train-presets', ['sec-train']);
  } finally { await ctx.close(); }
});

test('a quick run on 2 threads ends with the bits of the same run on 1 thread', { timeout: 300000 }, async () => {
  const out = [];
  for (const threads of ['1', '2']) {
    const { ctx, page } = await open(`?steps=60&train-threads=${threads}`);
    try {
      assert.equal(await val(page, 'train-preset'), 'quick');
      await page.click('#train-start');
      const st = await waitTrain(page, 'done');
      const d = await grab(page, '#download-atome02');
      out.push({ bpb: st.valBpb, model: d.bytes.toString('hex'), text: await page.textContent('#train-text') });
    } finally { await ctx.close(); }
  }
  assert.equal(out[1].bpb, out[0].bpb, 'validation bpb differs between 1 and 2 threads');
  assert.ok(out[1].model === out[0].model, 'the downloaded model differs between 1 and 2 threads');
});
