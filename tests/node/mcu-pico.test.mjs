// tests/node/mcu-pico.test.mjs — the Raspberry Pi Pico (docs/mcu.md,
// "Raspberry Pi Pico"): `atome firmware --board pico --format uf2` images
// boot in rp2040js (tools/mcu/pico.mjs) the way the RP2040 bootrom boots them:
// the UF2 parsed into flash, the first 256 bytes checked by their CRC,
// copied to 0x20041f00 and entered with LR = 0, so our own boot2 must set
// VTOR, SP and jump. What the board sends over USB CDC (rp2040js's CDC host
// enumerates our device stack) and over UART0 must be the same bytes: the
// status line, then per story the prompt, exactly `atome generate`'s bytes,
// and the count line. For the board model and the web model, sampled and
// greedy, an empty prompt, --loop and --interactive; a damaged model slot;
// a boot loader with a bad CRC is refused. Needs the mcu and native builds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repo, native, firmwareFlags as flags, storyBytes } from './artifacts.mjs';
import { parseUf2, bootCheck, runPico, crc32Mpeg2 } from '../../tools/mcu/pico.mjs';

const MODELS = { board: path.join(repo, 'models/atome-60k.atome'), web: path.join(repo, 'models/atome-944k.atome') };
const MCU = process.env.ATOME_MCU_BUILD ?? path.join(repo, 'build/mcu');
const hex = (b) => Buffer.from(b).toString('hex');
const tmp = mkdtempSync(path.join(tmpdir(), 'atome-pico-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));


async function image(c, format = 'uf2') {
  const file = path.join(tmp, `pico-${Math.random().toString(36).slice(2)}.${format}`);
  const r = await native(['firmware', '--model', MODELS[c.model], '--board', 'pico', '--out', file, '--format', format, ...flags(c)]);
  assert.equal(r.code, 0, `atome firmware ${flags(c).join(' ')}: ${r.stderr}`);
  return { file, info: JSON.parse(r.stdout.toString()) };
}

// `atome generate`'s bytes of story k (seed S + k) at the image's window
const story = (c, k, window, prompt = c.prompt) => storyBytes(MODELS[c.model], c, k, window, prompt);

function boot(file, opts) {
  const { base, data } = parseUf2(readFileSync(file));
  assert.equal(base, 0x10000000, 'the UF2 starts at the flash base');
  assert.ok(bootCheck(data).ok, 'the bootrom accepts the boot loader (CRC-32/MPEG-2 of its first 252 bytes)');
  const r = runPico(data, opts);
  assert.equal(r.timedOut, false, `the board did not finish: ${r.uart.toString('latin1').slice(-200)}`);
  assert.ok(r.usbConnected, 'rp2040js\'s CDC host enumerated the board');
  assert.ok(r.usb.equals(r.uart), `USB and UART0 carried different bytes:\nUSB  ${JSON.stringify(r.usb.toString('latin1'))}\n` +
    `UART ${JSON.stringify(r.uart.toString('latin1'))}`);
  return r;
}

// The status line, then `stories` stories with their count lines; returns what follows.
async function check(c, info, got, stories, prompts = []) {
  const w = info.window;
  const text = got.toString('latin1');
  const nl = text.indexOf('\n');
  const first = await story(c, 0, w);
  assert.equal(info.expect_hex, hex(first.subarray(0, 64)), `${c.name}: expect_hex`);
  assert.equal(text.slice(0, nl), `atome pico: model 0x${info.container_crc32.slice(2).toLowerCase()} window ${w} n ${c.n} ` +
    `temperature ${c.temperature ?? '0'} top-k ${c.topK ?? '0'} top-p ${c.topP ?? '1'} seed ${c.seed ?? 1} ` +
    `loop ${c.loop ? 'on' : 'off'}${c.interactive ? ' interactive' : ''} expect ${info.expect_hex}`, `${c.name}: status line`);
  let rest = got.subarray(nl + 1);
  for (let k = 0; k < stories; k++) {
    const p = k === 0 || !c.interactive ? c.prompt : prompts[k - 1];
    const gen = k === 0 ? first : await story(c, k, w, p);
    const want = Buffer.concat([Buffer.from(p), gen, Buffer.from('\n')]);
    assert.ok(rest.subarray(0, want.length).equals(want), `${c.name}: story ${k} is not atome generate's:\n` +
      `got  ${JSON.stringify(rest.subarray(0, want.length).toString('latin1'))}\nwant ${JSON.stringify(want.toString('latin1'))}`);
    rest = rest.subarray(want.length);
    const line = rest.toString('latin1').slice(0, rest.indexOf(0x0a) + 1);
    assert.match(line, new RegExp(`^atome: ${c.n} bytes, \\d+ bytes/s, estimate \\d+\\.\\d bytes/s at 125 MHz \\(stack \\d+ of \\d+ bytes\\)\\n$`),
      `${c.name}: count line '${line}'`);
    assert.equal(line.match(/estimate ([\d.]+) bytes/)[1], info.estimate_bytes_per_s.toFixed(1), `${c.name}: the board's estimate is atome firmware's`);
    // the cost model (fitted to rp2040js cycles of greedy runs) against the emulated timer's own
    // rate, for greedy stories long enough that n bytes over n - 1 steps does not matter (the
    // sampler's sort costs the M0+ 17-25 % more: docs/mcu.md)
    const measured = Number(line.match(/bytes, (\d+) bytes\/s/)[1]);
    if (!c.temperature && c.n >= 32)
      assert.ok(Math.abs(measured - info.estimate_bytes_per_s) <= 0.1 * info.estimate_bytes_per_s,
        `${c.name}: measured ${measured} bytes/s, estimate ${info.estimate_bytes_per_s}`);
    rest = rest.subarray(line.length);
    if (c.interactive) {
      const typed = `> ${prompts[k] ?? ''}\n`;
      if (k + 1 < stories) { assert.equal(rest.subarray(0, typed.length).toString('latin1'), typed); rest = rest.subarray(typed.length); }
    }
  }
  return rest;
}

const CASES = [
  { name: 'board model, greedy', model: 'board', prompt: 'Once upon a time', n: 48 },
  { name: 'board model, sampled, UTF-8 prompt', model: 'board', prompt: 'Lily saw a café', n: 40, temperature: '0.8', topK: 40, topP: '0.95', seed: 7 },
  { name: 'board model, empty prompt', model: 'board', prompt: '', n: 32, temperature: '1', topP: '0.9', seed: 5 },
  { name: 'board model, loop', model: 'board', prompt: 'The dog', n: 16, temperature: '0.9', seed: 11, loop: 3 },
  { name: 'web model, greedy', model: 'web', prompt: 'Once', n: 6, window: 64 },
  { name: 'web model, sampled, empty prompt', model: 'web', prompt: '', n: 5, temperature: '0.8', topK: 20, seed: 3, window: 32 },
];

test('the Pico template exists and its image starts with our boot loader and vector table', () => {
  const elf = path.join(MCU, 'mcu', 'atome-fw-pico.elf');
  assert.ok(existsSync(elf), `missing ${elf}: run tools/setup`);
});

for (const c of CASES) {
  test(`pico, ${c.name}: USB CDC and UART0 carry atome generate's bytes`, async () => {
    const { file, info } = await image(c);
    assert.equal(info.board, 'pico');
    const stories = c.loop ?? 1;
    const r = boot(file, { stories });
    const rest = await check(c, info, r.uart, stories);
    if (!c.loop) assert.equal(rest.length, 0, `${c.name}: nothing after the count line`);
  });
}

test('pico, --interactive: a prompt typed over USB, then one typed on UART0', async () => {
  const c = { name: 'interactive', model: 'board', prompt: 'Tom', n: 12, seed: 2, temperature: '0.7', interactive: true };
  const { file, info } = await image(c);
  for (const inputOn of ['usb', 'uart']) {
    const r = boot(file, { stories: 2, input: 'Sam and\r\n', inputOn });
    await check(c, info, r.uart, 2, ['Sam and']);
  }
});

test('pico: the UF2 holds the ELF\'s flash bytes, and the boot loader\'s CRC is the bootrom\'s', async () => {
  const c = CASES[1];
  const u = await image(c, 'uf2');
  const b = await image(c, 'bin');
  const parsed = parseUf2(readFileSync(u.file));
  const { base } = parsed;
  const data = Buffer.from(parsed.data.buffer, parsed.data.byteOffset, parsed.data.length);
  const bin = readFileSync(b.file);
  assert.equal(base, 0x10000000);
  assert.ok(data.subarray(0, bin.length).equals(bin), 'UF2 payloads = the flash image');
  assert.ok(data.subarray(bin.length).every((x) => x === 0xff), 'the last page is padded with erased flash');
  assert.equal(crc32Mpeg2(Buffer.from('123456789')), 0x0376e6e7, 'CRC-32/MPEG-2 check value');
  const dv = new DataView(data.buffer, data.byteOffset);
  assert.equal(dv.getUint32(252, true), crc32Mpeg2(data.subarray(0, 252)));
  assert.equal(dv.getUint32(256 + 4, true) & 1, 1, 'the reset vector at 0x10000104 is a Thumb address');
  assert.ok(dv.getUint32(256, true) >= 0x20000000 && dv.getUint32(256, true) <= 0x20042000, 'the initial SP is in SRAM');
});

test('pico: a damaged model slot prints its one-line error, so does an image without settings; a bad boot loader CRC is refused', async () => {
  const c = CASES[0];
  const none = path.join(tmp, 'none.bin');
  const rn = await native(['firmware', '--model', MODELS.board, '--board', 'pico', '--out', none, '--format', 'bin']);
  assert.equal(rn.code, 0, rn.stderr);
  assert.match(rn.stderr.toString(), /standalone images only/);
  const r0 = runPico(new Uint8Array(readFileSync(none)), { stories: 1, maxCycles: 125e6 * 2 });
  assert.equal(r0.uart.toString('latin1'), 'atome: this image has no settings block: make it with atome firmware --prompt ... (docs/mcu.md)\n');
  assert.ok(r0.usb.equals(r0.uart));
  const { file } = await image(c, 'bin');
  const img = Buffer.from(readFileSync(file));
  const slot = img.lastIndexOf(Buffer.from('ATMSLOT1'));
  assert.ok(slot > 0);
  img[slot + 32 + 1000] ^= 0x5a;
  const r = runPico(new Uint8Array(img), { stories: 1, maxCycles: 125e6 * 2 });
  assert.equal(r.uart.toString('latin1'), 'atome: model slot: CRC-32 mismatch\n');
  assert.ok(r.usb.equals(r.uart));
  const bad = Buffer.from(readFileSync(file));
  bad[8] ^= 1;
  assert.equal(bootCheck(new Uint8Array(bad)).ok, false);
  const p = path.join(tmp, 'bad.bin');
  writeFileSync(p, bad);
  const { execFileSync } = await import('node:child_process');
  assert.throws(() => execFileSync(path.join(repo, 'tools/run-pico'), [p], { stdio: 'pipe' }),
    (e) => e.status === 3 && /boot2 CRC .* the bootrom would not boot this image/.test(e.stderr.toString()));
});
