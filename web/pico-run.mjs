// web/pico-run.mjs — the board's output in the page: one terminal box
// (#board-terminal) fed either by the virtual Pico (#board-run-pico: the
// exact .uf2 the Pico card downloads, booted in rp2040js in a Web Worker,
// web/pico-worker.mjs) or by a real board's serial port (#board-connect: Web
// Serial at 115200 baud). Keys typed in the box go to whichever is
// connected (an --interactive image reads them); #board-stop ends it.
import { $, enc, fmt, hexOf, guarded } from './ui.mjs';
import { testEvent, testExpose } from './hook.mjs';

const MONITORS = 'picocom -b 115200 --imap lfcrlf /dev/ttyACM0 (Linux, macOS: /dev/cu.usbmodem…), PuTTY (Windows), ' +
  'or the Arduino IDE\'s Serial Monitor';

// image(): the Pico card's .uf2 as the download would write it ({ bytes, info,
// estimate: a real Pico's bytes/s by atome firmware's cost model }).
export function initPicoRun(image) {
  const t = { session: null, bytes: [], decoder: new TextDecoder() };
  testExpose('terminalHex', () => hexOf(t.bytes));
  // the button is made with the board cards (web/board.mjs, from the table of boards), after this runs
  document.addEventListener('click', (e) => { if (e.target instanceof Element && e.target.closest('#board-run-pico')) guarded(() => runVirtual(t, image)); });
  $('board-connect').addEventListener('click', () => guarded(() => connect(t)));
  $('board-stop').addEventListener('click', () => end(t, 'Stopped.'));
  if (!('serial' in navigator)) {
    $('board-connect').textContent = 'Connect to the board (needs Web Serial)';
    $('board-connect').title = 'This browser has no Web Serial (Chromium and Edge have it)';
  }
  wireKeys(t);
  return t;
}

function status(text) { $('board-terminal-status').textContent = text; }

function clear(t) {
  t.bytes = [];
  t.decoder = new TextDecoder();
  $('board-terminal').textContent = '';
}

// A board left running (--loop, --interactive) keeps talking: the box and the
// bytes the test hook reads keep the last KEEP of it.
const KEEP = 1 << 18;
function show(t, bytes) {
  for (const b of bytes) t.bytes.push(b);
  if (t.bytes.length > 2 * KEEP) t.bytes.splice(0, t.bytes.length - KEEP);
  const box = $('board-terminal');
  const atEnd = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
  box.append(t.decoder.decode(bytes, { stream: true }));
  if (box.childNodes.length > 512) box.textContent = box.textContent.slice(-KEEP);   // one text node again
  if (atEnd) box.scrollTop = box.scrollHeight;
}

function begin(t, session) {
  t.session = session;
  $('board-stop').disabled = false;
}

// Ends the running session (the worker terminated, the port closed).
function end(t, text) {
  const s = t.session;
  t.session = null;
  $('board-stop').disabled = true;
  if (s) s.stop();
  if (text) status(text);
}

// Typed keys (and pasted text) go to the board: Enter as CR, as a serial
// terminal sends it; the board echoes what it takes.
function wireKeys(t) {
  const box = $('board-terminal');
  const send = (bytes) => { if (t.session) t.session.send(bytes); };
  box.addEventListener('keydown', (e) => {
    if (!t.session || e.ctrlKey || e.metaKey || e.altKey) return;
    const b = e.key === 'Enter' ? enc.encode('\r') : e.key === 'Backspace' ? Uint8Array.of(0x7f) : e.key.length === 1 ? enc.encode(e.key) : null;
    if (!b) return;
    e.preventDefault();
    send(b);
  });
  box.addEventListener('paste', (e) => { e.preventDefault(); send(enc.encode(e.clipboardData.getData('text'))); });
}

// The virtual Pico: the card's .uf2, booted in a worker; the status line
// shows emulated time, then rp2040js's cycles a byte and the real board's speed.
async function runVirtual(t, image) {
  end(t, null);
  clear(t);
  status('Making the Pico file…');
  let made;
  try { made = await image(); } catch (e) { status('Virtual Pico: no Pico file for these settings (see the message above).'); throw e; }
  const { bytes, info, estimate } = made;
  const worker = new Worker(new URL('./pico-worker.mjs', import.meta.url), { type: 'module' });
  const session = { kind: 'emulator', stop: () => worker.terminate(), send: (b) => worker.postMessage({ type: 'input', bytes: b }) };
  begin(t, session);
  const est = estimate ?? info.estimate_bytes_per_s;
  let story = '';
  worker.onmessage = (e) => {
    const m = e.data;
    if (t.session !== session) return;
    if (m.type === 'usb') show(t, m.bytes);
    else if (m.type === 'progress') status(`Virtual Pico (rp2040js): ${(m.cycles / 125e6).toFixed(3)} s of the board's time emulated in ` +
      `${m.seconds.toFixed(1)} s. ${story}`);
    else if (m.type === 'story') {
      story = speedText(m, est);
      $('board-terminal').dataset.cyclesPerByte = m.cyclesPerByte ?? '';
      testEvent('pico', 'story', m.n, m.cyclesPerByte);
    } else if (m.type === 'done') {
      end(t, `Virtual Pico: finished after ${(m.cycles / 125e6).toFixed(3)} s of the board's time (${m.seconds.toFixed(1)} s here). ${story}`);
      testEvent('pico', 'done');
    } else if (m.type === 'error') {
      end(t, `Virtual Pico: ${m.message}`);
      testEvent('error', m.message);
    }
  };
  worker.onerror = (e) => { if (t.session === session) end(t, `Virtual Pico: the emulator failed (${e.message ?? 'worker error'})`); };
  worker.postMessage({ type: 'start', uf2: bytes });
  status('Virtual Pico: booting the .uf2 the way the RP2040\'s bootrom does…');
  testEvent('pico', 'start', info.expect_hex);
}

function speedText(m, est) {
  const real = est ? `A real Pico at 125 MHz: about ${fmt(est)} bytes/s (atome firmware's cost model).` : '';
  if (!m.cyclesPerByte) return real;
  return `Emulated: ${fmt(m.cyclesPerByte)} cycles a byte (${fmt(125e6 / m.cyclesPerByte)} bytes/s of board time; rp2040js counts no ` +
    `flash wait states). ${real}`;
}

// A real board: Web Serial (Chromium, Edge) at 115200 baud; without it, the
// serial monitors to use instead.
async function connect(t) {
  if (!('serial' in navigator)) {
    status(`This browser has no Web Serial (Chromium and Edge have it; Firefox and Safari do not). Open the board's serial port ` +
      `at 115200 baud in a serial monitor instead: ${MONITORS}.`);
    testEvent('serial', 'missing');
    return;
  }
  let port;
  try { port = await navigator.serial.requestPort(); } catch (e) {
    if (e.name === 'NotFoundError') { status('No serial port was chosen.'); return; }
    throw e;
  }
  end(t, null);
  clear(t);
  await port.open({ baudRate: 115200 });
  const reader = port.readable.getReader();
  const writer = port.writable.getWriter();
  // keys typed quickly: one writer, the writes in order, a failure said in the status line
  let writes = Promise.resolve();
  const session = {
    kind: 'serial',
    stop: () => {
      writer.releaseLock();
      reader.cancel().catch(() => {}).finally(() => port.close().catch(() => {}));
    },
    send: (b) => {
      writes = writes.then(() => writer.write(b)).catch((e) => { if (t.session === session) status(`Could not send to the board: ${e.message}`); });
    },
  };
  begin(t, session);
  status('Connected to the board\'s serial port at 115200 baud: press reset (the Pico: unplug and plug in) to hear it again.');
  testEvent('serial', 'open');
  for (;;) {
    let r;
    try { r = await reader.read(); } catch (e) { if (t.session === session) end(t, `The serial port closed: ${e.message}`); return; }
    if (r.done) break;
    if (t.session === session) show(t, r.value);
  }
  reader.releaseLock();
  if (t.session === session) end(t, 'The board closed its serial port.');
  testEvent('serial', 'closed');
}
