// tools/pico.mjs — boot an atome Raspberry Pi Pico image in rp2040js (the
// Wokwi emulator: the RP2040's Cortex-M0+ with cycle counts, clocks, UART,
// timer and USB controller) the way the RP2040 bootrom does, and collect
// what the board writes over USB (rp2040js's CDC host) and UART0.
// Used by tools/run-pico, tools/bench-mcu --board pico and the tests.
//
// Contract.
//  - parseUf2(bytes): the UF2 blocks checked (both start magics and the end
//    magic, the family-id flag and family 0xe48bff56, 256-byte payloads,
//    block numbers 0..n-1 with one block count, addresses in flash); returns
//    { base, data } with data the contiguous flash bytes from base (gaps
//    0xff), or throws an Error with a one-line reason.
//  - bootCheck(flash): the bootrom's test of the first 256 bytes (the
//    CRC-32/MPEG-2 of bytes 0..251 must equal the little-endian word at
//    252); returns { ok, crc, stored }.
//  - runPico(flashBytes, opts) boots like the bootrom: boot2 copied to SRAM
//    at 0x20041f00, entered (Thumb) with LR = 0 and SP = 0x20042000 (the top
//    of SRAM). No bootrom code runs (rp2040js ships none): the image's own
//    boot2 must set VTOR, SP and jump. It runs until `stories` lines that
//    start "atome: " (a count line, or an error) have come out of UART0 and
//    USB has caught up, or `maxCycles` emulated cycles (then timedOut).
//    opts.input (a string or bytes) is typed on the serial port (USB, or
//    UART0 with opts.inputOn = 'uart') after the first such line.
//    Returns { uart, usb (Buffers), cycles, instructions, timedOut,
//    usbConnected, marks: [{ at: byte offset in uart, cycles }] } where
//    marks record the emulated cycle count at each UART byte.
//  - Emulated time: 125 MHz, one tick per cycle rp2040js reports (its
//    Cortex-M0+ cycle model; XIP flash wait states are not modelled).
import { RP2040, USBCDC, ConsoleLogger, LogLevel } from 'rp2040js';

export const FLASH_BASE = 0x10000000;
export const UF2_FAMILY_RP2040 = 0xe48bff56;
const NS_PER_CYCLE = 8; // 125 MHz

export function crc32Mpeg2(bytes) {
  let crc = 0xffffffff;
  for (const b of bytes) {
    crc ^= b << 24;
    for (let k = 0; k < 8; k++) crc = crc & 0x80000000 ? (crc << 1) ^ 0x04c11db7 : crc << 1;
  }
  return crc >>> 0;
}

function uf2Block(buf, i, count) {
  const v = new DataView(buf.buffer, buf.byteOffset + i * 512, 512);
  const u = (o) => v.getUint32(o, true);
  const at = `UF2 block ${i}`;
  if (u(0) !== 0x0a324655 || u(4) !== 0x9e5d5157 || u(508) !== 0x0ab16f30) throw new Error(`${at}: bad magic`);
  if (!(u(8) & 0x2000) || u(28) !== UF2_FAMILY_RP2040) throw new Error(`${at}: not for the RP2040 (family 0x${u(28).toString(16)})`);
  if (u(16) !== 256) throw new Error(`${at}: payload of ${u(16)} bytes, the bootrom takes 256`);
  if (u(20) !== i || u(24) !== count) throw new Error(`${at}: numbered ${u(20)} of ${u(24)}, expected ${i} of ${count}`);
  const addr = u(12);
  if (addr < FLASH_BASE || addr + 256 > FLASH_BASE + 16 * 1024 * 1024 || addr % 256) throw new Error(`${at}: address 0x${addr.toString(16)} is not a flash page`);
  return { addr, payload: buf.subarray(i * 512 + 32, i * 512 + 32 + 256) };
}

export function parseUf2(bytes) {
  const buf = new Uint8Array(bytes);
  if (buf.length === 0 || buf.length % 512) throw new Error(`UF2: ${buf.length} bytes is not a whole number of 512-byte blocks`);
  const n = buf.length / 512;
  const count = new DataView(buf.buffer, buf.byteOffset).getUint32(24, true);
  const blocks = [];
  for (let i = 0; i < n; i++) blocks.push(uf2Block(buf, i, count));
  if (count !== n) throw new Error(`UF2: ${n} blocks, the first says ${count}`);
  const base = Math.min(...blocks.map((b) => b.addr));
  const end = Math.max(...blocks.map((b) => b.addr + 256));
  const data = new Uint8Array(end - base).fill(0xff);
  for (const b of blocks) data.set(b.payload, b.addr - base);
  return { base, data, blocks: n };
}

export function bootCheck(flash) {
  const crc = crc32Mpeg2(flash.subarray(0, 252));
  const stored = new DataView(flash.buffer, flash.byteOffset + 252, 4).getUint32(0, true);
  return { ok: crc === stored, crc, stored };
}

function makeChip(flashBytes) {
  const mcu = new RP2040();
  mcu.logger = new ConsoleLogger(LogLevel.Error, true);
  mcu.flash.fill(0xff);
  mcu.flash.set(flashBytes);
  mcu.sram.set(flashBytes.subarray(0, 256), 0x41f00); // the bootrom's copy of boot2
  const core = mcu.core;
  core.SP = 0x20042000;
  core.LR = 0;
  core.PC = 0x20041f00;
  return mcu;
}

function toBytes(x) {
  return typeof x === 'string' ? Buffer.from(x, 'latin1') : Buffer.from(x || []);
}

// The run loop: batches of instructions, the clock ticked per instruction
// (rp2040js's alarms: USB transfers, the timer) and the stop test between.
function loop(mcu, st, opts) {
  const { core } = mcu;
  const clock = mcu.clock;
  const maxCycles = opts.maxCycles ?? 125e6 * 60;
  while (!st.done(st) && st.cycles < maxCycles) {
    for (let i = 0; i < 20000; i++) {
      const c = core.executeInstruction();
      st.cycles += c;
      st.instructions++;
      clock.tick(c * NS_PER_CYCLE);
    }
  }
  st.timedOut = !st.done(st);
}

export function runPico(flashBytes, opts = {}) {
  const mcu = makeChip(flashBytes);
  const stories = opts.stories ?? 1;
  const input = toBytes(opts.input);
  const st = { cycles: 0, instructions: 0, uart: [], usb: [], marks: [], lines: 0, usbConnected: false, fed: false };
  const cdc = new USBCDC(mcu.usbCtrl);
  cdc.onDeviceConnected = () => { st.usbConnected = true; };
  cdc.onSerialData = (buf) => { for (const b of buf) st.usb.push(b); };
  let line = [];
  mcu.uart[0].onByte = (b) => {
    st.uart.push(b);
    st.marks.push(st.cycles);
    line.push(b);
    if (b !== 10) return;
    if (Buffer.from(line).toString('latin1').startsWith('atome: ')) st.lines++;
    line = [];
    if (st.lines >= 1 && !st.fed && input.length) {
      st.fed = true;
      for (const x of input) opts.inputOn === 'uart' ? mcu.uart[0].feedByte(x) : cdc.sendSerialByte(x);
    }
  };
  // done: enough end lines on UART0, and USB has the same bytes (or there is
  // no USB host, or USB has stopped growing for 10 emulated ms)
  let usbSeen = 0, usbSince = 0;
  st.done = (s) => {
    if (s.lines < stories) return false;
    if (!s.usbConnected || s.usb.length >= s.uart.length) return true;
    if (s.usb.length !== usbSeen) { usbSeen = s.usb.length; usbSince = s.cycles; }
    return s.cycles - usbSince > 1250000;
  };
  loop(mcu, st, opts);
  return {
    uart: Buffer.from(st.uart), usb: Buffer.from(st.usb), cycles: st.cycles, instructions: st.instructions,
    timedOut: st.timedOut, usbConnected: st.usbConnected, marks: st.marks,
  };
}

// The first story's generated bytes in r.uart: after the status line
// ("atome pico: ...\n") and the prompt, up to the "\natome: N bytes" line.
// { start, end, n, cyclesPerByte } (cycles between the first and the last
// generated byte over the n - 1 steps between them), or null.
export function storyCycles(r, promptLen = null) {
  const text = r.uart.toString('latin1');
  const head = text.indexOf('\n');
  const m = /\natome: (\d+) bytes/.exec(text);
  if (head < 0 || !m) return null;
  const n = Number(m[1]);
  const end = m.index;
  const start = promptLen == null ? end - n : head + 1 + promptLen;
  if (n < 2 || start <= head) return { start, end, n, cyclesPerByte: null };
  return { start, end, n, cyclesPerByte: Math.round((r.marks[end - 1] - r.marks[start]) / (n - 1)) };
}
