// tests/node/web-person.test.mjs — what a demanding first-time user ran into
// (issue #43), in headless Chromium at laptop and phone widths: Generate
// answers at once however long the prompt and whatever the board cards are
// computing, a long prompt shows a percentage and is folded above the story;
// <|endoftext|> is a story break on the page (bytes, Copy and Save keep
// it); the keyboard stays on the control used; a UTF-16 / UTF-32 corpus is
// offered for conversion and Start never falls back to the built-in corpus;
// the wording points; a warning before leaving an unsaved run; the phone's
// first screen reaches Generate; the CLI command that resumes a downloaded
// checkpoint, run as the page words it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { native, corpusPath } from './artifacts.mjs';
import { useBrowser, SHOTS, open, shot, errorText, expectError, fillSettings, finished, grab, state, openTraining, waitTrain } from './web-harness.mjs';

const B = useBrowser();
const TEXT = readFileSync(corpusPath()).subarray(0, 200000);
const active = (page) => page.evaluate(() => document.activeElement?.id || document.activeElement?.tagName);

test('Generate answers at once with a 5,000-character prompt while the board cards compute; the prompt is folded', { timeout: 240000 }, async () => {
  const { ctx, page } = await open();
  try {
    const prompt = TEXT.toString('latin1').replace(/[^\x20-\x7e\n]/g, ' ').slice(0, 5000);
    await fillSettings(page, { prompt, n: 60, temperature: '0.8', topK: 40, topP: '0.95', seed: 1 }, { explain: false });
    await page.focus('#prompt');
    // leaving the prompt sets every board card computing its known answer for it; Generate at once
    // the state in the click's own task (a read after page.click returns can come after a short
    // generation has ended, on a busy machine); focus first, as a pointer's click moves it
    const t0 = Date.now();
    const at = await page.evaluate(() => {
      const b = document.getElementById('generate');
      b.focus();
      b.click();
      return { gen: b.disabled, stop: document.getElementById('stop').disabled, speed: document.getElementById('speed').textContent };
    });
    assert.deepEqual([at.gen, at.stop], [true, false], `at the click: Generate ${at.gen ? 'taken' : 'free'}, Stop ${at.stop ? 'off' : 'on'}`);
    assert.notEqual(at.speed, '', 'the status line says something at once');
    await page.waitForFunction(() => /Reading the prompt: [\d,]+ of 5,000 bytes \(\d+ %\)/.test(document.getElementById('speed').textContent) ||
      document.getElementById('output').dataset.done === '1', null, { timeout: 30000 });
    const first = Date.now() - t0;
    assert.ok(first < 1500, `the first percentage came ${first} ms after the click (board cards first?)`);
    await finished(page);
    // the echo shows the prompt's end; the button unfolds all of it
    const echo = await page.evaluate(() => ({ text: document.getElementById('output-prompt').textContent,
      more: document.getElementById('output-prompt-more').hidden ? null : document.getElementById('output-prompt-more').textContent }));
    assert.ok(echo.text.length <= 300 && prompt.endsWith(echo.text), `the echo holds ${echo.text.length} characters`);
    assert.match(echo.more, /4,760 more characters of the prompt/);
    await shot(page, '43-long-prompt-folded', ['sec-generate']);
    await page.click('#output-prompt-more');
    assert.equal(await page.textContent('#output-prompt'), prompt);
    // Save keeps the whole prompt
    const saved = await grab(page, '#output-save');
    assert.ok(saved.bytes.toString('latin1').startsWith(prompt), 'Save writes the whole prompt');
  } finally { await ctx.close(); }
});

test('<|endoftext|> is a story break on the page; the bytes, Copy and Save keep it', { timeout: 240000 }, async () => {
  const { ctx, page } = await open('?model-select=atome-944k.atome');
  try {
    await ctx.grantPermissions(['clipboard-read', 'clipboard-write']);
    await page.click('#generate');            // the page's defaults: 400 bytes, temperature 0.8, seed 1
    const hex = await finished(page);
    const bytes = Buffer.from(hex, 'hex').toString('utf8');
    assert.ok(bytes.includes('<|endoftext|>'), 'the default story holds the end-of-story mark (the test needs one)');
    const shown = await page.evaluate(() => ({ text: document.getElementById('output').textContent,
      breaks: document.querySelectorAll('#output .story-break').length }));
    assert.ok(!shown.text.includes('<|endoftext|>'), 'the mark is not shown raw');
    assert.equal(shown.breaks, bytes.split('<|endoftext|>').length - 1, 'one break a mark');
    assert.equal(shown.text, bytes.split('<|endoftext|>').join(''), 'the rest of the text is as generated');
    await page.click('#output-copy');
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    assert.ok(copied.includes('<|endoftext|>'), 'Copy keeps the mark');
    const saved = await grab(page, '#output-save');
    assert.ok(saved.bytes.toString('utf8').includes('<|endoftext|>'), 'Save keeps the mark');
    await shot(page, '43-story-break', ['sec-generate']);
    // a training sample cut in the middle of the mark ends with a story break, not "<|en"
    const sample = await page.evaluate(async () => {
      const { addSample } = await import(new URL('chart.mjs', document.querySelector('script[type=module]').src).href);
      addSample(7, 'The end.<|endoftext|>Once<|en');
      addSample(8, 'a < b, and <');
      const [s8, s7] = document.querySelectorAll('#samples .sample');
      return { text7: s7.textContent, breaks7: s7.querySelectorAll('.story-break').length, cut7: s7.querySelectorAll('.story-break.cut').length,
        text8: s8.textContent, breaks8: s8.querySelectorAll('.story-break').length };
    });
    await page.locator('#samples').screenshot({ path: path.join(SHOTS, '43-sample-cut-mark.png') });
    assert.deepEqual(sample, { text7: 'step 7: The end.Once', breaks7: 2, cut7: 1, text8: 'step 8: a < b, and <', breaks8: 0 });
  } finally { await ctx.close(); }
});

test('the keyboard stays on the control used: Generate, Pause, the why-this-byte strip', { timeout: 240000 }, async () => {
  const { ctx, page } = await open('?steps=400&save-ms=100', { height: 700 });
  try {
    await fillSettings(page, { prompt: 'Once upon a time', n: 300 });
    await page.focus('#generate');
    await page.keyboard.press('Enter');
    await finished(page);
    await page.waitForTimeout(100);
    assert.equal(await active(page), 'generate', 'after a keyboard-started generation');
    // Tab to the strip: its details come into view
    await page.focus('#explain');
    await page.keyboard.press('Tab');
    while (!['why-canvas', 'BODY'].includes(await active(page))) await page.keyboard.press('Tab');
    assert.equal(await active(page), 'why-canvas');
    await page.keyboard.press('ArrowLeft');
    const box = await page.evaluate(() => { const r = document.getElementById('why-detail').getBoundingClientRect(); return [r.top, r.bottom, innerHeight]; });
    assert.ok(box[1] > box[0] && box[1] <= box[2] && box[0] >= 0, `the detail box is at ${box[0]}..${box[1]} of a ${box[2]} px window`);
    // Enter on Pause: the keyboard goes to Resume, and Enter there back to Pause
    await page.focus('#train-start');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => window.__atome.savedStep >= 1, null, { timeout: 60000 });
    assert.equal(await active(page), 'train-pause');
    await page.keyboard.press('Enter');
    await waitTrain(page, 'paused');
    await page.waitForTimeout(100);
    assert.equal(await active(page), 'train-resume', 'after Enter on Pause');
    await page.keyboard.press('Enter');
    await waitTrain(page, 'running');
    await page.waitForTimeout(100);
    assert.equal(await active(page), 'train-pause', 'after Enter on Resume');
    await page.click('#train-stop');
    await waitTrain(page, 'done');
  } finally { await ctx.close(); }
});

// UTF-16LE with a byte-order mark, UTF-16BE and UTF-32LE without one
function wide(text, kind) {
  if (kind === 'UTF-16LE') return Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
  if (kind === 'UTF-16BE') return Buffer.from(text, 'utf16le').swap16();
  const cps = [...text].map((c) => c.codePointAt(0));
  const b = Buffer.alloc(4 * cps.length);
  cps.forEach((c, i) => b.writeUInt32LE(c, 4 * i));
  return b;
}

test('a UTF-16 or UTF-32 corpus is offered for conversion; Start never falls back to the built-in corpus', { timeout: 300000 }, async () => {
  const { ctx, page } = await open('?steps=20');
  try {
    const text = `Zoë wrote a story.\n${TEXT.toString('utf8', 0, 60000)}`;
    for (const kind of ['UTF-16BE', 'UTF-32LE', 'UTF-16LE']) {
      await page.setInputFiles('#corpus-file', { name: `story-${kind}.txt`, mimeType: 'text/plain', buffer: wide(text, kind) });
      await page.waitForSelector('#corpus-encoding:not([hidden])');
      assert.match(await page.textContent('#corpus-encoding'), new RegExp(`looks like ${kind} text`));
      assert.equal(await errorText(page), null, `${kind}: no error, an offer`);
    }
    await shot(page, '43-utf16-offer', ['sec-train']);
    // Start before choosing: says so and trains nothing
    await page.click('#train-start');
    await expectError(page, /Start: story-UTF-16LE\.txt is UTF-16LE text: convert it to UTF-8 or use its raw bytes first/, 'Start before choosing');
    assert.equal((await state(page)).state, 'idle');
    assert.equal(await page.evaluate(() => window.__atome.events.some((e) => e[0] === 'train' && e[1] === 'started')), false);
    await page.click('#corpus-convert');
    assert.match(await page.textContent('#corpus-name'), new RegExp(`story-UTF-16LE\\.txt — ${Buffer.byteLength(text).toLocaleString('en-US')} bytes \\(your file, converted from UTF-16LE to UTF-8\\)`));
    await page.click('#train-start');
    await waitTrain(page);
    // the samples start from the converted text's first line (16 bytes: 'ë' is two in UTF-8)
    assert.match(await page.textContent('#samples .sample span'), /^Zoë wrote a sto/);
    // raw bytes are a choice too
    await page.setInputFiles('#corpus-file', { name: 'raw.txt', mimeType: 'text/plain', buffer: wide(text, 'UTF-16LE') });
    await page.click('#corpus-raw');
    assert.match(await page.textContent('#corpus-name'), /raw\.txt — [\d,]+ bytes \(your file, raw UTF-16LE bytes\)/);
    // a refused file: Start says so instead of training on the built-in corpus
    await page.setInputFiles('#corpus-file', { name: 'empty.txt', mimeType: 'text/plain', buffer: Buffer.alloc(0) });
    await expectError(page, /empty\.txt: the file is empty/, 'an empty file');
    await page.click('#error-close');
    await page.click('#train-start');
    await expectError(page, /Start: empty\.txt: the file is empty/, 'Start after a refused file');
    assert.equal((await state(page)).state, 'done');
    await page.click('#corpus-builtin');
    assert.match(await page.textContent('#corpus-name'), /built in/);
  } finally { await ctx.close(); }
});

test('wording: router entropy, one date format, an interrupted run, the window unit, model cards, board order',
  { timeout: 300000 }, async () => {
    const { ctx, page } = await open('?steps=400&save-ms=100&model-select=atome-944k.atome');
    try {
      assert.match(await page.textContent('#why .hint'), /router entropy, one a layer/);
      // the model card, linked and served
      const card = await page.getAttribute('#model-info a', 'href');
      assert.match(card, /\/models\/atome-944k\.md$/);
      assert.equal((await fetch(new URL(card, B.origin()))).status, 200);
      // the board list starts with the boards people own; the micro:bit offers the 60K model
      assert.deepEqual(await page.$$eval('#fit-table .board-card', (l) => l.map((c) => c.dataset.board)), ['microbit', 'pico', 'mps2-an385']);
      // (a model too big for a board offers atome-60k: with the micro:bit v2 merged, the 944K fits the micro:bit card)
      await page.selectOption('#model-select', 'atome-60k.atome');
      await page.fill('#window', '64');
      await page.dispatchEvent('#window', 'change');
      await page.waitForFunction(() => /Fits at a window of 32 bytes or less \(not at 64\)/.test(document.querySelector('.board-card[data-board="microbit"]').textContent),
        null, { timeout: 30000 });
      // an interrupted run is not "running"; its date is written as the trained model's
      await page.click('#train-start');
      await page.waitForFunction(() => window.__atome.savedStep >= 5, null, { timeout: 60000 });
      page.once('dialog', (d) => d.accept());
      await page.reload();
      await page.waitForFunction(() => document.getElementById('runs').dataset.loaded === '1' && document.querySelector('#runs li[data-run-id]'));
      const li = await page.textContent('#runs li[data-run-id]');
      assert.doesNotMatch(li, /, running/);
      assert.match(li, /interrupted \(continues from this step\) — \d{1,2} [A-Z][a-z]{2} \d{4}, \d\d:\d\d/);
      await shot(page, '43-interrupted-run', ['sec-train']);
    } finally { await ctx.close(); }
  });

test('the phone\'s first screen reaches Generate', { timeout: 120000 }, async () => {
  const { ctx, page } = await open('', { width: 390, height: 844 });
  try {
    const r = await page.evaluate(() => document.getElementById('generate').getBoundingClientRect().bottom);
    assert.ok(r <= 844, `Generate ends ${r} px down a 844 px screen`);
    await page.click('#generate');
    await finished(page);
    await page.screenshot({ path: path.join(SHOTS, '43-phone-first-screen.png') });
  } finally { await ctx.close(); }
});

test('a downloaded checkpoint resumes in the CLI with the data and command the page names', { timeout: 300000 }, async () => {
  const { ctx, page } = await openTraining('?steps=200&save-ms=100');
  try {
    await page.waitForFunction(() => window.__atome.savedStep >= 10, null, { timeout: 60000 });
    await page.click('#train-pause');
    await waitTrain(page, 'paused');
    const id = await page.evaluate(() => window.__atome.runId);
    // the pause's own save has landed and the list names its checkpoint (an earlier save's may show a moment before)
    const at = (await state(page)).step;
    await page.waitForFunction(([i, s]) => document.querySelector(`#runs li[data-run-id="${i}"] .cli-resume code`)?.textContent
      .includes(`-step${s}.ckpt`), [id, at], { timeout: 30000 });
    const cmd = await page.textContent(`#runs li[data-run-id="${id}"] .cli-resume code`);
    const m = cmd.match(/^atome train --resume (\S+\.ckpt) --data (tinystories-2m\.txt) --out \1$/);
    assert.ok(m, cmd);
    const ck = await grab(page, `#ckpt-${id}`), data = await grab(page, `#corpus-${id}`);
    assert.equal(ck.name, m[1]);
    assert.equal(data.name, m[2]);
    const dir = B.tmp();
    writeFileSync(path.join(dir, m[1]), ck.bytes);
    writeFileSync(path.join(dir, m[2]), data.bytes);
    const r = await native(cmd.split(' ').slice(1).map((a) => (a.endsWith('.ckpt') || a.endsWith('.txt') ? path.join(dir, a) : a)).concat(['--quiet']),
      { timeout: 240000 });
    assert.equal(r.code, 0, `${cmd}: ${r.stderr}`);
    await page.click('#train-stop');
    await waitTrain(page, 'done');
  } finally { await ctx.close(); }
});

// last in the file: a page that refused to unload is left to the browser's end
test('leaving an unsaved run asks first; a finished one does not', { timeout: 240000 }, async () => {
  const { ctx: c2, page: p2 } = await open('?steps=20');
  try {
    await p2.click('#train-start');
    await waitTrain(p2);
    await p2.waitForFunction(() => /finished/.test(document.getElementById('train-saved').textContent), null, { timeout: 20000 });
    let asked = false;
    p2.once('dialog', (d) => { asked = true; d.accept(); });
    await p2.close({ runBeforeUnload: true });
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(asked, false, 'a finished, saved run lets the page go');
  } finally { await c2.close().catch(() => {}); }
  const { ctx, page } = await open('?steps=2000');
  try {
    await page.click('#train-start');
    await waitTrain(page, 'running');
    const asked = new Promise((resolve) => page.once('dialog', (d) => { resolve(d.type()); d.dismiss(); }));
    await page.close({ runBeforeUnload: true });
    assert.equal(await Promise.race([asked, new Promise((r) => setTimeout(() => r('no dialog'), 5000))]), 'beforeunload');
    assert.equal(page.isClosed(), false, 'the person chose to stay');
  } finally { await ctx.close().catch(() => {}); }
});
