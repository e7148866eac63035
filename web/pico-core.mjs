// web/pico-core.mjs — what booting an atome Raspberry Pi Pico image in
// rp2040js takes, shared by Node (tools/mcu/pico.mjs: tools/run-pico, the tests,
// tools/bench-mcu) and the page's emulator worker (web/pico-worker.mjs). No
// import and no Node API: the caller hands in rp2040js's classes ({ RP2040,
// USBCDC, ConsoleLogger, LogLevel }), from the npm package in Node and from
// the page's vendored copy (vendor/rp2040js/) in the browser.
//
// Contract.
//  - parseUf2(bytes): the UF2 blocks checked (both start magics and the end
//    magic, the family-id flag and family 0xe48bff56, 256-byte payloads,
//    block numbers 0..n-1 with one block count, addresses in flash); returns
//    { base, data, blocks } with data the contiguous flash bytes from base
//    (gaps 0xff), or throws an Error with a one-line reason.
//  - bootCheck(flash): the bootrom's test of the first 256 bytes (the
//    CRC-32/MPEG-2 of bytes 0..251 must equal the little-endian word at
//    252); returns { ok, crc, stored }.
//  - createPico(rp, flashBytes, { onUsb, onUart }) boots like the bootrom:
//    boot2 copied to SRAM at 0x20041f00, entered (Thumb) with LR = 0 and
//    SP = 0x20042000 (the top of SRAM); rp2040js ships no bootrom code, so
//    the image's own boot2 must set VTOR, SP and jump. rp2040js's CDC host
//    enumerates the board's USB device. Returns a session s: s.run(k)
//    executes k instructions (the clock ticked per instruction: USB
//    transfers, the timer), s.cycles / s.instructions count them,
//    s.usbConnected, s.type(bytes, 'usb' | 'uart') types on the serial port.
//    onUsb(bytes) gets what the board sends over USB, onUart(byte) each
//    UART0 byte (s.cycles then are the cycles at which it was sent).
//  - storyCycles(uart, marks, imarks, promptLen): the first story's generated
//    bytes in the UART0 bytes (after the status line and the prompt, up to the
//    "\natome: N bytes" line) and the emulated cycles / instructions a byte
//    between the first and the last of them; null before the count line.
//  - Emulated time: 125 MHz, one tick per cycle rp2040js reports (its
//    Cortex-M0+ cycle model; XIP flash wait states are not modelled).

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

export function createPico(rp, flashBytes, { onUsb = null, onUart = null } = {}) {
  const mcu = new rp.RP2040();
  mcu.logger = new rp.ConsoleLogger(rp.LogLevel.Error, true);
  mcu.flash.fill(0xff);
  mcu.flash.set(flashBytes);
  mcu.sram.set(flashBytes.subarray(0, 256), 0x41f00); // the bootrom's copy of boot2
  const { core, clock } = mcu;
  core.SP = 0x20042000;
  core.LR = 0;
  core.PC = 0x20041f00;
  const s = { mcu, cycles: 0, instructions: 0, usbConnected: false };
  const cdc = new rp.USBCDC(mcu.usbCtrl);
  s.cdc = cdc;
  cdc.onDeviceConnected = () => { s.usbConnected = true; };
  cdc.onSerialData = (buf) => onUsb?.(buf);
  mcu.uart[0].onByte = (b) => onUart?.(b);
  s.run = (k) => {
    for (let i = 0; i < k; i++) {
      const c = core.executeInstruction();
      s.cycles += c;
      s.instructions++;
      clock.tick(c * NS_PER_CYCLE);
    }
  };
  s.type = (bytes, on = 'usb') => { for (const x of bytes) on === 'uart' ? mcu.uart[0].feedByte(x) : cdc.sendSerialByte(x); };
  return s;
}

export const latin1 = (bytes) => { let t = ''; for (const b of bytes) t += String.fromCharCode(b); return t; };

export function storyCycles(uart, marks, imarks, promptLen = null) {
  const text = latin1(uart);
  const head = text.indexOf('\n');
  const m = /\natome: (\d+) bytes/.exec(text);
  if (head < 0 || !m) return null;
  const n = Number(m[1]);
  const end = m.index;
  const start = promptLen == null ? end - n : head + 1 + promptLen;
  if (n < 2 || start <= head) return { start, end, n, cyclesPerByte: null };
  return { start, end, n, cyclesPerByte: Math.round((marks[end - 1] - marks[start]) / (n - 1)),
    insnsPerByte: Math.round((imarks[end - 1] - imarks[start]) / (n - 1)) };
}
