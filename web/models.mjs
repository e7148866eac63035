// web/models.mjs — the models of #model-select (shipped, your own files,
// trained in the tab) and the one open in the generation worker, which
// Generate and the board downloads use.
import * as store from './store.mjs';
import { $, fmt, fetchBytes, showError, hideError, dropZone } from './ui.mjs';

// The section: entries (select value -> { label, kind: shipped|file|trained,
// bytes?, url?, runId?, info? }), the value of the open model, and a serial
// that tells an open overtaken by a later choice.
export function initModels(page) {
  const s = { entries: new Map(), current: null, serial: 0 };
  $('model-select').addEventListener('change', () => { hideError(); openModel(page, s, $('model-select').value); });
  $('model-file').addEventListener('change', (e) => { userModel(page, s, e.target.files[0]); e.target.value = ''; });
  dropZone('sec-generate', (f) => userModel(page, s, f));
  return {
    state: s,
    get current() { return s.current; },
    info: (key) => s.entries.get(key)?.info,
    has: (key) => s.entries.has(key),
    add: (value, entry, select = false) => addModelOption(s, value, entry, select),
    open: (value) => openModel(page, s, value),
    bytes: (value) => entryBytes(s.entries.get(value)),
  };
}

function addModelOption(s, value, entry, select) {
  let v = value, k = 2;
  while (s.entries.has(v) && s.entries.get(v).kind !== entry.kind) v = value.replace(/\.atome$/, '') + `-${k++}.atome`;
  s.entries.set(v, entry);
  let opt = [...$('model-select').options].find((o) => o.value === v);
  if (!opt) { opt = new Option(entry.label, v); $('model-select').add(opt); }
  opt.textContent = entry.label;
  if (select) $('model-select').value = v;
  return v;
}

// The bytes of an entry: kept, from its saved run, or fetched.
async function entryBytes(e) {
  if (!e.bytes && e.runId) {
    const r = await store.getRun(e.runId);
    if (!r?.atome02) throw new Error('the saved run of this model is gone');
    e.bytes = r.atome02;
  }
  if (!e.bytes) e.bytes = await fetchBytes(e.url);
  return e.bytes;
}

async function openModel(page, s, value) {
  const e = s.entries.get(value);
  if (!e) return;
  const serial = ++s.serial;
  if (page.generate.running) await page.generate.stop();
  page.ready.model = false;
  page.refresh();
  $('model-info').textContent = `Opening ${value}…`;
  try {
    const info = await page.gen.call('open', { key: value, bytes: await entryBytes(e) });
    if (serial !== s.serial) return;      // another model was chosen meanwhile
    e.info = info;
    s.current = value;
    page.ready.model = true;
    showModel(value, info, e.card);
    page.board.update();
  } catch (err) {
    if (serial !== s.serial) return;
    $('model-info').textContent = '';
    showError(`${value}: ${err.message}`);
    if (s.current && s.current !== value) { $('model-select').value = s.current; page.ready.model = true; }
  }
  page.refresh();
}

function showModel(value, i, card) {
  $('model-info').textContent = `${value}: ${fmt(i.params)} parameters, ${i.layers} layers of width ${i.dModel}, ` +
    `${fmt(i.bytes)} bytes (${i.encoding}), default window ${i.defaultWindow}, engine RAM ${fmt(i.arenaBytes)} bytes.`;
  // a shipped model's card: how it was trained, what it scores, its limits
  if (card) $('model-info').append(' ', Object.assign(document.createElement('a'), { href: card,
    textContent: `Model card (${decodeURIComponent(card.split('/').pop())})`, target: '_blank', rel: 'noopener' }));
  $('board-model').textContent = `Now: ${value} (${fmt(i.bytes)} bytes).`;
}

// Your own .atome file (picked or dropped): checked under a scratch key
// first, so a bad file never replaces a good model.
async function userModel(page, s, file) {
  hideError();
  if (!file) return;
  const bytes = await userModelBytes(file);
  if (!bytes) return;
  const name = file.name.replace(/[^\w.+-]/g, '_');
  const value = /\.atome$/i.test(name) ? name : `${name}.atome`;
  try {
    await page.gen.call('open', { key: '__check__', bytes });
    await page.gen.call('close', { key: '__check__' });
  } catch (err) {
    showError(`${file.name}: ${err.message}`);
    return;
  }
  const v = addModelOption(s, value, { label: `${value} (your file)`, kind: 'file', bytes }, true);
  await openModel(page, s, v);
}

// The file's bytes if it can be a model (the content decides, the name only
// labels); null after saying why not.
async function userModelBytes(file) {
  if (file.size === 0) { showError(`${file.name}: the file is empty (a .atome model is a few KB or more)`); return null; }
  if (file.size > 64 << 20) { showError(`${file.name}: ${fmt(file.size)} bytes is larger than any .atome model the engine takes (64 MiB)`); return null; }
  const bytes = new Uint8Array(await file.arrayBuffer());
  const magic = [0x41, 0x54, 0x4d, 0x43];
  if (!magic.every((b, i) => bytes[i] === b)) {
    const ckpt = String.fromCharCode(...bytes.subarray(0, 8)) === 'ATOMECKP';
    showError(`${file.name}: not a .atome model${ckpt ? ' (it is a training checkpoint: pack it with atome export)' : ' (it does not start with the ATMC magic)'}`);
    return null;
  }
  return bytes;
}
