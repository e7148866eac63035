// web/why.mjs — the "why this byte" strip: one 10-px column per generated
// byte (the character on top, then for each layer three cells — conv, SSM,
// attention — whose darkness is the router weight, then a row for each
// layer's router entropy) and the detail box of one byte: its router weights
// and entropy per layer and the five most likely next bytes. The numbers are
// the integer engine's (core/explain.h lines, as `atome generate
// --router-json` writes them). initWhy() is the page's section: the strip
// of the latest generation, the byte picked in it, its listeners.
import { $, fmt } from './ui.mjs';
import { testExpose } from './hook.mjs';

export const WHY_MAX = 50000;         // bytes kept in the strip (the latest ones)

// The explain lines of a generation, kept as the JSON text the engine wrote
// and parsed only when a column is drawn or shown (parsing every line as it
// streams in cost more than the generation itself).
export class WhyLines {
  constructor() { this.raw = []; this.parsed = []; this.dropped = 0; }
  get length() { return this.raw.length; }
  push(lines) {
    for (const l of lines) this.raw.push(l);
    const over = this.raw.length - WHY_MAX;
    if (over > 0) { this.raw.splice(0, over); this.parsed.splice(0, over); this.dropped += over; }
  }
  get(i) { return this.parsed[i] ?? (this.parsed[i] = JSON.parse(this.raw[i])); }
  all() { return this.raw.map((l) => JSON.parse(l)); }
}
const COL = 10, CELL = 7, TOP = 16, GAP = 3;
const COLORS = [[59, 111, 216], [47, 158, 98], [224, 123, 34]];   // conv, SSM, attention
const LN3 = Math.log(3);

export function byteLabel(b) {
  if (b === 10) return '↵';
  if (b === 32) return '␣';
  if (b < 32 || b === 127) return '·';
  if (b >= 128) return '◆';
  return String.fromCharCode(b);
}

function byteText(b) {
  const hex = `0x${b.toString(16).padStart(2, '0')}`;
  if (b === 10) return `newline (${hex})`;
  if (b === 32) return `space (${hex})`;
  if (b < 32 || b === 127) return `control byte ${hex}`;
  if (b >= 128) return `byte ${hex} (part of a UTF-8 character)`;
  return `'${String.fromCharCode(b)}' (${hex})`;
}

export function topLabel(b) {
  if (b === 32) return 'space';
  if (b === 10) return 'newline';
  if (b < 32 || b >= 127) return `0x${b.toString(16).padStart(2, '0')}`;
  return `'${String.fromCharCode(b)}'`;
}

export const WHY_COL = COL;

// Draws the columns visible in the scrolling strip: the canvas is as wide as
// the strip's view (it stays put, position: sticky) and the spacer under it
// as wide as all columns, so no canvas ever grows past the browsers' size
// limits however long the text.
export function drawWhy(canvas, spacer, lines, sel = -1, scrollLeft = 0, viewWidth = 600) {
  const L = lines.length ? lines.get(0).router.length : 0;
  const h = TOP + L * (3 * CELL + GAP) + L * 4 + 6;
  const total = Math.max(1, lines.length * COL);
  spacer.style.width = `${total}px`;
  spacer.style.height = `${h}px`;
  const w = Math.max(1, Math.min(viewWidth, total));
  const dpr = window.devicePixelRatio || 1;
  if (canvas.width !== Math.ceil(w * dpr) || canvas.height !== Math.ceil(h * dpr)) {
    canvas.width = Math.ceil(w * dpr);
    canvas.height = Math.ceil(h * dpr);
    canvas.style.width = `${w}px`;
    canvas.style.height = `${h}px`;
  }
  const g = canvas.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  g.font = '11px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace';
  g.textAlign = 'center';
  g.textBaseline = 'top';
  const first = Math.max(0, Math.floor(scrollLeft / COL)), last = Math.min(lines.length, Math.ceil((scrollLeft + w) / COL) + 1);
  for (let i = first; i < last; i++) {
    const x = lines.get(i), x0 = i * COL - scrollLeft;
    if (i === sel) { g.fillStyle = 'rgba(255, 214, 0, 0.35)'; g.fillRect(x0, 0, COL, h); }
    g.fillStyle = x.byte === 32 || x.byte === 10 ? '#a0a0a0' : '#222';
    g.fillText(byteLabel(x.byte), x0 + COL / 2, 2);
    for (let l = 0; l < L; l++) {
      const y0 = TOP + l * (3 * CELL + GAP);
      for (let p = 0; p < 3; p++) {
        const [r, gg, b] = COLORS[p];
        g.fillStyle = `rgba(${r}, ${gg}, ${b}, ${Math.max(0.04, x.router[l][p])})`;
        g.fillRect(x0 + 1, y0 + p * CELL, COL - 2, CELL - 1);
      }
    }
    const ye = TOP + L * (3 * CELL + GAP);
    for (let l = 0; l < L; l++) {
      g.fillStyle = `rgba(90, 90, 90, ${Math.max(0.04, x.entropy[l] / LN3)})`;
      g.fillRect(x0 + 1, ye + l * 4, COL - 2, 3);
    }
  }
}

// The router's weights and entropy per layer of one byte, as a table (the
// layer number heads each row).
export function routerTable(x) {
  const t = document.createElement('table');
  t.className = 'why-table';
  const hr = t.createTHead().insertRow();
  for (const c of ['layer', 'conv', 'SSM', 'attention', 'entropy']) {
    const th = document.createElement('th');
    th.scope = 'col';
    th.textContent = c;
    hr.append(th);
  }
  const tb = t.createTBody();
  x.router.forEach((r, l) => {
    const row = tb.insertRow();
    const th = document.createElement('th');
    th.scope = 'row';
    th.textContent = String(l + 1);
    row.append(th);
    r.forEach((w) => { row.insertCell().textContent = w.toFixed(3); });
    row.insertCell().textContent = `${x.entropy[l].toFixed(3)} nats`;
  });
  return t;
}

// DOM nodes describing one byte (for #why-detail).
export function whyDetail(x) {
  const out = [];
  const head = document.createElement('p');
  head.className = 'why-title';
  head.textContent = `Byte ${x.i + 1}: ${byteText(x.byte)}`;
  out.push(head);
  out.push(routerTable(x));
  const top = document.createElement('p');
  top.className = 'why-top';
  top.textContent = 'The model\'s top 5 for this position: ' +
    x.top.map(([b, p]) => `${topLabel(b)} ${(100 * p).toFixed(1)}%`).join(' · ') +
    (x.top.some(([b]) => b === x.byte) ? '' : ' (the sampled byte is outside them)');
  out.push(top);
  return out;
}

// The section: the lines of the latest generation and the picked byte (-1:
// none). Hover, click and the arrow keys pick a byte.
export function initWhy() {
  const w = { lines: new WhyLines(), sel: -1, raf: 0 };
  const sc = $('why-scroll');
  sc.addEventListener('scroll', () => { if (!w.raf) w.raf = requestAnimationFrame(() => { w.raf = 0; paintWhy(w); }); });
  new ResizeObserver(() => paintWhy(w)).observe(sc);
  const whyIndex = (e) => Math.floor((e.offsetX + sc.scrollLeft) / WHY_COL);
  const canvas = $('why-canvas');
  canvas.addEventListener('mousemove', (e) => selectWhy(w, whyIndex(e)));
  canvas.addEventListener('click', (e) => selectWhy(w, whyIndex(e)));
  canvas.addEventListener('keydown', (e) => {
    const step = { ArrowLeft: -1, ArrowRight: 1, Home: -1e9, End: 1e9, PageUp: -20, PageDown: 20 }[e.key];
    if (step === undefined) return;
    e.preventDefault();
    selectWhy(w, (w.sel < 0 ? w.lines.length : w.sel) + step, true);
  });
  // from the keyboard, the picked byte's details come into view with the strip
  canvas.addEventListener('focus', () => { if (w.sel < 0) selectWhy(w, w.lines.length - 1, true); else detailIntoView(); });
  $('explain').addEventListener('change', () => { if (!$('explain').checked) $('why').hidden = true; else if (w.lines.length) $('why').hidden = false; });
  testExpose('whyLines', () => w.lines.all());
  return {
    state: w,
    reset: () => resetWhy(w),
    push: (lines) => w.lines.push(lines),
    follow: () => followWhy(w),
    end: () => { if (w.lines.dropped) $('why-note').textContent = `The strip shows the last ${fmt(w.lines.length)} bytes.`; },
  };
}

// A new generation: an empty strip, shown when "why this byte" is on.
function resetWhy(w) {
  w.lines = new WhyLines();
  w.sel = -1;
  $('why').hidden = !$('explain').checked;
  $('why-note').textContent = '';
  $('why-detail').replaceChildren();
}

function paintWhy(w) {
  const sc = $('why-scroll');
  drawWhy($('why-canvas'), $('why-spacer'), w.lines, w.sel, sc.scrollLeft, sc.clientWidth);
}

// New bytes: the strip follows the newest byte unless the reader scrolled back.
function followWhy(w) {
  const sc = $('why-scroll');
  const follow = sc.scrollLeft + sc.clientWidth >= sc.scrollWidth - 2 * WHY_COL;
  paintWhy(w);
  if (follow) { sc.scrollLeft = sc.scrollWidth; paintWhy(w); }
}

function detailIntoView() {
  const box = $('why-detail'), r = box.getBoundingClientRect(), top = $('why-scroll').getBoundingClientRect().top;
  if (r.bottom > window.innerHeight) window.scrollBy({ top: Math.min(r.bottom - window.innerHeight + 8, top - 8), behavior: 'instant' });
}

function selectWhy(w, i, keyboard = false) {
  const n = w.lines.length;
  if (!n) return;
  w.sel = Math.max(0, Math.min(n - 1, i));
  const x = w.sel * WHY_COL, sc = $('why-scroll');
  if (x < sc.scrollLeft || x > sc.scrollLeft + sc.clientWidth - 2 * WHY_COL) sc.scrollLeft = x - sc.clientWidth / 2;
  paintWhy(w);
  $('why-detail').replaceChildren(...whyDetail(w.lines.get(w.sel)));
  if (keyboard) detailIntoView();
}
