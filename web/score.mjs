// web/score.mjs — "Score your own text" (#sec-score): a text the person
// pastes or types, scored by one or two models side by side in the
// generation worker, exactly as `atome eval --model M --data FILE` scores a
// file (PackedModel.scoreSteps: chunks of the model's training seq from a
// fresh engine, byte 0 of a chunk not scored). Each character is shaded by
// the model's surprise (bits), the text's bits per byte is in #score-bpb
// (data-bpb, full precision) and #score-bpb-b; hovering, tapping or moving
// with the arrow keys in a text shows the byte's cost, the model's top five
// next bytes and the router's mix at that byte (the why-this-byte table).
import { $, enc, fmt, showError, hideError, markField, fieldError } from './ui.mjs';
import { routerTable, topLabel } from './why.mjs';

export const SCORE_LIMIT = 32768;        // bytes a text may have (two models keep ~200 bytes of detail a byte)
const PANES = [{ sel: 'score-model', bpb: 'score-bpb', view: 'score-view', detail: 'score-detail', head: 'score-head' },
  { sel: 'score-model-b', bpb: 'score-bpb-b', view: 'score-view-b', detail: 'score-detail-b', head: 'score-head-b' }];

// The section: the results of the two panes (null: none), the opened model
// keys, the rid of the scoring running, a serial that tells a run overtaken
// by a later one, the byte picked (-1: none), the typing timer.
export function initScore(page) {
  const sc = { res: [null, null], spans: [null, null], opened: new Map(), rid: 0, serial: 0, cur: -1, timer: 0 };
  $('score-run').addEventListener('click', () => runScore(page, sc));
  $('score-text').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); runScore(page, sc); }
  });
  // typing or pasting scores again after a pause
  $('score-text').addEventListener('input', () => { clearTimeout(sc.timer); sc.timer = setTimeout(() => runScore(page, sc, true), 600); });
  for (const id of ['score-model', 'score-model-b']) $(id).addEventListener('change', () => { $(id).dataset.user = '1'; runScore(page, sc, true); });
  PANES.forEach((p, k) => wireView(sc, k));
  new MutationObserver(() => mirrorModels(page)).observe($('model-select'), { childList: true, subtree: true, characterData: true });
  // the example text is scored the first time the section comes into view
  sc.seen = false;
  new IntersectionObserver((es) => { sc.seen = sc.seen || es.some((e) => e.isIntersecting); autoScore(page, sc); }).observe($('sec-score'));
  return { state: sc, refresh: () => { $('score-run').disabled = !page.ready.module || !$('score-model').value; autoScore(page, sc); } };
}

function autoScore(page, sc) {
  if (!sc.seen || sc.serial || !page.ready.module || !page.ready.model || !$('score-model').value) return;
  runScore(page, sc, true);
}

// The score selects list the models of Generate's list (B also "none");
// A starts on Generate's model, B on another shipped one.
function mirrorModels(page) {
  const opts = [...$('model-select').options].map((o) => [o.value, o.textContent]);
  PANES.forEach((p, k) => {
    const s = $(p.sel), keep = s.value, user = s.dataset.user === '1';
    const want = k === 1 ? [['', 'none'], ...opts] : opts;
    s.replaceChildren(...want.map(([v, t]) => new Option(t, v)));
    const dflt = k === 0 ? $('model-select').value || opts[0]?.[0] : opts.find(([v]) => v !== $('score-model').value)?.[0];
    s.value = user && want.some(([v]) => v === keep) ? keep : dflt ?? '';
  });
  page.refresh();
}

async function openKey(page, sc, value) {
  const key = `score:${value}`;
  const bytes = await page.models.bytes(value);
  if (sc.opened.get(key) !== bytes) {
    await page.gen.call('open', { key, bytes });
    sc.opened.set(key, bytes);
  }
  return key;
}

// Scores the text with each chosen model; `quiet`: started by typing (an
// empty text clears the panes, no error).
async function runScore(page, sc, quiet = false) {
  clearTimeout(sc.timer);
  if (!page.ready.module) return;
  const text = enc.encode($('score-text').value);
  if (!quiet) hideError();
  if (sc.rid) page.gen.call('stop', { target: sc.rid }).catch(() => {});
  const serial = ++sc.serial;
  try {
    if (!text.length) throw fieldError('score-text', 'Your text is empty: paste or type a few sentences to score');
    if (text.length > SCORE_LIMIT) throw fieldError('score-text', `Your text has ${fmt(text.length)} bytes; the page scores up to ${fmt(SCORE_LIMIT)}`);
  } catch (e) {
    if (!quiet || text.length) { showError(e.message); if (!quiet) markField(e); }
    return;
  }
  $('score-status').textContent = 'Scoring…';
  $('sec-score').dataset.state = 'scoring';
  for (let k = 0; k < 2; k++) {
    const value = $(PANES[k].sel).value;
    if (!value) { showPane(sc, k, null, null); continue; }
    let r;
    try { r = await scoreOne(page, sc, value, text, serial); } catch (e) {
      if (serial !== sc.serial) return;
      $('score-status').textContent = '';
      showError(`${value}: ${e.message}`);
      $('sec-score').dataset.state = 'error';
      return;
    }
    if (serial !== sc.serial || r.stopped) return;
    showPane(sc, k, { ...r, text, model: value }, page);
  }
  $('score-status').textContent = '';
  $('sec-score').dataset.state = 'done';
  if (sc.cur >= text.length) sc.cur = -1;
  for (let k = 0; k < 2; k++) pick(sc, k, sc.cur, false);
}

async function scoreOne(page, sc, value, text, serial) {
  const key = await openKey(page, sc, value);
  const job = page.gen.request('score', { key, text }, { onEvent: (ev, m) => {
    if (serial === sc.serial) $('score-status').textContent = `Scoring with ${value}: ${fmt(m.done)} of ${fmt(m.total)} bytes (${Math.floor(100 * m.done / m.total)} %)…`;
  } });
  sc.rid = job.rid;
  try { return await job.done; } finally { if (sc.rid === job.rid) sc.rid = 0; }
}

// The characters of the text (UTF-8 sequences; a byte that is not part of
// one is a character of its own): [first byte, byte count, text shown].
const UTF8 = new TextDecoder();
function characters(b) {
  const out = [];
  for (let i = 0; i < b.length;) {
    const c = b[i], n = c < 0x80 ? 1 : c >= 0xf0 && c < 0xf8 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 1;
    let ok = i + n <= b.length;
    for (let j = 1; ok && j < n; j++) ok = (b[i + j] & 0xc0) === 0x80;
    const len = ok ? n : 1;
    let t = len === 1 ? (c < 0x80 ? String.fromCharCode(c) : '\ufffd') : UTF8.decode(b.subarray(i, i + len));
    if (c === 10) t = '↵\n';
    else if (c === 9) t = '⇥\t';
    else if (c < 32 || c === 127) t = '·';
    out.push([i, len, t]);
    i += len;
  }
  return out;
}

// Bits a byte cost (null: not scored).
const bitsOf = (r, i) => (Number.isNaN(r.nats[i]) ? null : r.nats[i] / Math.LN2);

function showPane(sc, k, r) {
  sc.res[k] = r;
  const p = PANES[k], view = $(p.view), bpb = $(p.bpb);
  $(p.detail).replaceChildren();
  if (!r) {
    $(p.head).textContent = 'No second model';
    bpb.textContent = '';
    bpb.dataset.bpb = '';
    view.replaceChildren();
    view.hidden = true;
    sc.spans[k] = { spans: new Map(), starts: [] };
    return;
  }
  view.hidden = false;
  $(p.head).textContent = r.model;
  bpb.dataset.bpb = r.bpb === null ? '' : String(r.bpb);
  const whole = r.chunks * r.seq, tail = r.text.length - whole;
  bpb.replaceChildren(Object.assign(document.createElement('strong'),
    { textContent: r.bpb === null ? 'no bits per byte yet' : `${r.bpb.toFixed(3)} bits per byte` }),
  ` — ${r.bpb === null ? `atome eval needs one whole chunk of ${r.seq} bytes; the shading scores these ${fmt(r.text.length)} bytes anyway`
    : `over ${fmt(r.scoredBytes)} bytes: ${fmt(r.chunks)} chunk${r.chunks === 1 ? '' : 's'} of ${r.seq} bytes, as atome eval reads the text` +
      (tail ? `; the last ${fmt(tail)} byte${tail === 1 ? ' is' : 's are'} shaded but not counted` : '')}.`);
  const frag = document.createDocumentFragment();
  // the spans by first byte, and their first bytes in order (keys and hover look up here, not in the DOM)
  const spans = new Map(), starts = [];
  sc.spans[k] = { spans, starts };
  for (const [i, n, t] of characters(r.text)) {
    const s = document.createElement('span');
    s.textContent = t;
    s.dataset.i = String(i);
    s.dataset.n = String(n);
    let bits = 0, any = false;
    for (let j = i; j < i + n; j++) { const b = bitsOf(r, j); if (b !== null) { bits += b; any = true; } }
    s.className = any ? `b${Math.min(9, Math.floor(bits))}` : 'unscored';
    if (i >= whole) s.classList.add('tail');
    spans.set(i, s);
    starts.push(i);
    frag.append(s);
  }
  view.replaceChildren(frag);
}

function wireView(sc, k) {
  const view = $(PANES[k].view);
  const at = (e) => e.target.closest?.('span[data-i]');
  view.addEventListener('mouseover', (e) => { const s = at(e); if (s) pickBoth(sc, Number(s.dataset.i)); });
  view.addEventListener('click', (e) => { const s = at(e); if (s) pickBoth(sc, Number(s.dataset.i)); });
  view.addEventListener('focus', () => { if (sc.cur < 0) pickBoth(sc, 0); });
  view.addEventListener('keydown', (e) => {
    const { starts } = sc.spans[k] ?? { starts: [] };
    if (!starts.length) return;
    const step = { ArrowLeft: -1, ArrowRight: 1, Home: -1e9, End: 1e9, PageUp: -40, PageDown: 40 }[e.key];
    if (step === undefined) return;
    e.preventDefault();
    let lo = 0, hi = starts.length;   // the first character at or after the current byte
    while (lo < hi) { const m = (lo + hi) >> 1; if (starts[m] < sc.cur) lo = m + 1; else hi = m; }
    const j = Math.max(0, Math.min(starts.length - 1, (lo >= starts.length ? 0 : lo) + step));
    pickBoth(sc, starts[j], true);
  });
}

function pickBoth(sc, i, keyboard = false) {
  sc.cur = i;
  for (let k = 0; k < 2; k++) pick(sc, k, i, keyboard);
}

// Byte i picked in pane k: the character marked, its detail shown (and,
// from the keyboard, both kept in view).
function pick(sc, k, i, keyboard) {
  const r = sc.res[k], p = PANES[k];
  const view = $(p.view);
  view.querySelector('span.cur')?.classList.remove('cur');
  if (!r || i < 0) { $(p.detail).replaceChildren(); return; }
  const s = sc.spans[k]?.spans.get(i);
  if (!s) return;
  s.classList.add('cur');
  $(p.detail).replaceChildren(...scoreDetail(r, i, Number(s.dataset.n)));
  if (keyboard) {
    s.scrollIntoView({ block: 'nearest', inline: 'nearest' });
    if (document.activeElement === view) $(p.detail).scrollIntoView({ block: 'nearest' });
  }
}

function byteName(b) {
  if (b === 10) return 'newline';
  if (b === 32) return 'space';
  if (b < 32 || b >= 127) return `0x${b.toString(16).padStart(2, '0')}`;
  return `'${String.fromCharCode(b)}'`;
}

// DOM nodes describing the byte(s) of the character at i in pane result r.
function scoreDetail(r, i, n) {
  const out = [];
  for (let j = i; j < i + n && j < r.text.length; j++) {
    const b = r.text[j], bits = bitsOf(r, j);
    const head = document.createElement('p');
    head.className = 'why-title';
    if (bits === null) {
      head.textContent = `Byte ${fmt(j + 1)}: ${byteName(b)} — not scored: it starts a ${r.seq}-byte chunk, and atome eval reads ` +
        'each chunk afresh, so the model makes no guess at its first byte.';
      out.push(head);
      continue;
    }
    const rec = r.recs.subarray(j * r.stride, (j + 1) * r.stride);
    const T = 5, L = r.layers;
    head.textContent = `Byte ${fmt(j + 1)}: ${byteName(b)} — ${bits.toFixed(2)} bits (p = ${(100 * Math.exp(-r.nats[j])).toFixed(1)} %), ` +
      `the model's ${ordinal(rec[0] + 1)} choice${j >= r.chunks * r.seq ? ' (after the last whole chunk: not in the bits per byte)' : ''}.`;
    const top = document.createElement('p');
    top.className = 'why-top';
    const tops = [];
    for (let t = 0; t < rec[1]; t++) tops.push(`${topLabel(rec[2 + t])} ${(100 * rec[2 + T + t] / 65536).toFixed(1)}%`);
    top.textContent = `The model expected: ${tops.join(' · ')}`;
    const router = [], entropy = [];
    for (let l = 0; l < L; l++) {
      router.push([0, 1, 2].map((q) => rec[2 + 2 * T + 3 * l + q] / 32768));
      entropy.push(rec[2 + 2 * T + 3 * L + l] / 65536);
    }
    const cap = Object.assign(document.createElement('p'), { className: 'hint', textContent: 'The router\'s mix at this byte:' });
    out.push(head, top, cap, routerTable({ router, entropy }));
  }
  return out;
}

function ordinal(n) {
  const s = n % 100 >= 11 && n % 100 <= 13 ? 'th' : ['th', 'st', 'nd', 'rd'][n % 10] ?? 'th';
  return `${fmt(n)}${s}`;
}
