// tests/node/web-axe.test.mjs — axe-core (@axe-core/playwright, pinned in
// package.json) over the page's states at laptop and phone widths (issue
// #43): loaded, generated with "why this byte" and a byte picked, a long
// prompt folded, text scored by two models with a byte picked, a corpus
// offered for conversion, an error shown, training, trained with its saved
// runs, the board cards with a model too big for one. No serious or critical
// violation, and none of the rules the walk-through flagged, at any impact
// (a label on a <pre> or a <p>, a scrolling box the keyboard cannot reach,
// header cells without data, the known answer's contrast). Every other
// browser test runs the same check at each screenshot (web-harness.mjs shot).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useBrowser, open, shot, axeStates, finished, fillSettings, waitTrain, expectError } from './web-harness.mjs';

useBrowser();
const FLAGGED = ['aria-prohibited-attr', 'scrollable-region-focusable', 'th-has-data-cells', 'color-contrast'];

test('axe-core: no serious or critical violation in any state, at both widths', { timeout: 1200000 }, async () => {
  const { ctx, page } = await open('?steps=30&model-select=atome-944k.atome');
  try {
    await shot(page, '43-axe-loaded');
    await fillSettings(page, { prompt: 'x'.repeat(900), n: 120, temperature: '0.8', seed: 3 });
    await page.click('#generate');
    await finished(page);
    await page.focus('#why-canvas');
    await page.keyboard.press('ArrowLeft');
    await shot(page, '43-axe-generated');
    await page.click('#score-run');
    await page.waitForFunction(() => document.getElementById('sec-score').dataset.state === 'done', null, { timeout: 120000 });
    await page.hover('#score-view span[data-i="20"]');
    await shot(page, '43-axe-scored');
    await page.setInputFiles('#corpus-file', { name: 'u16.txt', mimeType: 'text/plain',
      buffer: Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('Once upon a time. '.repeat(2000), 'utf16le')]) });
    await page.waitForSelector('#corpus-encoding:not([hidden])');
    await page.click('#train-start');
    await expectError(page, /convert it to UTF-8/, 'Start before choosing');
    await shot(page, '43-axe-offer-error');
    await page.click('#corpus-builtin');
    await page.click('#error-close');
    await page.click('#train-start');
    await waitTrain(page, 'running');
    await shot(page, '43-axe-training');
    await waitTrain(page);
    await page.waitForFunction(() => /finished/.test(document.getElementById('train-saved').textContent), null, { timeout: 20000 });
    await page.waitForFunction(() => document.querySelector('.board-card[data-board="pico"] .known')?.dataset.hex);
    await shot(page, '43-axe-trained-board');
    const flagged = axeStates.flatMap(([s, ids]) => ids.filter((id) => FLAGGED.includes(id.split(':')[0])).map((id) => `${s}: ${id}`));
    assert.deepEqual(flagged, [], 'the rules the walk-through flagged');
    assert.ok(axeStates.length >= 12, `${axeStates.length} states checked`);
  } finally { await ctx.close(); }
});
