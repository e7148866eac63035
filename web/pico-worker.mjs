// web/pico-worker.mjs — the page's virtual Pico: a Web Worker that boots a
// Pico .uf2 in rp2040js (the npm package, vendored into the site as
// vendor/rp2040js/) the way the RP2040's bootrom does (web/pico-core.mjs,
// the same code tools/run-pico runs), and posts what the board sends over
// USB as it comes. The page (web/pico-run.mjs) ends it with terminate().
//
// Messages in: { type: 'start', uf2 } once, then { type: 'input', bytes }
// (typed on the board's USB serial port). Messages out:
//   { type: 'usb', bytes }            what the board printed since the last one
//   { type: 'progress', cycles, seconds }   emulated cycles so far, wall seconds
//   { type: 'story', n, cyclesPerByte }      at the first count line
//   { type: 'done', cycles, seconds }  the image finished (no --loop, no --interactive)
//   { type: 'error', message }         the file was refused (UF2, boot CRC)
import * as rp from '../vendor/rp2040js/index.js';
import { parseUf2, bootCheck, createPico, storyCycles, latin1 } from './pico-core.mjs';
import { yieldNow } from './worker-util.mjs';

const SLICE_MS = 40;        // emulation between yields (input, stop)
let pico = null;

function boot(uf2) {
  const { base, data } = parseUf2(uf2);
  if (base !== 0x10000000) throw new Error(`the UF2 starts at 0x${base.toString(16)}, not at the flash base 0x10000000`);
  const c = bootCheck(data);
  if (!c.ok) throw new Error(`boot2 CRC 0x${c.crc.toString(16)} is not the stored 0x${c.stored.toString(16)}: the bootrom would not boot this image`);
  return data;
}

// The board's output watched on UART0 (the same bytes as USB, with the cycle
// at which each was sent): the status line says whether the image ends.
function watcher(st) {
  let line = [];
  return (b) => {
    st.uart.push(b); st.marks.push(pico.cycles); st.imarks.push(pico.instructions);
    line.push(b);
    if (b !== 10) return;
    const t = latin1(line);
    line = [];
    if (st.lines === 0 && t.startsWith('atome pico: ')) st.endless = / loop on| interactive/.test(t);
    if (!t.startsWith('atome: ')) return;
    st.lines++;
    if (st.lines === 1) {
      const c = storyCycles(st.uart, st.marks, st.imarks);
      postMessage({ type: 'story', n: c?.n ?? 0, cyclesPerByte: c?.cyclesPerByte ?? null });
    }
  };
}

async function run(uf2) {
  const data = boot(uf2);
  const st = { uart: [], marks: [], imarks: [], lines: 0, endless: false, usb: 0 };
  let out = [];
  pico = createPico(rp, data, { onUsb: (buf) => { for (const b of buf) out.push(b); }, onUart: watcher(st) });
  const t0 = performance.now();
  let usbSince = 0;
  const flush = () => {
    if (!out.length) return;
    st.usb += out.length;
    postMessage({ type: 'usb', bytes: Uint8Array.from(out) });
    out = [];
    usbSince = pico.cycles;
  };
  for (;;) {
    const end = performance.now() + SLICE_MS;
    while (performance.now() < end) { pico.run(5000); flush(); }
    const seconds = (performance.now() - t0) / 1000;
    postMessage({ type: 'progress', cycles: pico.cycles, seconds });
    // finished: the count line (or an error line) is out and USB has caught up
    // (or has stopped growing for 10 emulated ms)
    if (!st.endless && st.lines >= 1 && (st.usb >= st.uart.length || pico.cycles - usbSince > 1250000)) {
      postMessage({ type: 'done', cycles: pico.cycles, seconds });
      return;
    }
    await yieldNow();
  }
}

onmessage = (e) => {
  const m = e.data;
  if (m.type === 'start' && !pico) {
    run(new Uint8Array(m.uf2)).catch((err) => postMessage({ type: 'error', message: err.message }));
  } else if (m.type === 'input' && pico) pico.type(new Uint8Array(m.bytes), 'usb');
};
