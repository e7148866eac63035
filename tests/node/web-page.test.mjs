// tests/node/web-page.test.mjs — the web page (web/, served by tools/serve,
// or with ATOME_WEB_SITE=1 tools/build-site's folder under a plain static
// server, as tools/test runs it: web-harness.mjs) in Debian's Chromium,
// headless, driven by playwright-core: what a person does on it, checked
// against the native CLI (tools/serve's own headers and routes:
// web-serve.test.mjs).
//
//  - the page loads with no request outside its origin (every request of
//    every page and worker is recorded);
//  - generation streams bytes equal to `atome generate` for the same model,
//    prompt, settings and seed (greedy, top-k, top-p, empty and multi-byte
//    UTF-8 prompts, a window, settings from the query string, the keyboard,
//    the scalar-module fallback), and "why this byte" equals
//    `atome generate --router-json`;
//  - a 200-step training run lowers the validation bpb; its downloads (.atome
//    ATOME01/02, C header, firmware for every board, the Pico's .uf2 among
//    them) pass `atome inspect`, generate the page's bytes natively, equal
//    `atome header` / `atome firmware`, and the firmware runs with the
//    native bytes: under QEMU (QEMU's boards), in rp2040js (the Pico's .uf2);
//    the board cards are the rows of `atome boards --json`, and the footer
//    shows `atome --version`'s version;
//  - a reload mid-run and a tab closed mid-save both continue to an .atome
//    byte-identical to the uninterrupted run's;
//  - bad inputs (empty, binary, too large and too short corpora, corrupt and
//    truncated models, a model too big for a board, IndexedDB full or denied)
//    show #error and the page still generates afterwards.
// Screenshots of each state go to build/screenshots/ (laptop and phone
// widths). Chromium or playwright-core missing fails the test: nothing is
// skipped (tools/setup installs both).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { repo, native, run, firstDiff, mulberry32, generateArgs, ckptSections } from './artifacts.mjs';
import { useBrowser, requests, CHROMIUM, SHOTS, MODEL, RUN_QEMU, hex, open, waitReady, shot, errorText, expectError,
  fillSettings, generate, finished, cliArgs, nativeHex, assertSameHex, grab, drop, state, setTrain, waitTrain } from './web-harness.mjs';

const B = useBrowser();

// ------------------------------------------------------------------ tests

const CASES = [
  { prompt: 'Once upon a time', n: 200 },
  { prompt: 'The little dog', n: 240, temperature: '0.8', topK: 40, seed: 7 },
  { prompt: '', n: 150, temperature: '1.2', topP: '0.9', seed: 12345, window: 32 },
  { prompt: 'Lily saw a café — “hello” 🐱 and ran', n: 120, temperature: '0.7', topK: 5, topP: '0.95', seed: 3, window: 8 },
];

test('generation equals the native CLI byte for byte; why-this-byte equals --router-json', async () => {
  const { ctx, page } = await open();
  try {
    await shot(page, '01-loaded');
    const opts = await page.evaluate(() => [...document.getElementById('model-select').options].map((o) => o.value));
    assert.ok(opts.includes('atome-60k.atome'), `model options: ${opts}`);
    // every shipped model is offered, the web model (the largest not named atome-60k) first
    const shipped = readdirSync(path.join(repo, 'models')).filter((f) => f.endsWith('.atome'));
    for (const f of shipped) assert.ok(opts.includes(f), `${f} is not offered`);
    const web = shipped.filter((f) => !f.includes('atome-60k')).sort((a, b) => statSync(path.join(repo, 'models', b)).size -
      statSync(path.join(repo, 'models', a)).size)[0];
    if (web) {
      assert.equal(opts[0], web, 'the web model comes first');
      // and it generates the CLI's bytes in the page
      await page.selectOption('#model-select', web);
      await page.waitForFunction((v) => document.getElementById('model-select').value === v && !document.getElementById('generate').disabled &&
        /parameters/.test(document.getElementById('model-info').textContent), web);
      const wc = { prompt: 'Once upon a time', n: 400, temperature: '0.8', topK: 40, topP: '0.95', seed: 1 };
      assertSameHex(await generate(page, wc), await nativeHex(path.join(repo, 'models', web), wc), `web model ${web}`);
      await page.evaluate(() => { document.getElementById('why-scroll').scrollLeft = 0; });
      await page.hover('#why-canvas', { position: { x: 120, y: 30 } });
      await shot(page, '02-web-model', ['sec-generate']);
      await page.selectOption('#model-select', 'atome-60k.atome');
      await page.waitForFunction(() => document.getElementById('model-select').value === 'atome-60k.atome' &&
        !document.getElementById('generate').disabled && /^atome-60k\.atome:/.test(document.getElementById('model-info').textContent));
    }
    for (const c of CASES) {
      const got = await generate(page, c);
      assertSameHex(got, await nativeHex(MODEL, c), `case ${JSON.stringify(c)}`);
    }
    // the explain lines of the last case, against the CLI's
    const c = CASES[1];
    await generate(page, c);
    const lines = await page.evaluate(() => window.__atome.whyLines());
    const jf = path.join(B.tmp(), 'router.jsonl');
    await nativeHex(MODEL, c, ['--router-json', jf]);
    const want = readFileSync(jf, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(lines.length, c.n);
    assert.deepEqual(lines, want);
    // hover the strip: the detail box names the byte and its top 5
    await page.evaluate(() => { document.getElementById('why-scroll').scrollLeft = 0; });
    await page.waitForTimeout(50);
    await page.hover('#why-canvas', { position: { x: 35, y: 30 } });
    const detail = await page.textContent('#why-detail');
    assert.match(detail, /^Byte 4: /);
    assert.match(detail, /top 5/);
    await shot(page, '02-generated-why', ['sec-generate']);
    // explain off gives the same bytes
    assertSameHex(await generate(page, c, { explain: false }), await nativeHex(MODEL, c), 'explain off');
    // the keyboard: Ctrl+Enter in the prompt generates; arrow keys move along the strip
    await fillSettings(page, { prompt: 'One day', n: 64 });
    await page.focus('#prompt');
    await page.keyboard.press('Control+Enter');
    assertSameHex(await finished(page), await nativeHex(MODEL, { prompt: 'One day', n: 64, temperature: '0', topK: 0, topP: '1', seed: 1 }),
      'Ctrl+Enter');
    await page.focus('#why-canvas');
    await page.keyboard.press('Home');
    await page.keyboard.press('ArrowRight');
    assert.match(await page.textContent('#why-detail'), /^Byte 2: /);
    // drag and drop: an ATOME01 copy of the model onto the Generate card, a
    // text file onto the Train card
    const a1 = path.join(B.tmp(), 'dropped-01.atome');
    assert.equal((await native(['convert', '--model', MODEL, '--format', 'atome01', '--out', a1])).code, 0);
    await drop(page, '#sec-generate', 'dropped-01.atome', readFileSync(a1));
    await page.waitForFunction(() => document.getElementById('model-select').value === 'dropped-01.atome' &&
      !document.getElementById('generate').disabled);
    assert.match(await page.textContent('#model-info'), /dropped-01\.atome: [\d,]+ parameters.*ATOME01/);
    assertSameHex(await generate(page, CASES[1]), await nativeHex(a1, CASES[1]), 'dropped model');
    await drop(page, '#sec-train', 'story.txt', Buffer.from('Once upon a time, a cat sat in the sun. '.repeat(400)));
    await page.waitForFunction(() => /story\.txt — 16,000 bytes/.test(document.getElementById('corpus-name').textContent));
    // every control has a label
    const unlabeled = await page.evaluate(() => [...document.querySelectorAll('input, select, textarea, button')]
      .filter((e) => !(e.labels?.length || e.getAttribute('aria-label') || e.textContent.trim()))
      .map((e) => e.id || e.outerHTML.slice(0, 60)));
    assert.deepEqual(unlabeled, []);
  } finally { await ctx.close(); }
});

test('settings come from the query string; the scalar module gives the same bytes', async () => {
  const c = { prompt: 'Tom and Sue', n: 90, temperature: '0.95', topK: 20, topP: '0.9', seed: 42 };
  const q = `?prompt=${encodeURIComponent(c.prompt)}&n=90&temperature=0.95&top-k=20&top-p=0.9&seed=42&steps=123`;
  const { ctx, page } = await open(q);
  try {
    assert.equal(await page.inputValue('#steps'), '123');
    await page.click('#generate');
    assertSameHex(await finished(page), await nativeHex(MODEL, c), 'query string');
  } finally { await ctx.close(); }
  const { ctx: c2, page: p2 } = await open('?scalar=1');
  try {
    assert.match(await p2.textContent('#module-status'), /scalar/);
    const cc = CASES[1];
    assertSameHex(await generate(p2, cc), await nativeHex(MODEL, cc), 'scalar module');
  } finally { await c2.close(); }
});

// The reference run of the resume tests (set in the training test).
const RESUME_Q = '?steps=400&save-ms=250&eval-every=100&sample-every=200&lr=2e-3';
let reference = null;

test('a 200-step run lowers the validation bpb; its downloads run natively, equal the CLI and run under QEMU', async () => {
  const { ctx, page } = await open();
  try {
    await setTrain(page, { steps: 200, 'eval-every': 100, 'sample-every': 100 });
    await page.click('#train-start');
    await page.waitForFunction(() => document.getElementById('train-status').dataset.state === 'running');
    await page.waitForFunction(() => +document.getElementById('train-status').dataset.step >= 40);
    await shot(page, '03-training');
    const st = await waitTrain(page);
    const vals = (await page.evaluate(() => window.__atome.events)).filter((e) => e[0] === 'val');
    const first = vals.find((v) => v[1] === 0)[2], last = Number(st.valBpb);
    assert.equal(Number(st.step), 200);
    assert.ok(Number.isFinite(last) && last < first - 1, `validation bpb ${first} -> ${last}`);
    assert.equal(vals.at(-1)[2], last, 'data-val-bpb holds the final pass');
    await page.waitForSelector('#samples .sample');
    await shot(page, '04-trained', ['sec-train']);

    // the trained model is now the one in Generate
    const key = await page.inputValue('#model-select');
    assert.match(key, /^trained-atome-60k-.*\.atome$/);
    const a2 = await grab(page, '#download-atome02');
    const a1 = await grab(page, '#download-atome01');
    const mfile = path.join(B.tmp(), key);
    writeFileSync(mfile, a2.bytes);
    for (const [f, enc] of [[a2.file, 'ATOME02'], [a1.file, 'ATOME01']]) {
      const ins = await native(['inspect', f]);
      assert.equal(ins.code, 0, ins.stderr);
      const j = JSON.parse(ins.stdout.toString());
      assert.equal(j.encoding, enc);
      assert.equal(j.params, 60800);
    }
    const conv = path.join(B.tmp(), 'conv01.atome');
    assert.equal((await native(['convert', '--model', a2.file, '--format', 'atome01', '--out', conv])).code, 0);
    assert.ok(readFileSync(conv).equals(a1.bytes), 'ATOME01 download = atome convert of the ATOME02 one');
    const c = { prompt: 'Once upon a time', n: 160, temperature: '0.8', topK: 40, topP: '0.95', seed: 5 };
    const got = await generate(page, c);
    assertSameHex(got, await nativeHex(a2.file, c), 'trained model, ATOME02');
    assertSameHex(got, await nativeHex(a1.file, c), 'trained model, ATOME01');

    const h = await grab(page, '#download-header');
    mkdirSync(path.join(B.tmp(), 'cli'), { recursive: true });
    const hn = path.join(B.tmp(), 'cli', h.name);        // the comment names the file written
    const hr = await native(['header', '--model', mfile, '--out', hn]);
    assert.equal(hr.code, 0, hr.stderr);
    assert.ok(h.bytes.equals(readFileSync(hn)), 'header = atome header');

    for (const [board, win] of [['mps2-an385', 64], ['microbit', 32]]) {
      const fw = await grab(page, `#download-fw-${board}`);
      const out = path.join(B.tmp(), `native-${board}.elf`);
      const fr = await native(['firmware', '--model', mfile, '--board', board, '--out', out]);
      assert.equal(fr.code, 0, fr.stderr);
      assert.ok(fw.bytes.equals(readFileSync(out)), `${board}: page firmware = atome firmware`);
      const fc = { prompt: 'Once upon a time', n: 48, temperature: '0.8', topK: 40, seed: 9, window: win };
      const q = await run(RUN_QEMU, ['--board', board, '--timeout', '90', fw.file, '--prompt-hex', hex(Buffer.from(fc.prompt)),
        '--n', '48', '--temperature', '0.8', '--top-k', '40', '--seed', '9', '--window', String(win)], { timeout: 120000 });
      assert.equal(q.code, 0, `${board} under QEMU: ${q.stderr}`);
      assertSameHex(hex(q.stdout), await nativeHex(mfile, fc), `${board} firmware under QEMU`);
    }
    // the standalone board files carry Generate's settings: equal to atome firmware's, known answer shown
    await fillSettings(page, { prompt: 'Once upon a time', n: 300, temperature: '0.8', topK: 40, topP: '0.95', seed: 3 });
    await page.dispatchEvent('#seed', 'change');
    const est = {};   // atome firmware's JSON per board (the speed estimate at the window it runs)
    for (const [id, board, format] of [['#download-hex-microbit', 'microbit', 'hex'], ['#download-bin-mps2-an385', 'mps2-an385', 'bin'],
      ['#download-uf2-pico', 'pico', 'uf2'], ['#download-elf-pico', 'pico', 'elf']]) {
      const got = await grab(page, id);
      assert.equal(got.name, `${key.replace(/\.atome$/, '')}-${board}.${format}`);
      const out = path.join(B.tmp(), `native-standalone-${board}.${format}`);
      const fr = await native(['firmware', '--model', mfile, '--board', board, '--out', out, '--format', format, '--prompt', 'Once upon a time',
        '--n', '300', '--temperature', '0.8', '--top-k', '40', '--top-p', '0.95', '--seed', '3']);
      assert.equal(fr.code, 0, fr.stderr);
      assert.ok(got.bytes.equals(readFileSync(out)), `${board}: page ${format} = atome firmware --format ${format}`);
      // the micro:bit file is the Universal Hex: its card's known answer and figures are the v1 part's
      const fj = JSON.parse(fr.stdout.toString()), part = board === 'microbit' ? fj.v1 : fj;
      const expect = part.expect_hex;
      est[board] = part;
      if (board === 'microbit') est['microbit-v2'] = fj.v2;
      await page.waitForFunction(([b, e]) => document.querySelector(`.board-card[data-board="${b}"] .known`)?.dataset.hex === e, [board, expect]);
    }
    // the cards by board (the list starts with the boards people own: micro:bit, Pico, then the MPS2)
    const cards = await page.evaluate(() => [...document.querySelectorAll('#fit-table .board-card')].map((r) => [r.dataset.board, r.textContent]));
    assert.deepEqual(cards.map(([b]) => b), ['microbit', 'pico', 'mps2-an385']);
    const byBoard = Object.fromEntries(cards);
    const fit = [byBoard['mps2-an385'], byBoard.microbit, byBoard.pico];
    assert.match(fit[0], /Fits at a window of 64 bytes/);
    assert.match(fit[1], /Fits at a window of 32 bytes or less \(not at 64\)/);
    // one card a row of the table of boards in its card_order (a row named by another's hex_with shares that row's card);
    // the footer shows atome --version's version
    const table = JSON.parse((await native(['boards', '--json'])).stdout.toString()).boards;
    assert.deepEqual(cards.map(([b]) => b), table.filter((b) => !table.some((x) => x.hex_with === b.name))
      .sort((a, b) => a.card_order - b.card_order).map((b) => b.name));
    assert.equal(`atome ${await page.textContent('#version')}\n`, (await native(['--version'])).stdout.toString());
    assert.match(fit[1], /Largest window that fits32/);
    assert.match(fit[2], /Raspberry Pi Pico[\s\S]*Fits at a window of 64 bytes/);
    assert.ok(fit[2].includes(`Largest window that fits${est.pico.max_window.toLocaleString('en-US')}`), fit[2]);
    assert.match(fit[2], /BOOTSEL[\s\S]*RPI-RP2[\s\S]*USB serial port[\s\S]*115200 8N1 \(GP0/);
    // the board's faster encoding and the speed estimate, as atome firmware says them (no row where it has none)
    for (const [i, board] of [[0, 'mps2-an385'], [1, 'microbit'], [2, 'pico']]) {
      assert.match(fit[i], /EncodingATOME01 \(re-encoded from ATOME02: faster on this board\)/);
      const j = est[board];
      if (j.estimate_bytes_per_s) {
        assert.ok(fit[i].includes(`Speed (estimate)about ${Math.round(j.estimate_bytes_per_s).toLocaleString('en-US')} bytes/s at ` +
          `${Math.round(j.clock_hz / 1e6).toLocaleString('en-US')} MHz`), `${board}: ${fit[i]}`);
      } else assert.doesNotMatch(fit[i], /Speed/, `${board}: atome firmware gives no estimate`);
      // the micro:bit's image holds the model's offset stream, and its card says so; the others' do not
      assert.equal(j.offset_stream === true, board === 'microbit', `${board}: ${JSON.stringify(j)}`);
      assert.equal(/offset stream/.test(fit[i]), board === 'microbit', `${board}: ${fit[i]}`);
    }
    assert.ok(est['mps2-an385'].estimate_bytes_per_s && est.microbit.estimate_bytes_per_s, 'the QEMU boards have a cost model');
    assert.ok(est.pico.estimate_bytes_per_s, 'the Pico has a cost model (rp2040js cycles)');
    // the micro:bit card: "BBC micro:bit (v1 and v2)", each version's window, fit and speed as atome firmware says them
    const v2 = est['microbit-v2'];
    assert.match(fit[1], /BBC micro:bit \(v1 and v2\)/);
    assert.match(fit[1], /micro:bit v2: Fits at a window of/);
    assert.ok(fit[1].includes(`v2 — Largest window that fits${v2.max_window.toLocaleString('en-US')}`), fit[1]);
    assert.ok(v2.estimate_bytes_per_s, 'the micro:bit v2 has a cost model (mps2-an386 counts)');
    assert.ok(fit[1].includes(`v2 — Speed (estimate)about ${Math.round(v2.estimate_bytes_per_s).toLocaleString('en-US')} bytes/s at 64 MHz`), fit[1]);
    assert.match(fit[2], /emulated cycles a byte \(cost model fitted to rp2040js/);
    assert.match(fit[0], /instructions a byte \(cost model, docs\/mcu-cost\.md\) at one per cycle/);
    await shot(page, '05-board', ['sec-board']);
    // the page's .uf2 boots in rp2040js through its own boot2 (the card's tools/run-pico command) and
    // prints, over USB, the prompt and the native bytes (a short story: the emulator is slow)
    const base = key.replace(/\.atome$/, '');
    assert.ok(fit[2].includes(`tools/run-pico ${base}-pico.uf2`), 'the Pico card names tools/run-pico');
    const sc = { prompt: 'Once upon a time', n: 40, temperature: '0.8', topK: 40, topP: '0.95', seed: 3 };
    await fillSettings(page, sc);
    await page.dispatchEvent('#seed', 'change');
    const small = await grab(page, '#download-uf2-pico');
    const rp = await run(path.join(repo, 'tools/run-pico'), [small.file], { timeout: 180000 });
    assert.equal(rp.code, 0, `tools/run-pico: ${rp.stderr}`);
    const story = Buffer.concat([Buffer.from(sc.prompt), Buffer.from(await nativeHex(mfile, sc), 'hex')]);
    assert.ok(rp.stdout.includes(story), `the Pico printed ${JSON.stringify(rp.stdout.toString('latin1'))}`);
    assert.match(rp.stdout.toString('latin1'), /\natome: 40 bytes/);
  } finally { await ctx.close(); }

  // the uninterrupted reference for the resume tests
  const { ctx: rc, page: rp } = await open(RESUME_Q);
  try {
    await waitTrainAfterClick(rp);
    reference = await runResult(rp);
  } finally { await rc.close(); }
});

async function waitTrainAfterClick(page) {
  await page.click('#train-start');
  return waitTrain(page);
}

// The finished run's .atome (ATOME02) and the parts of its checkpoint that
// must match bit for bit: weights, AdamW moments, calibration statistics
// (the state section also holds the informative wall-clock, so it is left out).
async function runResult(page) {
  const id = await page.evaluate(() => window.__atome.runId);
  await page.waitForSelector(`#ckpt-${id}`);
  const ck = ckptSections(new Uint8Array((await grab(page, `#ckpt-${id}`)).bytes));
  const parts = Object.fromEntries(['WGHT', 'ADAM', 'ACAL'].map((t) => [t, ck.get(t) && Buffer.from(ck.get(t))]));
  for (const t of ['WGHT', 'ADAM', 'ACAL']) assert.ok(parts[t]?.length > 0, `the final checkpoint has no ${t} section`);
  return { atome: (await grab(page, '#download-atome02')).bytes, ...parts, valBpb: (await state(page)).valBpb };
}

function sameRun(got, want, what) {
  assert.equal(got.valBpb, want.valBpb, `${what}: final validation bpb`);
  for (const t of ['WGHT', 'ADAM', 'ACAL']) assert.ok(got[t].equals(want[t]), `${what}: checkpoint ${t} differs`);
  assert.ok(got.atome.equals(want.atome), `${what}: .atome differs`);
}

test('a reload mid-run continues to the uninterrupted run\'s bytes', async () => {
  assert.ok(reference, 'needs the reference run of the training test');
  const { ctx, page } = await open(RESUME_Q);
  try {
    await page.click('#train-start');
    await page.waitForFunction(() => window.__atome.savedStep >= 60, null, { timeout: 60000 });
    await page.click('#train-pause');
    await waitTrain(page, 'paused');
    await shot(page, '06-paused');
    await page.click('#train-resume');
    await page.waitForFunction(() => window.__atome.savedStep >= 150, null, { timeout: 60000 });
    assert.equal((await state(page)).state, 'running');
    await page.reload();
    await waitReady(page);
    await page.waitForSelector('#resume-banner:not([hidden])');
    await shot(page, '07-resume-offer');
    await page.click('#resume-continue');
    await waitTrain(page);
    sameRun(await runResult(page), reference, 'paused, resumed, reloaded and continued');
    // the chart history came back with the checkpoint: the step-0 validation is there
    const vals = await page.evaluate(() => window.__atome.events.filter((e) => e[0] === 'val').map((e) => e[1]));
    assert.ok(!vals.includes(0), 'the continued run did not redo the step-0 validation');
  } finally { await ctx.close(); }
});

test('a tab closed mid-save loses nothing; several runs are listed and deleted', async () => {
  assert.ok(reference, 'needs the reference run of the training test');
  const { ctx, page } = await open(RESUME_Q);
  try {
    await page.click('#train-start');
    await page.waitForFunction(() => window.__atome.savedStep >= 100, null, { timeout: 60000 });
    // start a save and close the tab at once, without waiting for it
    await page.evaluate(() => { window.__atome.saveNow(); });
    await page.close({ runBeforeUnload: false });
    const p2 = await ctx.newPage();
    p2.logs = [];
    await p2.goto(`${B.origin()}/${RESUME_Q}`);
    await waitReady(p2);
    const ids = await p2.$$eval('#runs li[data-run-id]', (l) => l.map((e) => e.dataset.runId));
    assert.equal(ids.length, 1);
    await p2.click(`#continue-${ids[0]}`);
    await waitTrain(p2);
    sameRun(await runResult(p2), reference, 'continued after a tab closed mid-save');
    // a second run (a short one: only the list is checked), then delete one: the list follows
    await p2.fill('#steps', '20');
    await p2.click('#train-start');
    await waitTrain(p2);
    await p2.waitForFunction(() => document.querySelectorAll('#runs li[data-run-id]').length === 2);
    await shot(p2, '08-runs');
    await p2.click(`#delete-${ids[0]}`);                 // asks first
    assert.match(await p2.textContent(`#delete-${ids[0]}`), /click again/i);
    assert.equal(await p2.$$eval('#runs li[data-run-id]', (l) => l.length), 2);
    await p2.click(`#delete-${ids[0]}`);
    await p2.waitForFunction(() => document.querySelectorAll('#runs li[data-run-id]').length === 1);
    assert.equal(await p2.evaluate(() => document.activeElement.id), 'runs-heading');
    await p2.reload();
    await waitReady(p2);
    assert.equal(await p2.$$eval('#runs li[data-run-id]', (l) => l.length), 1);
  } finally { await ctx.close(); }
});

test('bad inputs show #error, keep what was there and the page still generates', async () => {
  const { ctx, page } = await open('?steps=200');
  const check = CASES[0];
  const want = await nativeHex(MODEL, check);
  const stillGenerates = async (what) => {
    assertSameHex(await generate(page, check, { explain: false }), want, `generation after ${what}`);
  };
  try {
    const r = mulberry32(11);
    const binary = Buffer.from(Array.from({ length: 30000 }, (_, i) => (i % 3 ? r() & 255 : 0)));
    const corpora = [
      ['empty.txt', Buffer.alloc(0), /empty\.txt: the file is empty/],
      ['photo.txt', binary, /photo\.txt: .*NUL.*binary/],
      ['huge.txt', Buffer.alloc(16 * 1024 * 1024 + 1, 0x61), /huge\.txt: 16,777,217 bytes is more than the 16,777,216 bytes/],
      ['short.txt', Buffer.from('Once upon a time there was a cat. '.repeat(20)), /short\.txt: .*shorter than one batch/],
    ];
    for (const [name, buffer, pattern] of corpora) {
      // the 16 MiB one from a file on disk (Chromium reads it there; a buffer crosses the DevTools pipe as base64)
      if (buffer.length > 1e6) writeFileSync(path.join(B.tmp(), name), buffer);
      await page.setInputFiles('#corpus-file', buffer.length > 1e6 ? path.join(B.tmp(), name) : { name, mimeType: 'text/plain', buffer });
      await expectError(page, pattern, name);
      if (name === 'photo.txt') await shot(page, '09-error');
      // the file is not taken, and Start will say so rather than train on the built-in corpus (issue #43)
      assert.match(await page.textContent('#corpus-name'), new RegExp(`^${name.replace('.', '\\.')} — not taken`));
      assert.equal(await page.isVisible('#corpus-builtin'), true);
      await stillGenerates(name);
    }
    const good = readFileSync(MODEL);
    const corrupt = Buffer.from(good);
    corrupt[corrupt.length >> 1] ^= 0x5a;
    const models = [
      ['cut.atome', good.subarray(0, 1000), /cut\.atome: truncated/],
      ['flip.atome', corrupt, /flip\.atome: .*(CRC|crc)/],
      ['notes.atome', Buffer.from('just some text, not a model\n'), /notes\.atome: not a \.atome model/],
      ['empty.atome', Buffer.alloc(0), /empty\.atome: the file is empty/],
    ];
    for (const [name, buffer, pattern] of models) {
      await page.setInputFiles('#model-file', { name, mimeType: 'application/octet-stream', buffer });
      await expectError(page, pattern, name);
      assert.equal(await page.inputValue('#model-select'), 'atome-60k.atome');
      await stillGenerates(name);
    }
    // a model too big for the micro:bit's slot: a random atome-944k
    const big = path.join(B.tmp(), 'big.ckpt'), bigA = path.join(B.tmp(), 'big-944k.atome');
    assert.equal((await native(['init', '--config', 'atome-944k', '--seed', '1', '--out', big])).code, 0);
    assert.equal((await native(['export', '--model', big, '--format', 'atome02', '--out', bigA, '--quiet'])).code, 0);
    await page.setInputFiles('#model-file', bigA);
    await page.waitForFunction(() => document.getElementById('model-select').value === 'big-944k.atome');
    // the micro:bit v1 cannot hold it, the v2 can: the card says the file is the v2's only
    await page.waitForFunction(() => /v2 image only/.test(document.querySelector('.board-card[data-board="microbit"] .verdict')?.textContent ?? ''));
    const mv = await page.textContent('.board-card[data-board="microbit"] .verdict');
    assert.match(mv, /micro:bit v1: Too big: the model does not fit the 65,504-byte model slot/);
    assert.match(mv, /The micro:bit file holds the v2 image only: it runs on a micro:bit v2, not on a v1/);
    assert.doesNotMatch(await page.textContent('.board-card[data-board="microbit"]'), /v1 — Speed/, 'no v1 speed for a board that cannot run it');
    // the v1's .elf is off (the verdict says why); the .hex (the v2's) and the mps2-an385's stay on
    await page.waitForFunction(() => document.getElementById('download-fw-microbit').disabled && !document.getElementById('download-hex-microbit').disabled);
    assert.equal(await page.isDisabled('#download-bin-mps2-an385'), false);
    assert.equal(await page.isDisabled('#download-uf2-pico'), false, 'the Pico holds an atome-944k');
    assert.match(await page.getAttribute('#download-fw-microbit', 'title'), /does not fit this board/);
    // and the worker still refuses it with the CLI's message if asked
    // (enabled and clicked in one step: the card's refresh disables it again at once)
    await page.evaluate(() => { const b = document.getElementById('download-fw-microbit'); b.disabled = false; b.click(); });
    await expectError(page, /micro:bit v1: the model is \d+ bytes, too big for the microbit model slot of 65504 bytes/, 'big model, micro:bit');
    await shot(page, '10-too-big');
    await page.selectOption('#model-select', 'atome-60k.atome');
    await page.waitForFunction(() => !document.getElementById('generate').disabled);
    await stillGenerates('a model too big for a board');
    // a bad setting
    await page.fill('#temperature', '1e3');
    await page.click('#generate');
    await expectError(page, /^Temperature must be a decimal number in 0\.\.100/, 'temperature 1e3');
    assert.equal(await page.evaluate(() => document.activeElement.id), 'temperature');
    assert.equal(await page.getAttribute('#temperature', 'aria-invalid'), 'true');
    // a training setting out of range: named by its label, nothing starts
    await page.fill('#lr', '-1');
    await page.click('#train-start');
    await expectError(page, /^Learning rate must be a number in \(0, 1000\] \(got '-1'\)$/, 'lr -1');
    assert.equal((await state(page)).state, 'idle');
    await page.fill('#lr', '3e-4');
    await page.fill('#temperature', '0.8');
    await stillGenerates('bad settings');
  } finally { await ctx.close(); }
});

test('IndexedDB full or denied: a message, training goes on, earlier saves are kept', async () => {
  const full = () => {
    window.__idbFull = false;
    const put = IDBObjectStore.prototype.put;
    IDBObjectStore.prototype.put = function (...a) {
      if (window.__idbFull) throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
      return put.apply(this, a);
    };
  };
  const { ctx, page } = await open('?steps=400&save-ms=250', { initScript: full });
  try {
    await page.click('#train-start');
    await page.waitForFunction(() => window.__atome.savedStep >= 50, null, { timeout: 60000 });
    const saved = await page.evaluate(() => { window.__idbFull = true; return window.__atome.savedStep; });
    await expectError(page, /could not save the run at step \d+: .*storage .* is full.*Training goes on/, 'IndexedDB full');
    const st = await waitTrain(page);
    assert.equal(st.step, '400');
    await page.evaluate(() => { window.__idbFull = false; });
    await page.reload();
    await waitReady(page);
    // the run is there as last saved before the disk "filled" (a save already
    // in flight then may have landed too), not lost and not finished
    const txt = await page.textContent('#runs');
    const m = txt.match(/step ([\d,]+) of 400, (\w+)/);
    assert.ok(m, `saved runs: ${txt}`);
    const step = Number(m[1].replace(/,/g, ''));
    assert.ok(step >= saved && step < 400 && m[2] === 'interrupted', `saved runs: ${txt} (last good save at step ${saved})`);
    await stillGeneratesIn(page);
  } finally { await ctx.close(); }

  const denied = () => {
    Object.defineProperty(window, 'indexedDB', { get() { throw new DOMException('Access denied', 'SecurityError'); } });
  };
  const { ctx: c2, page: p2 } = await open('?steps=120', { initScript: denied });
  try {
    assert.match(await p2.textContent('#runs'), /not available/);
    await p2.click('#train-start');
    await expectError(p2, /does not allow storage/, 'IndexedDB denied');
    await waitTrain(p2);
    await stillGeneratesIn(p2);
  } finally { await c2.close(); }
});

async function stillGeneratesIn(page) {
  const c = CASES[1];
  await page.selectOption('#model-select', 'atome-60k.atome');
  await page.waitForFunction(() => !document.getElementById('generate').disabled);
  assertSameHex(await generate(page, c, { explain: false }), await nativeHex(MODEL, c), 'generation afterwards');
}

test('nothing outside the origin was requested', () => {
  assert.ok(requests.length > 20, `only ${requests.length} requests recorded`);
  const outside = requests.filter((u) => !u.startsWith(`${B.origin()}/`) && !u.startsWith('blob:') && !u.startsWith('data:'));
  assert.deepEqual(outside, []);
  // (the files of the version folder, app-<version>/)
  for (const f of ['/build/wasm/atome.wasm', '/build/wasm/atome-scalar.wasm', '/web/gen-worker.mjs', '/web/train-worker.mjs',
    '/models/atome-60k.atome', '/web/data/tinystories-2m.txt', '/build/mcu/mcu/atome-fw-microbit.elf', '/build/mcu/mcu/atome-fw-pico.elf'])
    assert.ok(requests.some((u) => u.startsWith(`${B.origin()}/app-`) && /^app-[0-9a-f]{12}$/.test(u.slice(B.origin().length + 1).split('/')[0]) &&
      u.endsWith(f)), `${f} was never requested (are worker requests recorded?)`);
});
