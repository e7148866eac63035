// web/board.mjs — the "Download for a board" section: the open model as
// ATOME01 / ATOME02 / C header, and for each board of the table of boards
// (core/boards.def, from the module: `atome boards --json`) its card: the fit
// (model slot, RAM at Generate's window, the largest window that fits), the
// known answer, how to flash and run it, and its firmware downloads (its
// USB drive's standalone file — .hex / .bin / .uf2 — with Generate's
// settings; the semihosting .elf, or on a board without semihosting a
// standalone .elf).
import { $, enc, fmt, hexOf, guarded, markField, intField, fetchBytes, download } from './ui.mjs';
import { testEvent } from './hook.mjs';
import { initPicoRun } from './pico-run.mjs';

// the shipped model made for the smallest board, offered when the one chosen does not fit
const SMALL_MODEL = 'atome-60k.atome';

// The section: the boards (rows of the module's table, set by setBoards),
// the firmware templates fetched (board name -> promise of the ELF bytes),
// each card's verdict for the open model (ok | warn | bad; a card holding
// two rows also "own:<name>", its first row's own) and a serial that tells
// a fit overtaken by a later one.
export function initBoard(page) {
  const bs = { boards: [], templates: new Map(), fit: new Map(), serial: 0 };
  for (const id of ['window', 'prompt', 'n', 'temperature', 'top-k', 'top-p', 'seed']) $(id).addEventListener('change', () => updateFit(page, bs));
  wireModelDownloads(page);
  // the virtual Pico (the row whose emulator is rp2040js) boots the very file its card
  // downloads; its speed line gives the card's estimate (the cost model) at the image's window
  initPicoRun(async () => {
    const b = bs.boards.find((x) => x.emulator === 'rp2040js');
    if (!b) throw new Error('no board of the table runs in rp2040js');
    const r = await standaloneImage(page, bs, b, b.drive);
    const f = await page.gen.call('fit', { key: page.models.current, template: await template(bs, b.name), window: r.info.window });
    return { ...r, estimate: f.estimate_bytes_per_s };
  });
  return { state: bs, update: () => updateFit(page, bs), refresh: () => refreshBoard(page, bs),
    setBoards: (boards) => setBoards(page, bs, boards) };
}

// "cortex-m0plus" -> "Cortex-M0+"
const cpuName = (cpu) => cpu.replace(/^cortex-m/, 'Cortex-M').replace(/plus$/, '+');
const size = (n) => (n % 1048576 === 0 ? `${n / 1048576} MiB` : `${fmt(n / 1024)} KiB`);

// The rows that get a card (a row named by another's hex_with is on that
// row's card), and the second row of a two-row card (null for none).
// in the rows' card_order (the boards people own first: micro:bit, Pico, then the MPS2).
const cards = (boards) => boards.filter((b) => !boards.some((x) => x.hex_with === b.name)).sort((a, b) => a.card_order - b.card_order);
const partner = (boards, b) => (b.hex_with ? boards.find((x) => x.name === b.hex_with) ?? null : null);
const specs = (b) => `Arm ${cpuName(b.cpu)} · ${b.chip} · ${fmt(b.clock_hz / 1e6)} MHz · ${size(b.flash_bytes)} flash, ${size(b.ram_bytes)} RAM`;

// The board's downloads: [element id, format, standalone?, text, secondary?];
// a two-row card's drive file holds both rows' images, its .elf is the first's.
function downloadsOf(b, pair) {
  const v = pair ? `, ${b.label.split(' ').pop()}` : '';
  const debug = b.emulator === 'qemu' ? `Debugger / QEMU image${v} (.elf)` : `Debugger image${v} (.elf)`;
  const file = pair ? `${b.label.split(' ')[0]} file (.${b.drive})` : `Standalone image (.${b.drive})`;
  return [[`download-${b.drive}-${b.name}`, b.drive, true, file, false],
    b.semihosting ? [`download-fw-${b.name}`, 'elf', false, debug, true] : [`download-elf-${b.name}`, 'elf', true, debug, true]];
}

// One card a board (or a row and its hex_with row), in the table's order, and their downloads wired.
function setBoards(page, bs, boards) {
  bs.boards = boards;
  const els = cards(boards).map((b) => {
    const pair = partner(boards, b);
    const card = Object.assign(document.createElement('div'), { className: 'board-card' });
    card.dataset.board = b.name;
    const h = Object.assign(document.createElement('h4'), { textContent: `${b.card_label} ` });
    h.append(Object.assign(document.createElement('span'), { className: 'cpu',
      textContent: pair ? [b, pair].map((x) => `${x.label.split(' ').pop()}: ${specs(x)}`).join('; ') : specs(b) }));
    const actions = Object.assign(document.createElement('div'), { className: 'row actions wrap' });
    for (const [id, format, standalone, text, secondary] of downloadsOf(b, pair)) {
      const btn = Object.assign(document.createElement('button'), { type: 'button', id, textContent: text, disabled: true });
      if (secondary) btn.className = 'secondary';
      btn.addEventListener('click', () => guarded(() => (standalone ? downloadStandalone(page, bs, b, format) : downloadDebug(page, bs, b))));
      actions.append(btn);
    }
    if (b.emulator === 'rp2040js') actions.append(Object.assign(document.createElement('button'), { type: 'button', id: `board-run-${b.name}`,
      className: 'secondary', disabled: true, textContent: 'Run it here first (virtual Pico)' }));
    card.append(h, Object.assign(document.createElement('div'), { className: 'fit-body' }), actions,
      Object.assign(document.createElement('div'), { className: 'board-note' }));
    return card;
  });
  $('fit-table').replaceChildren(...els);
  refreshBoard(page, bs);
}

function refreshBoard(page, bs) {
  const ok = page.ready.module && page.ready.model;
  for (const id of ['download-atome01', 'download-atome02', 'download-header']) $(id).disabled = !ok;
  // a board's firmware buttons: off while its card says the model does not fit (the verdict says why)
  for (const b of cards(bs.boards)) {
    for (const btn of document.querySelectorAll(`.board-card[data-board="${b.name}"] .actions button`)) {
      // a two-row card's .elf is its first row's (the micro:bit's: the v1's, QEMU's microbit machine);
      // its .hex holds whichever rows fit
      const own = btn.id === `download-fw-${b.name}` && bs.fit.get(`own:${b.name}`);
      const tooBig = (own || bs.fit.get(b.name)) === 'bad';
      btn.disabled = !ok || tooBig;
      btn.title = tooBig ? 'This model does not fit this board: see above' : '';
    }
  }
}

async function template(bs, board) {
  if (!bs.templates.has(board)) bs.templates.set(board, fetchBytes(new URL(`../build/mcu/mcu/atome-fw-${board}.elf`, import.meta.url).href).catch((e) => {
    bs.templates.delete(board);
    throw new Error(`the ${board} firmware template is missing on the server (${e.message}); build it with tools/setup`);
  }));
  return bs.templates.get(board);
}

function chosenWindow(page) {
  const s = $('window').value.trim();
  return /^\d+$/.test(s) && Number(s) >= 1 && Number(s) <= page.limits.maxWindow ? Number(s) : 0;
}

async function updateFit(page, bs) {
  const key = page.models.current;
  if (!key || !page.ready.model) return;
  const serial = ++bs.serial;
  bs.fit.clear();
  const w = chosenWindow(page) || page.models.info(key).defaultWindow;
  for (const b of cards(bs.boards)) {
    const card = document.querySelector(`.board-card[data-board="${b.name}"]`);
    const pair = partner(bs.boards, b);
    const f = pair ? await pairVerdict(page, bs, b, pair, key, w) : await fitVerdict(page, bs, b, key, w);
    if (serial !== bs.serial) return;
    card.className = `board-card ${f.cls}`;
    bs.fit.set(b.name, f.cls);
    if (f.v1) bs.fit.set(`own:${b.name}`, f.v1.cls);
    page.refresh();
    const known = f.cls === 'bad' ? knownPara() : await knownAnswer(page, key, f.runW);
    // the v2 runs at a larger window than the v1 when its RAM allows: its story differs, so its own known answer
    const known2 = f.v2 && f.v1.cls !== 'bad' && f.v2.cls !== 'bad' && f.v2.runW !== f.runW
      ? await knownAnswer(page, key, f.v2.runW, `${f.pair.label}: `) : null;
    if (serial !== bs.serial) return;
    card.querySelector('.fit-body').replaceChildren(verdictPara(f), fitList(f.rows), known, ...(known2 ? [known2] : []));
    // how to flash and run it, only for a model that fits
    card.querySelector('.board-note').replaceChildren(...(f.cls === 'bad' ? smallerModel(page, key) : boardNote(page, b, key, f.runW)));
  }
}

// Whether the model fits the board at window w: { cls, verdict, rows, runW }
// (runW: the window the board runs at).
async function fitVerdict(page, bs, b, key, w) {
  try {
    const t = await template(bs, b.name);
    const f = await page.gen.call('fit', { key, template: t, window: w });
    const flashOk = f.model_bytes <= f.capacity, ramOk = f.max_window >= w;
    const verdict = !flashOk ? `Too big: the model does not fit the ${fmt(f.capacity)}-byte model slot` :
      f.max_window === 0 ? 'Too big: the engine does not fit the board\'s RAM at any window' :
      ramOk ? `Fits at a window of ${fmt(w)} bytes` : `Fits at a window of ${fmt(f.max_window)} bytes or less (not at ${fmt(w)})`;
    const cls = flashOk && f.max_window > 0 ? (ramOk ? 'ok' : 'warn') : 'bad';
    // an ATOME01 image of a board whose row says offset_stream (the micro:bit) also holds the model's
    // offset stream (docs/mcu.md, "the model slot")
    const ox = f.offset_stream
      ? `; ${fmt(((f.model_bytes + 3) & ~3) + 8 + 2 * f.model_bytes)} with the model's offset stream (faster rows)` : '';
    const rows = [['Flash (model slot)', `${fmt(f.model_bytes)} of ${fmt(f.capacity)} bytes${ox}`],
      [`RAM at window ${w}`, `${fmt(f.ram_at_window)} of ${fmt(f.arena_bytes)} bytes`],
      ['Largest window that fits', f.max_window ? fmt(f.max_window) : 'none']];
    if (f.encoding_choice) rows.push(['Encoding', f.encoding_choice]);
    // the cost model counts the emulator's cycles (the Pico's rp2040js) or QEMU's instructions at one per cycle
    const per = b.cost.count === 'cycles_per_byte'
      ? `emulated cycles a byte (cost model fitted to ${b.emulator}, docs/mcu-cost.md; flash wait states not counted)`
      : 'instructions a byte (cost model, docs/mcu-cost.md) at one per cycle, an upper bound on the board';
    // a speed only for a model the board can run
    if (f.estimate_bytes_per_s && flashOk && f.max_window > 0) rows.push(['Speed (estimate)', `about ${fmt(Math.round(f.estimate_bytes_per_s))} bytes/s at ` +
      `${fmt(f.clock_hz / 1e6)} MHz: ${fmt(f.estimate_insns_per_byte)} ${per}`]);
    return { cls, verdict, rows, runW: flashOk && f.max_window ? Math.min(w, f.max_window) : w };
  } catch (e) {
    return { cls: 'bad', verdict: e.message, rows: [], runW: w };
  }
}

// A card of two rows (a row with hex_with, the micro:bit v1 and v2): one file
// for both (a Universal Hex), so the verdict and rows of each, the better
// verdict for the card; when only the second holds the model the file holds
// its image alone, and the card says so.
async function pairVerdict(page, bs, b, pair, key, w) {
  const v1 = await fitVerdict(page, bs, b, key, w);
  const v2 = await fitVerdict(page, bs, pair, key, w);
  const rank = { ok: 2, warn: 1, bad: 0 };
  const cls = rank[v1.cls] >= rank[v2.cls] ? v1.cls : v2.cls;
  const only = v1.cls === 'bad' && v2.cls !== 'bad';
  const short = (x) => x.label.split(' ').pop();   // "micro:bit v2" -> "v2"
  const verdict = `${b.label}: ${v1.verdict}. ${pair.label}: ${v2.verdict}.` + (only ? ` The ${b.label.split(' ')[0]} file holds the ` +
    `${short(pair)} image only: it runs on a ${pair.label}, not on a ${short(b)}.` : '');
  const rows = [...v1.rows.map(([k, v]) => [`${short(b)} — ${k}`, v]), ...v2.rows.map(([k, v]) => [`${short(pair)} — ${k}`, v])];
  return { cls, verdict, rows, runW: v1.cls === 'bad' ? v2.runW : v1.runW, v1, v2, pair };
}

// A model too big for a board: the shipped board model, one click away.
function smallerModel(page, key) {
  if (key === SMALL_MODEL || !page.models.has(SMALL_MODEL)) return [];
  const p = document.createElement('p');
  p.textContent = `${SMALL_MODEL}, the shipped model made for small boards, fits it: `;
  const use = document.createElement('button');
  use.type = 'button';
  use.className = 'secondary';
  use.textContent = `Use ${SMALL_MODEL}`;
  use.addEventListener('click', () => guarded(async () => { $('model-select').value = SMALL_MODEL; await page.models.open(SMALL_MODEL); }));
  p.append(use);
  return [p];
}

function verdictPara(f) {
  const v = document.createElement('p');
  v.className = `verdict ${f.cls}`;
  v.textContent = f.verdict;
  return v;
}

function fitList(rows) {
  const dl = document.createElement('dl');
  for (const [k, val] of rows) {
    const dt = document.createElement('dt'), dd = document.createElement('dd');
    dt.textContent = k; dd.textContent = val;
    dl.append(dt, dd);
  }
  return dl;
}

function knownPara() {
  const known = document.createElement('p');
  known.className = 'known';
  return known;
}

// The first bytes the board prints for Generate's settings at its window.
async function knownAnswer(page, key, runW, who = '') {
  const known = knownPara();
  if (who) known.className = 'known known-v2';
  try {
    const g = pageSettings(page);
    const bytes = await page.gen.call('expect', { key, ...g, window: runW });
    known.append(Object.assign(document.createElement('span'), { className: 'label',
      textContent: `${who}Known answer — the board prints, after the prompt (window ${runW}): ` }),
      Object.assign(document.createElement('q'), { textContent: new TextDecoder().decode(bytes) }),
      Object.assign(document.createElement('code'), { className: 'known-hex', textContent: hexOf(bytes) }));
    known.dataset.hex = hexOf(bytes);
  } catch (e) { known.textContent = `Known answer: ${e.message}`; }
  return known;
}

// Generate's settings as the firmware's settings block takes them (the
// texts the CLI takes; n and seed checked here).
function pageSettings(page) {
  const L = page.limits;
  const int = (id, lo, hi, what, dflt) => ($(id).value.trim() === '' ? dflt : intField(id, lo, hi, what));
  return {
    prompt: enc.encode($('prompt').value), n: int('n', 0, L.nMax, 'Length', L.nDefault),
    temperature: $('temperature').value.trim() || null, topK: $('top-k').value.trim() || null, topP: $('top-p').value.trim() || null,
    seed: int('seed', 0, 4294967295, 'Seed', L.seedDefault), window: chosenWindow(page),
  };
}

function fwName(key, board) { return `${key.replace(/\.atome$/, '')}-${board}.elf`; }

// How to flash a board: its own words where a board has them, else the
// table's facts (its USB drive's file, its UART).
const FLASH_NOTES = {
  microbit: (base) => `Flash it: plug the micro:bit (v1 or v2) in by USB and drag ${base}-microbit.hex onto the MICROBIT drive; ` +
    'the file is a Universal Hex holding an image for each version, and the board takes its own. It restarts and prints ' +
    'the status line, the story and a byte count on its USB serial port: ' +
    'picocom -b 115200 --imap lfcrlf /dev/ttyACM0 (press reset to hear it again). The .elf is the v1\'s, for a debugger ' +
    '(pyocd, OpenOCD) or QEMU, with the prompt and settings on the semihosting command line.',
  'mps2-an385': (base) => `Flash it: copy ${base}-mps2-an385.bin to the MPS2 board's configuration USB drive and point ` +
    'its images.txt at it; the story comes out of UART0 at 115200 baud. Under QEMU: qemu-system-arm -M mps2-an385 -display none ' +
    `-monitor none -serial stdio -kernel ${base}-mps2-an385.bin. The .elf takes its settings over semihosting (below).`,
};
const flashNote = (b, base) => (FLASH_NOTES[b.name] ?? ((x) => `Flash it: copy ${x}-${b.name}.${b.drive} to the ${b.label}'s USB ` +
  'drive; it prints the status line, the story and a byte count on its serial port at 115200 baud. The .elf is for a debugger' +
  `${b.emulator === 'qemu' ? ' or QEMU' : ''}.`))(base);

// How to flash the board and read it, then the QEMU command with Generate's
// settings (a board QEMU does not have, the Pico: its steps and emulator).
function boardNote(page, b, key, w) {
  const base = page.models.current.replace(/\.atome$/, '');
  if (b.emulator !== 'qemu') return picoSteps(b, base);
  const p = document.createElement('p');
  const cmd = qemuCommand(page, b, key, w);
  p.textContent = flashNote(b, base);
  const label = document.createElement('p');
  label.className = 'cmd-label';
  const gw = chosenWindow(page) || page.models.info(key)?.defaultWindow;
  label.textContent = w === gw
    ? 'Run it under QEMU with the prompt and settings of Generate (at window ' + w + ', as Generate, it writes Generate\'s bytes):'
    : `Run it under QEMU with the prompt and settings of Generate, at the board's window ${w} (Generate runs at ${gw}, ` +
      'so its bytes differ from these; the known answer above is the board\'s):';
  return [p, label, commandRow(b, cmd)];
}

// The Pico's flashing steps, BOOTSEL to serial monitor, what its .elf is
// for, and the emulator command (tools/run-pico) for those without one.
function picoSteps(b, base) {
  const lead = Object.assign(document.createElement('p'), { textContent: 'Flash it with nothing but its USB cable:' });
  const ol = document.createElement('ol');
  ol.className = 'steps';
  for (const s of [
    'Hold the BOOTSEL button down while you plug the Pico into the computer by USB, then let go: a drive called RPI-RP2 appears.',
    `Drag ${base}-pico.uf2 onto the RPI-RP2 drive. The Pico writes it to its flash, the drive goes away and the Pico restarts ` +
      'as a USB serial port.',
    'Open that port, at any baud rate: picocom --imap lfcrlf /dev/ttyACM0 on Linux, the Arduino IDE\'s Serial Monitor, or any ' +
      'serial terminal. The Pico waits for it, then prints the status line, the story and a byte count. Unplug it and plug it ' +
      'back in (without BOOTSEL) to hear it again.',
    'The same bytes come out of UART0 at 115200 8N1 (GP0, pin 1, is TX; GP1, pin 2, RX) for a debug probe or a USB-serial ' +
      'adapter; with no USB host the Pico starts after 2 seconds.',
  ]) ol.append(Object.assign(document.createElement('li'), { textContent: s }));
  const elf = Object.assign(document.createElement('p'), { textContent: 'The .elf is the same image with its symbols, for a ' +
    'debugger on the Pico\'s SWD pins (a Raspberry Pi Debug Probe with OpenOCD). The Pico has no semihosting: both files carry ' +
    'Generate\'s prompt and settings.' });
  const label = Object.assign(document.createElement('p'), { className: 'cmd-label', textContent: 'No Pico at hand? Boot the ' +
    'file in the rp2040js emulator from the source tree (it prints what the Pico sends over USB):' });
  return [lead, ol, elf, label, commandRow(b, `tools/run-pico ${base}-pico.uf2 > story.txt`, 'emulator command')];
}

function qemuCommand(page, b, key, w) {
  const promptHex = hexOf(enc.encode($('prompt').value || 'Once upon a time'));
  const args = ['--prompt-hex', promptHex, '--n', /^\d+$/.test($('n').value.trim()) ? $('n').value.trim() : String(page.limits.nDefault)];
  for (const [flag, id] of [['--temperature', 'temperature'], ['--top-k', 'top-k'], ['--top-p', 'top-p'], ['--seed', 'seed']]) {
    const v = $(id).value.trim();
    if (/^[0-9.]+$/.test(v)) args.push(flag, v);
  }
  args.push('--window', String(w));
  return `qemu-system-arm -M ${b.machine} -display none -monitor none -serial none ` +
    `-semihosting-config enable=on,target=native,arg=atome${args.map((a) => `,arg=${a}`).join('')} ` +
    `-kernel ${fwName(key, b.name)} > story.txt`;
}

// The command, focusable, with its Copy button.
function commandRow(b, cmd, what = 'QEMU command') {
  const pre = document.createElement('pre');
  pre.textContent = cmd;
  pre.tabIndex = 0;                     // it scrolls sideways: the keyboard can reach it
  pre.setAttribute('role', 'group');     // (a <pre> may not carry a name of its own)
  pre.setAttribute('aria-label', `${what} for ${b.label}`);
  const copy = document.createElement('button');
  copy.type = 'button';
  copy.className = 'secondary';
  copy.textContent = 'Copy';
  copy.setAttribute('aria-label', `Copy the ${what} for ${b.label}`);
  copy.addEventListener('click', () => guarded(async () => {
    await navigator.clipboard.writeText(cmd);
    copy.textContent = 'Copied';
    setTimeout(() => { copy.textContent = 'Copy'; }, 1500);
  }));
  const row = document.createElement('div');
  row.className = 'cmd-row';
  row.append(pre, copy);
  return row;
}

// The model file's downloads (the boards' are wired by setBoards).
function wireModelDownloads(page) {
  const call = (type, args) => page.gen.call(type, args);
  const key = () => page.models.current;
  const base = () => key().replace(/\.atome$/, '');
  $('download-atome01').addEventListener('click', () => guarded(async () => download(await call('convert', { key: key(), encoding: 1 }), `${base()}-atome01.atome`)));
  $('download-atome02').addEventListener('click', () => guarded(async () => download(await call('convert', { key: key(), encoding: 2 }), `${base()}-atome02.atome`)));
  // as `atome header --model <file> [--name N] --out <N or the model>.h`: the
  // array is named by the Name field (atome_model when empty), the comment names the model and the file
  $('download-header').addEventListener('click', () => guarded(async () => {
    const name = $('header-name').value.trim();
    const file = `${name || base()}.h`;
    let r;
    try { r = await call('header', { key: key(), source: key(), name, file }); } catch (e) {
      if (!e.usage) throw e;
      const err = Object.assign(new Error(`Array name: ${e.message.replace(/^--name: /, '')}`), { field: 'header-name' });
      markField(err);
      throw err;
    }
    download(r.text, file, 'text/x-c');
  }));
}

// The semihosting .elf (settings from the debugger or QEMU's command line).
async function downloadDebug(page, bs, b) {
  const t = await template(bs, b.name);
  let r;
  try { r = await page.gen.call('firmware', { key: page.models.current, template: t, board: b.name }); } catch (e) { throw new Error(`${b.label}: ${e.message}`); }
  download(r.image, fwName(page.models.current, b.name));
}

// A standalone image with Generate's settings baked in, downloaded.
async function downloadStandalone(page, bs, b, format) {
  const r = await standaloneImage(page, bs, b, format);
  testEvent('standalone', b.name, r.info.expect_hex);
  download(r.bytes, `${page.models.current.replace(/\.atome$/, '')}-${b.name}.${format}`);
}

// The image (.hex / .bin / .uf2 / .elf) with Generate's settings baked in,
// { bytes, info }; a two-row card's .hex is the Universal Hex of both rows' images.
async function standaloneImage(page, bs, b, format) {
  const board = b.name;
  const pair = format === 'hex' ? partner(bs.boards, b) : null;   // the Universal Hex of the two rows' images
  const t = await template(bs, board);
  const t2 = pair ? await template(bs, pair.name) : null;
  let g;
  try { g = pageSettings(page); } catch (e) { markField(e); throw e; }
  const settings = { ...g, seed: String(g.seed) };
  let r;
  try {
    r = pair ? await page.gen.call('universal', { key: page.models.current, t1: t, t2, boards: [board, pair.name], settings })
      : await page.gen.call('standalone', { key: page.models.current, template: t, board, settings, format });
    if (pair) r.info.expect_hex = (r.info.v1 ?? r.info.v2).expect_hex;
  } catch (e) {
    throw new Error(`${b.label}: ${e.message.replace(/^--(temperature|top-k|top-p)/, (m, f) => ({ temperature: 'Temperature', 'top-k': 'Top-k', 'top-p': 'Top-p' }[f]))}`);
  }
  return r;
}
