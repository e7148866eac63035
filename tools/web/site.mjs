// tools/web/site.mjs — the page's one layout, shared by tools/build-site (which
// writes it to a folder) and tools/serve (which serves it from memory), so
// there is one page, not two. planSite() reads what the page needs and
// returns { version, files }: files maps a path relative to the site root to
// { body: Buffer, type }. Every URL the page uses is relative, so the folder
// works at a site root and under a sub-path (/<repo>/ on GitHub Pages).
//
//   index.html              the page (web/index.html, its links pointed into the version folder)
//   sw.js                   its service worker (web/sw.js after the version and file list)
//   manifest.webmanifest    the web app manifest (installable)
//   app-<version>/          everything else; <version> is a hash of this folder's files, so
//     web/…                 a new build has new names (no stale HTTP cache can mix versions)
//     wasm/*.mjs            the loader (wasm/atome.mjs) and its thread worker
//     build/wasm/*.wasm     atome.wasm, atome-scalar.wasm, atome-threads.wasm
//     build/mcu/mcu/*.elf   the firmware templates
//     models/               the shipped .atome models, their .md cards, index.json (the model list)
//     vendor/uplot/         uPlot (npm) and its licence
//     vendor/rp2040js/      rp2040js (npm: its ES modules, dist/esm, but the Node-only
//                           gdb-tcp-server) and its licence, for the page's virtual Pico
//
// web/ is taken whole (new files need no list here), except index.html and
// sw.js (site root) and dot files.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadAtome } from '../../wasm/atome.mjs';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export const TYPES = {
  '.html': 'text/html; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8', '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.wasm': 'application/wasm', '.json': 'application/json',
  '.webmanifest': 'application/manifest+json', '.txt': 'text/plain; charset=utf-8', '.md': 'text/plain; charset=utf-8',
  '.png': 'image/png', '.svg': 'image/svg+xml', '.atome': 'application/octet-stream', '.elf': 'application/octet-stream',
  '.ico': 'image/x-icon',
};
export const typeOf = (f) => TYPES[path.extname(f)] ?? 'application/octet-stream';

// The page's Content-Security-Policy: this origin and nothing else. tools/serve
// sends it as a header, the service worker adds it to what it serves, and the
// page carries it as a <meta> (without frame-ancestors, which a <meta> cannot set).
export const CSP = ["default-src 'self'", "script-src 'self' 'wasm-unsafe-eval'", "connect-src 'self'",
  "worker-src 'self'", "style-src 'self'", "img-src 'self' data: blob:", "font-src 'self'", "object-src 'none'",
  "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'"].join('; ');

// Where each part of the version folder comes from: [site folder, source folder, file test, recursive].
function parts(o) {
  return [
    ['web', 'web', (f) => !['index.html', 'sw.js'].includes(f), true],
    ['wasm', 'wasm', (f) => f.endsWith('.mjs'), false],
    ['build/wasm', o.wasmDir, (f) => /^atome(-[a-z]+)?\.wasm$/.test(f), false],
    ['build/mcu/mcu', o.mcuDir, (f) => /^atome-fw-[a-z0-9-]+\.elf$/.test(f), false],
    ['models', 'models', (f, dir) => f.endsWith('.atome') || (f.endsWith('.md') && existsSync(path.join(dir, f.replace(/\.md$/, '.atome')))), false],
    ['vendor/uplot', 'node_modules/uplot/dist', (f) => f === 'uPlot.esm.js' || f === 'uPlot.min.css', false],
    ['vendor/uplot', 'node_modules/uplot', (f) => f === 'LICENSE', false],
    ['vendor/rp2040js', 'node_modules/rp2040js/dist/esm', deep((f) => f.endsWith('.js') && f !== 'gdb-tcp-server.js'), true],
    ['vendor/rp2040js', 'node_modules/rp2040js', (f) => f === 'LICENSE', false],
  ];
}

// A file test applied in sub-folders too (a plain one sees only the top folder's files).
const deep = (ok) => Object.assign(ok, { deep: true });

function walk(dir, ok, recursive, rel = '') {
  const out = [];
  let names = [];
  try { names = readdirSync(path.join(dir, rel)).sort(); } catch { return out; }
  for (const n of names) {
    if (n.startsWith('.')) continue;
    const r = rel ? `${rel}/${n}` : n;
    const st = statSync(path.join(dir, r));
    if (st.isDirectory()) { if (recursive) out.push(...walk(dir, ok, recursive, r)); }
    else if (st.isFile() && (rel && !ok.deep ? true : ok(n, dir))) out.push({ rel: r, file: path.join(dir, r), mtime: st.mtimeMs, size: st.size });
  }
  return out;
}

// The source files of the version folder: [{ site, file, mtime, size }].
// What the page needs from the build ([file relative to the repository, the
// command that makes it]) and is missing: the wasm modules, a firmware
// template for every board of the table the page's module carries (its
// boards(), core/boards.def) and the npm packages.
export async function missingNeeds({ wasmDir = 'build/wasm', mcuDir = 'build/mcu/mcu' } = {}) {
  const absent = (list) => list.filter(([f]) => !existsSync(path.resolve(REPO, f)));
  const wasm = ['atome.wasm', 'atome-scalar.wasm', 'atome-threads.wasm'].map((f) => [path.join(wasmDir, f), 'tools/setup']);
  const npm = ['node_modules/uplot/dist/uPlot.esm.js', 'node_modules/rp2040js/dist/esm/index.js'].map((f) => [f, 'tools/setup (npm ci)']);
  if (absent(wasm).length) return absent([...wasm, ...npm]);
  const atome = await loadAtome(readFileSync(path.resolve(REPO, wasm[0][0])));
  const fw = atome.boards().boards.map((b) => [path.join(mcuDir, `atome-fw-${b.name}.elf`), 'tools/setup']);
  return absent([...fw, ...npm]);
}

export function siteSources({ repo = REPO, wasmDir = 'build/wasm', mcuDir = 'build/mcu/mcu' } = {}) {
  const out = [];
  for (const [site, src, ok, rec] of parts({ wasmDir, mcuDir })) {
    const dir = path.resolve(repo, src);
    for (const f of walk(dir, ok, rec)) out.push({ site: `${site}/${f.rel}`, file: f.file, mtime: f.mtime, size: f.size });
  }
  for (const f of ['web/index.html', 'web/sw.js']) {
    const st = statSync(path.join(repo, f));
    out.push({ site: null, file: path.join(repo, f), mtime: st.mtimeMs, size: st.size });
  }
  return out;
}

const sha = (b) => createHash('sha256').update(b).digest('hex');

// The model list (what /api/models answered): name, bytes, card; the web model
// (the largest whose name does not contain atome-60k) first, then by size.
export function modelList(files) {
  const out = [];
  for (const [p, f] of files) {
    const m = /^models\/([^/]+\.atome)$/.exec(p);
    if (!m) continue;
    const card = m[1].replace(/\.atome$/, '.md');
    out.push({ name: m[1], bytes: f.body.length, card: files.has(`models/${card}`) ? card : null });
  }
  out.sort((a, b) => (b.name.includes('atome-60k') ? 0 : 1) - (a.name.includes('atome-60k') ? 0 : 1) || b.bytes - a.bytes);
  return out;
}

// index.html: links into the version folder get its name; the CSP as a <meta>.
function pageHtml(src, dir) {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${CSP.replace(/; frame-ancestors 'none'/, '')}">`;
  return src.replace(/\b(href|src)="((?:web|wasm|build|models|vendor)\/[^"]*)"/g, (_, a, u) => `${a}="${dir}/${u}"`)
    .replace(/<meta charset="utf-8">/, (m) => `${m}\n${meta}`);
}

function manifest(dir) {
  return JSON.stringify({
    name: 'Atome — a tiny ternary language model', short_name: 'Atome', id: './', start_url: './', scope: './',
    display: 'standalone', background_color: '#f6f5f1', theme_color: '#2b59c3',
    description: 'Generate stories, train a model in the tab and download it for a microcontroller, offline.',
    icons: [
      { src: `${dir}/web/icons/atome.svg`, sizes: 'any', type: 'image/svg+xml' },
      { src: `${dir}/web/icons/atome-192.png`, sizes: '192x192', type: 'image/png' },
      { src: `${dir}/web/icons/atome-512.png`, sizes: '512x512', type: 'image/png' },
      { src: `${dir}/web/icons/atome-maskable-512.png`, sizes: '512x512', type: 'image/png', purpose: 'maskable' },
    ],
  }, null, 2) + '\n';
}

// The whole site: { version, dir, files: Map(site path -> { body, type }) }.
export function planSite(opts = {}) {
  const repo = opts.repo ?? REPO;
  const sources = siteSources(opts);
  const inner = new Map();
  for (const s of sources) if (s.site) inner.set(s.site, readFileSync(s.file));
  inner.set('models/index.json', Buffer.from(JSON.stringify({ models: modelList(new Map([...inner].map(([p, b]) => [p, { body: b }]))) }) + '\n'));
  const listing = [...inner].sort(([a], [b]) => (a < b ? -1 : 1)).map(([p, b]) => `${p} ${sha(b)}\n`).join('');
  const version = sha(listing).slice(0, 12);
  const dir = `app-${version}`;
  const files = new Map();
  for (const [p, body] of inner) files.set(`${dir}/${p}`, { body, type: typeOf(p) });
  const html = pageHtml(readFileSync(path.join(repo, 'web/index.html'), 'utf8'), dir);
  files.set('index.html', { body: Buffer.from(html), type: typeOf('index.html') });
  files.set('manifest.webmanifest', { body: Buffer.from(manifest(dir)), type: typeOf('x.webmanifest') });
  // what the service worker keeps: every file but itself, each with its hash (index.html as ./)
  const keep = {};
  for (const [p, f] of files) keep[p === 'index.html' ? './' : p] = sha(f.body).slice(0, 32);
  const site = { version, dir, csp: CSP, files: keep };
  const sw = `// generated by tools/web/site.mjs from web/sw.js: this build's version and files\n` +
    `self.ATOME_SITE = ${JSON.stringify(site)};\n\n${readFileSync(path.join(repo, 'web/sw.js'), 'utf8')}`;
  files.set('sw.js', { body: Buffer.from(sw), type: typeOf('sw.js') });
  return { version, dir, files, sources };
}

// A cheap fingerprint of the sources (names, sizes, times): tools/serve plans
// the site again when it changes.
export function sourceStamp(opts = {}) {
  return siteSources(opts).map((s) => `${s.file}:${s.size}:${s.mtime}`).join('\n');
}
