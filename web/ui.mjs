// web/ui.mjs — what every section of the page uses: the element lookup,
// number and hex formatting, fetching and downloading bytes, the one-line
// #error, field errors (named by label, marked, focused), small elements.
import { testEvent } from './hook.mjs';

export const $ = (id) => document.getElementById(id);
export const enc = new TextEncoder();
export const hexOf = (u8) => { let s = ''; for (const b of u8) s += (b < 16 ? '0' : '') + b.toString(16); return s; };
export const fmt = (x) => Math.round(x).toLocaleString('en-US');
// One date format for the whole page: "7 Dec 2026, 04:41" (the browser's clock).
export const stamp = (t) => new Date(t).toLocaleString('en-GB', { day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit' });

export function showError(msg) {
  const line = String(msg).split('\n')[0];
  $('error-text').textContent = line;
  $('error').hidden = false;
  testEvent('error', line);
}
export function hideError() { $('error').hidden = true; $('error-text').textContent = ''; }

// Runs an action of a button: the error line starts empty and says what failed.
export async function guarded(fn) {
  hideError();
  try { await fn(); } catch (e) { showError(e.message); }
}

// An error about one field: the message names it by its label, the field is
// marked invalid and takes the focus when the message is shown.
export function fieldError(id, msg) { return Object.assign(new Error(msg), { field: id }); }
export function markField(e) {
  if (!e?.field) return;
  const el = $(e.field);
  el.setAttribute('aria-invalid', 'true');
  el.closest('details')?.setAttribute('open', '');
  el.focus();
  el.addEventListener('input', () => el.removeAttribute('aria-invalid'), { once: true });
}
export function intField(id, lo, hi, what) {
  const s = $(id).value.trim();
  if (!/^\d+$/.test(s) || Number(s) < lo || Number(s) > hi) throw fieldError(id, `${what} must be an integer in ${lo}..${hi} (got '${s}')`);
  return Number(s);
}

// A file of the site; without the network and outside the offline copy, it says so.
export async function fetchBytes(url) {
  const name = decodeURIComponent(new URL(url, location.href).pathname.split('/').pop());
  let r;
  try { r = await fetch(url); } catch {
    throw new Error(`cannot fetch ${name}: the server cannot be reached (no network?) and this browser has no offline copy of it`);
  }
  if (r.status === 503 && r.headers.get('x-atome-offline')) throw new Error(`cannot fetch ${name}: ${await r.text()}`);
  if (!r.ok) throw new Error(`cannot fetch ${url}: HTTP ${r.status}`);
  return new Uint8Array(await r.arrayBuffer());
}

export function download(bytes, name, type = 'application/octet-stream') {
  const url = URL.createObjectURL(new Blob([bytes], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
  testEvent('download', name, bytes.length);
}

// A card that takes a file dropped on it.
export function dropZone(card, onFile) {
  const el = $(card);
  el.addEventListener('dragover', (e) => { if ([...e.dataTransfer.types].includes('Files')) { e.preventDefault(); el.classList.add('dragging'); } });
  el.addEventListener('dragleave', () => el.classList.remove('dragging'));
  el.addEventListener('drop', (e) => {
    el.classList.remove('dragging');
    if (!e.dataTransfer.files.length) return;
    e.preventDefault();
    onFile(e.dataTransfer.files[0]);
  });
}

export function li(text) { const x = document.createElement('li'); x.textContent = text; return x; }
export function button(text, fn, id, cls = '') {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = text;
  b.id = id;
  if (cls) b.className = cls;
  b.addEventListener('click', () => guarded(fn));
  return b;
}

// "<|endoftext|>", the mark between two stories in TinyStories, shown as a
// story break (the bytes, Copy and Save keep it). storyBreaks(el) appends
// text that comes in pieces: a mark cut between two pieces is held back
// until the next one; flush() writes what is held back, and flush({ cut: true })
// — the text ends there, as a training sample does — shows a held-back start of
// the mark ("<|en", two characters or more) as a story break cut short.
export const EOT = '<|endoftext|>';
export function storyBreaks(el) {
  let hold = '';
  const put = (t) => { if (t) el.append(t); };
  return {
    append(text) {
      let t = hold + text;
      hold = '';
      for (let k = t.indexOf(EOT); k >= 0; k = t.indexOf(EOT)) { put(t.slice(0, k)); el.append(storyBreak()); t = t.slice(k + EOT.length); }
      for (let n = Math.min(EOT.length - 1, t.length); n > 0; n--) {
        if (EOT.startsWith(t.slice(-n))) { hold = t.slice(-n); t = t.slice(0, -n); break; }
      }
      put(t);
    },
    flush({ cut = false } = {}) {
      if (cut && hold.length >= 2) el.append(storyBreak(hold)); else put(hold);
      hold = '';
    },
  };
}
function storyBreak(cut = '') {
  const b = document.createElement('span');
  b.className = cut ? 'story-break cut' : 'story-break';
  b.setAttribute('role', 'separator');
  b.setAttribute('aria-label', cut ? `end of story (the mark cut short: ${cut})` : 'end of story (<|endoftext|>)');
  b.title = cut ? `${cut}: the start of the end-of-story mark, where the sample stops`
    : '<|endoftext|>: the mark between two stories in the training text';
  return b;
}
