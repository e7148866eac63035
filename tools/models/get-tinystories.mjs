#!/usr/bin/env node
// tools/models/get-tinystories.mjs (run as tools/models/get-tinystories) — downloads the
// public TinyStories V2 (GPT-4) text files and prepares train / valid text in
// the format of the project's ../shared/data (docs: ../shared/data/README.md):
//
//   tools/models/get-tinystories [--out DIR] [--url-base URL] [--valid-percent P]
//
//   DIR       where the results go (default data/tinystories in the source
//             tree): DIR/tinystories-train.txt and DIR/tinystories-valid.txt
//   URL       where TinyStoriesV2-GPT4-train.txt and -valid.txt are
//             (default https://huggingface.co/datasets/roneneldan/TinyStories/resolve/main/)
//
// Download: each file goes to DIR/.partial/NAME.part, resumed with an HTTP
// Range request when a part is there, with a progress bar on stderr; its
// final size must equal the server's Content-Length (of a HEAD request, and
// of the GET or its Content-Range). Then, as ../shared/data/README.md
// describes: the text is split into stories on <|endoftext|>; each story is
// cleaned (CRLF -> LF, the common UTF-8-read-as-cp1252 mojibake repaired,
// control characters but \n and \t removed, trailing whitespace stripped,
// blank lines inside a story removed); pieces under 80 characters or
// starting with a lower-case letter are dropped; exact duplicates are
// dropped (key: sha256 of NFKC text with curly quotes, dashes and the
// ellipsis mapped to ASCII and whitespace runs collapsed; first occurrence
// kept, the train file read before the valid file); and the stories are split
// by that hash: a story goes to valid when the key's first 32 bits, as an
// unsigned number, are below P% of 2^32 (default 10), else to train — so a
// story lands in the same file whichever download it came from. Each story
// is written followed by "\n<|endoftext|>\n", in the order read.
// Outputs are written to temporary files and renamed into place only once
// both are complete: a failure (no network, a download cut short, a size
// that does not match, a full disk) prints one line and leaves no
// half-written output (a cut-short download stays in DIR/.partial to be
// resumed by the next run; the others remove their part). Exit 0 / 1; 2 for
// a usage error.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import http from 'node:http';
import https from 'node:https';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const FILES = ['TinyStoriesV2-GPT4-train.txt', 'TinyStoriesV2-GPT4-valid.txt'];
const MARK = '<|endoftext|>';

class Fail extends Error {}
const fail = (msg) => { throw new Fail(msg); };

function parseArgs(argv) {
  const o = { out: path.join(repo, 'data/tinystories'), urlBase: 'https://huggingface.co/datasets/roneneldan/TinyStories/resolve/main/',
    validPercent: 10 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') { process.stdout.write(HELP); process.exit(0); }
    const m = a.match(/^--(out|url-base|valid-percent)(?:=(.*))?$/);
    if (!m) { process.stderr.write(`get-tinystories: unknown argument '${a}' (see --help)\n`); process.exit(2); }
    let v = m[2];
    if (v === undefined) {
      if (i + 1 >= argv.length) { process.stderr.write(`get-tinystories: --${m[1]} needs a value\n`); process.exit(2); }
      v = argv[++i];
    }
    if (m[1] === 'out') o.out = path.resolve(v);
    else if (m[1] === 'url-base') o.urlBase = v.endsWith('/') ? v : `${v}/`;
    else {
      if (!/^\d+(\.\d+)?$/.test(v) || Number(v) <= 0 || Number(v) >= 100) {
        process.stderr.write(`get-tinystories: --valid-percent must be a number in (0, 100) (got '${v}')\n`);
        process.exit(2);
      }
      o.validPercent = Number(v);
    }
  }
  try { new URL(o.urlBase); } catch { process.stderr.write(`get-tinystories: --url-base '${o.urlBase}' is not a URL\n`); process.exit(2); }
  return o;
}
const HELP = `usage: tools/models/get-tinystories [--out DIR] [--url-base URL] [--valid-percent P]

Downloads TinyStoriesV2-GPT4-train.txt and -valid.txt (resumable, checked
against the server's Content-Length) and writes DIR/tinystories-train.txt and
DIR/tinystories-valid.txt: stories split on <|endoftext|>, cleaned,
deduplicated and split by story hash (P% to valid, default 10).
Default DIR: data/tinystories in the source tree.
`;

// ---------------------------------------------------------------- download
function request(url, { method = 'GET', headers = {} } = {}, redirects = 5) {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const lib = u.protocol === 'https:' ? https : u.protocol === 'http:' ? http : null;
    if (!lib) { reject(new Fail(`unsupported URL scheme in ${url}`)); return; }
    const req = lib.request(u, { method, headers: { 'User-Agent': 'atome-get-tinystories', ...headers } }, (res) => {
      if ([301, 302, 303, 307, 308].includes(res.statusCode) && res.headers.location && redirects > 0) {
        res.resume();
        resolve(request(new URL(res.headers.location, u).href, { method, headers }, redirects - 1));
        return;
      }
      resolve(res);
    });
    req.setTimeout(60000, () => req.destroy(Object.assign(new Error('no answer for 60 s'), { code: 'ETIMEDOUT' })));
    req.on('error', reject);
    req.end();
  });
}

function netWhy(e, url) {
  const host = (() => { try { return new URL(url).host; } catch { return url; } })();
  const what = { ENOTFOUND: 'the host name does not resolve', EAI_AGAIN: 'the host name does not resolve (no network?)',
    ECONNREFUSED: 'the connection was refused', ETIMEDOUT: 'the server did not answer', ECONNRESET: 'the connection was reset',
    ENETUNREACH: 'the network is unreachable', EHOSTUNREACH: 'the host is unreachable' }[e.code] ?? e.message;
  return `cannot reach ${host}: ${what}`;
}

const human = (n) => (n >= 1e9 ? `${(n / 1e9).toFixed(2)} GB` : n >= 1e6 ? `${(n / 1e6).toFixed(1)} MB` : n >= 1e3 ? `${(n / 1e3).toFixed(0)} kB` : `${n} B`);

function progress(name, total) {
  const tty = process.stderr.isTTY;
  let last = 0, lastPct = -10;
  const t0 = Date.now();
  return {
    update(got, final = false) {
      const now = Date.now();
      if (!final && now - last < 200) return;
      last = now;
      const pct = total ? Math.floor((100 * got) / total) : 0;
      const rate = got / Math.max(0.001, (now - t0) / 1000);
      if (tty) {
        const w = 30, fill = total ? Math.round((w * got) / total) : 0;
        process.stderr.write(`\r${name} [${'#'.repeat(fill)}${'.'.repeat(w - fill)}] ${pct}% ${human(got)} of ${human(total)} ${human(rate)}/s `);
        if (final) process.stderr.write('\n');
      } else if (final || pct >= lastPct + 10) {
        lastPct = pct - (pct % 10);
        process.stderr.write(`${name}: ${pct}% (${human(got)} of ${human(total)})\n`);
      }
    },
  };
}

async function download(url, part, name) {
  let head;
  try { head = await request(url, { method: 'HEAD' }); } catch (e) { fail(netWhy(e, url)); }
  head.resume();
  if (head.statusCode !== 200) fail(`${url}: the server answered HTTP ${head.statusCode}`);
  const total = Number(head.headers['content-length']);
  if (!Number.isFinite(total) || total <= 0) fail(`${url}: the server gives no Content-Length`);
  let have = existsSync(part) ? statSync(part).size : 0;
  if (have > total) { rmSync(part); have = 0; }   // a part from another version of the file
  if (have === total) return total;
  let res;
  try { res = await request(url, { headers: have ? { Range: `bytes=${have}-` } : {} }); } catch (e) { fail(netWhy(e, url)); }
  if (res.statusCode === 200) have = 0;            // no range support: start over
  else if (res.statusCode !== 206) { res.resume(); fail(`${url}: the server answered HTTP ${res.statusCode}`); }
  const declared = res.statusCode === 206 ? Number(String(res.headers['content-range'] ?? '').split('/')[1])
    : Number(res.headers['content-length']);
  if (declared !== total) {
    res.resume();
    rmSync(part, { force: true });
    fail(`${name}: size mismatch: the server's Content-Length says ${total} bytes, its download ${declared || 'an unknown size'}`);
  }
  const bar = progress(name, total);
  let got = have;
  await new Promise((resolve, reject) => {
    const out = createWriteStream(part, { flags: have ? 'a' : 'w' });
    let failed = null;
    const stop = (e) => { if (!failed) { failed = e; res.destroy(); out.destroy(); } };
    res.on('data', (b) => { got += b.length; bar.update(got); });
    res.on('aborted', () => stop(Object.assign(new Error('aborted'), { code: 'ECONNRESET' })));
    res.on('error', (e) => stop(e));
    out.on('error', (e) => stop(e));
    res.pipe(out);
    out.on('close', () => (failed ? reject(failed) : resolve()));
  }).catch((e) => {
    if (e.code === 'ENOSPC') { rmSync(part, { force: true }); fail(`${name}: the disk is full (no space left writing ${part})`); }
    if (e.code === 'EACCES' || e.code === 'EROFS') fail(`${name}: cannot write ${part}: ${e.code === 'EROFS' ? 'read-only file system' : 'permission denied'}`);
    // a cut-short download: keep it, the next run resumes
  });
  bar.update(got, true);
  const size = existsSync(part) ? statSync(part).size : 0;
  if (size < total) fail(`${name}: the download stopped at ${size} of ${total} bytes; run the command again to resume it`);
  if (size !== total) { rmSync(part, { force: true }); fail(`${name}: size mismatch: ${size} bytes downloaded, the server's Content-Length is ${total}`); }
  return total;
}

// ---------------------------------------------------------------- preparation
const MOJIBAKE = [['â€™', '’'], ['â€˜', '‘'], ['â€œ', '“'], ['â€\u009d', '”'], ['â€"', '—'], ['â€“', '–'], ['â€”', '—'],
  ['â€¦', '…'], ['Ã©', 'é'], ['Ã¨', 'è'], ['Ã±', 'ñ'], ['Ã¡', 'á'], ['Ã³', 'ó'], ['Ã¶', 'ö'], ['Ã¼', 'ü'], ['Â ', ' '], ['â€', '”']];

export function cleanStory(s) {
  s = s.replace(/\r\n?/g, '\n');
  if (s.includes('â€') || s.includes('Ã')) for (const [a, b] of MOJIBAKE) s = s.split(a).join(b);
  s = s.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '');
  return s.split('\n').map((l) => l.replace(/\s+$/u, '')).filter((l) => l.trim() !== '').join('\n').trim();
}

export function storyKey(s) {
  const n = s.normalize('NFKC').replace(/[‘’‚‛′]/g, "'").replace(/[“”„‟″]/g, '"').replace(/[‐‑‒–—―]/g, '-')
    .replace(/…/g, '...').replace(/\s+/gu, ' ').trim();
  return createHash('sha256').update(n).digest();
}

const keep = (s) => s.length >= 80 && !/^\p{Ll}/u.test(s);

// Reads a file as UTF-8 text and calls onStory for every piece between markers.
async function eachPiece(file, onStory) {
  let buf = '';
  const dec = new TextDecoder('utf-8');
  for await (const chunk of createReadStream(file)) {
    buf += dec.decode(chunk, { stream: true });
    let i;
    while ((i = buf.indexOf(MARK)) >= 0) { await onStory(buf.slice(0, i)); buf = buf.slice(i + MARK.length); }
  }
  buf += dec.decode();
  if (buf.trim()) await onStory(buf);   // a last story without its marker
}

function writer(file) {
  const ws = createWriteStream(file);
  let err = null;
  ws.on('error', (e) => { err = e; });
  return {
    async write(text) {
      if (err) throw err;
      if (!ws.write(text)) await new Promise((r, j) => { ws.once('drain', r); ws.once('error', j); });
    },
    close() { return new Promise((r, j) => { if (err) { j(err); return; } ws.end((e) => (e || err ? j(e || err) : r())); }); },
    get error() { return err; },
  };
}

async function prepare(inputs, out, validPercent) {
  const seen = new Set();
  const limit = Math.floor((validPercent / 100) * 2 ** 32);
  const tmp = { train: path.join(out, `.tinystories-train.txt.tmp-${process.pid}`), valid: path.join(out, `.tinystories-valid.txt.tmp-${process.pid}`) };
  const w = { train: writer(tmp.train), valid: writer(tmp.valid) };
  const counts = { pieces: 0, short: 0, dup: 0, train: 0, valid: 0, trainBytes: 0, validBytes: 0 };
  try {
    for (const f of inputs) {
      await eachPiece(f, async (raw) => {
        counts.pieces++;
        const s = cleanStory(raw);
        if (!keep(s)) { counts.short++; return; }
        const key = storyKey(s);
        const hex = key.toString('hex');
        if (seen.has(hex)) { counts.dup++; return; }
        seen.add(hex);
        const which = key.readUInt32BE(0) < limit ? 'valid' : 'train';
        const text = `${s}\n${MARK}\n`;
        counts[which]++;
        counts[`${which}Bytes`] += Buffer.byteLength(text);
        await w[which].write(text);
      });
    }
    await w.train.close();
    await w.valid.close();
  } catch (e) {
    for (const t of Object.values(tmp)) rmSync(t, { force: true });
    if (e.code === 'ENOSPC') fail(`the disk is full (no space left writing the prepared text in ${out})`);
    throw e;
  }
  renameSync(tmp.valid, path.join(out, 'tinystories-valid.txt'));
  renameSync(tmp.train, path.join(out, 'tinystories-train.txt'));
  return counts;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const partial = path.join(o.out, '.partial');
  try { mkdirSync(partial, { recursive: true }); } catch (e) { fail(`cannot create ${partial}: ${e.message}`); }
  const parts = [];
  for (const name of FILES) {
    const part = path.join(partial, `${name}.part`);
    await download(o.urlBase + name, part, name);
    parts.push(part);
  }
  process.stderr.write('get-tinystories: preparing train / valid text…\n');
  const c = await prepare(parts, o.out, o.validPercent);
  for (const p of parts) rmSync(p, { force: true });
  rmSync(partial, { recursive: true, force: true });
  process.stdout.write(`${JSON.stringify({ out: o.out, train: path.join(o.out, 'tinystories-train.txt'),
    valid: path.join(o.out, 'tinystories-valid.txt'), pieces: c.pieces, dropped_short: c.short, dropped_duplicates: c.dup,
    train_stories: c.train, valid_stories: c.valid, train_bytes: c.trainBytes, valid_bytes: c.validBytes })}\n`);
}

const self = process.argv[1] && path.resolve(process.argv[1]);
if (self === fileURLToPath(import.meta.url)) {
  main().catch((e) => {
    process.stderr.write(`get-tinystories: ${e instanceof Fail ? e.message : (e.code === 'ENOSPC' ? 'the disk is full' : e.message)}\n`);
    process.exit(1);
  });
}
