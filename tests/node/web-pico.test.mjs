// tests/node/web-pico.test.mjs — the board's output in the page (issue 40):
// "Run it here first" (#board-run-pico) boots the Pico card's .uf2 in
// rp2040js in a Web Worker and #board-terminal shows exactly what the CLI's
// image prints in rp2040js under Node (tools/mcu/pico.mjs), whose story is
// `atome generate`'s bytes for the same settings; Stop ends the worker; no
// request leaves the page's origin. "Connect to the board" (#board-connect)
// with a stand-in navigator.serial playing back those bytes shows them and
// sends typed keys back; without Web Serial the button says so and names a
// serial monitor. No real board is in the loop. Short stories: the emulator
// is slow, and the machine is shared.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { native, firmwareFlags, storyBytes } from './artifacts.mjs';
import { useBrowser, requests, MODEL, open, fillSettings, errorText, shot } from './web-harness.mjs';
import { parseUf2, runPico } from '../../tools/mcu/pico.mjs';

const B = useBrowser();
const C = { prompt: 'Once', n: 6, temperature: '0.8', topK: 40, seed: 3, window: 32 };
const LONG = 180000;

// The CLI's .uf2 for C and what it prints over USB in rp2040js under Node.
let cli = null;
async function cliRun() {
  if (cli) return cli;
  const file = path.join(B.tmp(), 'cli-pico.uf2');
  const r = await native(['firmware', '--model', MODEL, '--board', 'pico', '--out', file, '--format', 'uf2', ...firmwareFlags(C)]);
  assert.equal(r.code, 0, r.stderr.toString());
  const info = JSON.parse(r.stdout.toString());
  const run = runPico(parseUf2(readFileSync(file)).data, { stories: 1 });
  assert.equal(run.timedOut, false);
  assert.ok(run.usb.equals(run.uart) && run.usb.length > 0, 'USB and UART0 carry the same bytes');
  cli = { info, usb: run.usb, uf2: readFileSync(file) };
  return cli;
}

const events = (page) => page.evaluate(() => window.__atome.events);
const terminalHex = (page) => page.evaluate(() => window.__atome.terminalHex());

async function ready(page) {
  await fillSettings(page, C, { explain: false });
  await page.dispatchEvent('#seed', 'change');
  await page.waitForFunction(() => { const b = document.getElementById('board-run-pico'); return b && !b.disabled; }, null, { timeout: LONG });
}

test('#board-run-pico: the Pico card\'s .uf2 in rp2040js in a worker prints the CLI\'s bytes into #board-terminal', { timeout: 600000 }, async () => {
  const want = await cliRun();
  const { ctx, page } = await open();
  const workers = [];
  page.on('worker', (w) => workers.push(w));
  try {
    await ready(page);
    const before = workers.length;
    const e0 = (await events(page)).length;
    await page.click('#board-run-pico');
    await page.waitForFunction((k) => window.__atome.events.slice(k).some((e) => (e[0] === 'pico' && e[1] === 'done') || e[0] === 'error'),
      e0, { timeout: LONG });
    assert.equal(await errorText(page), null);
    const ev = (await events(page)).slice(e0);
    assert.deepEqual(ev.filter((e) => e[0] === 'error'), [], 'the virtual Pico ran without an error');
    assert.ok(ev.some((e) => e[0] === 'pico' && e[1] === 'start' && e[2] === want.info.expect_hex), 'the page booted the image of these settings');
    // the terminal: exactly the bytes the CLI's image sent over USB in rp2040js under Node
    const got = Buffer.from(await terminalHex(page), 'hex');
    assert.ok(got.equals(want.usb), `terminal ${JSON.stringify(got.toString('latin1'))}\nCLI image ${JSON.stringify(want.usb.toString('latin1'))}`);
    // ... whose story is atome generate's bytes at the image's window
    const gen = await storyBytes(MODEL, C, 0, want.info.window);
    const text = got.toString('latin1');
    const head = text.indexOf('\n') + 1;
    assert.match(text.slice(0, head), /^atome pico: model 0x[0-9a-f]+ window 32 n 6 /);
    const story = Buffer.concat([Buffer.from(C.prompt), gen, Buffer.from('\n')]);
    assert.ok(got.subarray(head, head + story.length).equals(story), 'the story is atome generate\'s');
    assert.match(got.subarray(head + story.length).toString('latin1'), /^atome: 6 bytes, \d+ bytes\/s, estimate [\d.]+ bytes\/s at 125 MHz/);
    // the emulated cycles a byte and the real board's speed (atome firmware's estimate)
    const status = await page.textContent('#board-terminal-status');
    assert.match(status, /Emulated: [\d,]+ cycles a byte/);
    assert.ok(status.includes(`A real Pico at 125 MHz: about ${Math.round(want.info.estimate_bytes_per_s).toLocaleString('en-US')} bytes/s`), status);
    assert.ok(workers.length > before, 'the emulator ran in a worker');
    assert.ok(await page.isDisabled('#board-stop'), 'the finished run left nothing to stop');
    await shot(page, '40-pico-run', ['sec-board']);   // and axe-core's check of the terminal and its buttons

    // Stop ends the emulator's worker (a second run, stopped while it boots)
    const n = workers.length;
    await page.click('#board-run-pico');
    await page.waitForFunction(() => window.__atome.events.filter((e) => e[0] === 'pico' && e[1] === 'start').length === 2, null, { timeout: LONG });
    for (let i = 0; i < 600 && workers.length === n; i++) await new Promise((r) => setTimeout(r, 100));
    const w = workers[workers.length - 1];
    assert.ok(workers.length > n, 'the second run has its worker');
    const closed = new Promise((r) => w.once('close', r));
    await page.click('#board-stop');
    await Promise.race([closed, new Promise((_, j) => setTimeout(() => j(new Error('the worker was not ended by Stop')), 30000))]);
    assert.match(await page.textContent('#board-terminal-status'), /^Stopped\./);
    // nothing beyond the page's origin
    const origin = new URL(B.origin()).origin;
    const away = requests.filter((u) => !u.startsWith(`${origin}/`) && !u.startsWith('blob:') && !u.startsWith('data:'));
    assert.deepEqual(away, [], 'every request stays on the page\'s origin');
    assert.ok(requests.some((u) => /\/vendor\/rp2040js\/rp2040\.js$/.test(u)), 'rp2040js comes from the page\'s own vendor folder');
  } finally { await ctx.close(); }
});

// A stand-in Web Serial: one port whose readable plays back `hex` in small
// chunks, and whose writable records what the page sends (window.__serialSent).
const fakeSerial = (hex) => `(() => {
  const bytes = new Uint8Array(${JSON.stringify(hex)}.match(/../g).map((h) => parseInt(h, 16)));
  window.__serialSent = [];
  window.__serialOpened = null;
  const port = {
    async open(o) { window.__serialOpened = o; },
    async close() {},
    readable: new ReadableStream({ async pull(c) {
      if (!port.at) port.at = 0;
      if (port.at >= bytes.length) { await new Promise(() => {}); }
      await new Promise((r) => setTimeout(r, 5));
      c.enqueue(bytes.slice(port.at, port.at + 7)); port.at += 7;
    } }),
    // a slow port: keys typed faster than it takes them must queue, not be lost
    writable: new WritableStream({ async write(chunk) { await new Promise((r) => setTimeout(r, 30)); window.__serialSent.push(...chunk); } }),
  };
  Object.defineProperty(Navigator.prototype, 'serial', { configurable: true, get: () => ({ requestPort: async () => port, getPorts: async () => [port] }) });
})();`;

test('#board-connect: a stand-in Web Serial port playing back the bytes rp2040js printed shows them; typed keys go back', { timeout: 300000 }, async () => {
  const want = await cliRun();
  const { ctx, page } = await open('', { initScript: fakeSerial(want.usb.toString('hex')) });
  try {
    assert.equal(await page.textContent('#board-connect'), 'Connect to the board');
    await page.click('#board-connect');
    await page.waitForFunction((h) => window.__atome.terminalHex() === h, want.usb.toString('hex'), { timeout: 60000 });
    assert.deepEqual(await page.evaluate(() => window.__serialOpened), { baudRate: 115200 });
    assert.equal(await page.textContent('#board-terminal'), new TextDecoder().decode(want.usb));
    await page.focus('#board-terminal');
    await page.keyboard.type('Hello there');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => window.__serialSent.length >= 12, null, { timeout: 10000 });
    assert.deepEqual(await page.evaluate(() => window.__serialSent), [...Buffer.from('Hello there\r')]);
    assert.doesNotMatch(await page.textContent('#board-terminal-status'), /Could not send/);
    await page.click('#board-stop');
    assert.ok(await page.isDisabled('#board-stop'));
  } finally { await ctx.close(); }
});

test('#board-connect without Web Serial says so and names a serial monitor', { timeout: 120000 }, async () => {
  const { ctx, page } = await open('', { initScript: 'delete Navigator.prototype.serial;' });
  try {
    assert.equal(await page.evaluate(() => 'serial' in navigator), false);
    assert.match(await page.textContent('#board-connect'), /needs Web Serial/);
    await page.click('#board-connect');
    const s = await page.textContent('#board-terminal-status');
    assert.match(s, /no Web Serial/);
    assert.match(s, /picocom -b 115200/);
  } finally { await ctx.close(); }
});
