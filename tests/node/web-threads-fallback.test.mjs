// tests/node/web-threads-fallback.test.mjs — a page served without COEP is
// not cross-origin isolated (no shared memory): the training panel says so,
// takes one thread, and a run still trains to the end.
import test from 'node:test';
import assert from 'node:assert/strict';
import { useBrowser, open, waitTrain, shot } from './web-harness.mjs';

useBrowser({ isolated: false });

test('not cross-origin isolated: one thread, said so, and the run trains', { timeout: 300000 }, async () => {
  const { ctx, page } = await open('?steps=30');
  try {
    assert.equal(await page.evaluate(() => crossOriginIsolated), false);
    await page.waitForFunction(() => /not cross-origin isolated/.test(document.getElementById('train-threads-note').textContent));
    assert.equal(await page.inputValue('#train-threads'), '1');
    await page.click('#train-start');
    const st = await waitTrain(page, 'done');
    assert.ok(Number(st.valBpb) > 0 && Number(st.valBpb) < 8, `validation bpb ${st.valBpb}`);
    await shot(page, 'train-one-thread', ['sec-train']);
  } finally { await ctx.close(); }
});
