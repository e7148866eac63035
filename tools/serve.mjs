#!/usr/bin/env node
// tools/serve.mjs (run as tools/serve) — serves the Atome web page (web/) on 127.0.0.1 with what
// `tools/setup` built: the wasm modules (build/wasm), the shipped models
// (models/*.atome, listed at /api/models) and the firmware templates
// (build/mcu/mcu/atome-fw-*.elf). Static files only, GET and HEAD, every
// response with a Content-Security-Policy that allows this origin and
// nothing else. docs/web.md describes the page.
//
//   tools/serve [--port 8080] [--host 127.0.0.1] [--allow-remote]
//
// A --host that is not a loopback address is refused unless --allow-remote
// is given (the page has no login; anyone who reaches it can use it).
import { createServer } from 'node:http';
import { createReadStream, existsSync, readdirSync, statSync, realpathSync } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const USAGE = `usage: tools/serve [--port 8080] [--host 127.0.0.1] [--allow-remote]

Serves the Atome page at http://HOST:PORT/ (generate, train in the tab,
download for a board). --port 0 picks a free port. A non-loopback --host
needs --allow-remote.
`;

function fail(code, msg) {
  process.stderr.write(`serve: ${msg}\n`);
  process.exit(code);
}

function parseArgs(argv) {
  const o = { port: 8080, host: '127.0.0.1', allowRemote: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const eq = a.indexOf('=');
    const name = a.startsWith('--') ? (eq >= 0 ? a.slice(2, eq) : a.slice(2)) : null;
    const value = () => {
      if (eq >= 0) return a.slice(eq + 1);
      if (i + 1 >= argv.length || argv[i + 1].startsWith('--')) fail(2, `--${name} needs a value (see --help)`);
      return argv[++i];
    };
    if (a === '--help' || a === '-h') { process.stdout.write(USAGE); process.exit(0); }
    else if (name === 'port') {
      const v = value();
      if (!/^\d+$/.test(v) || Number(v) > 65535) fail(2, `--port must be an integer in 0..65535 (got '${v}')`);
      o.port = Number(v);
    } else if (name === 'host') {
      o.host = value();
      if (!o.host) fail(2, '--host needs a value');
    } else if (name === 'allow-remote' && eq < 0) o.allowRemote = true;
    else fail(2, `unknown argument '${a}' (see --help)`);
  }
  return o;
}

function isLoopback(host) {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.split('.')[0] === '127';
  if (isIP(host) === 6) return host === '::1' || host === '0:0:0:0:0:0:0:1';
  return false;
}

// What the page needs, and the command that makes each.
const NEEDS = [
  ['build/wasm/atome.wasm', 'tools/setup'],
  ['build/wasm/atome-scalar.wasm', 'tools/setup'],
  ['build/wasm/atome-threads.wasm', 'tools/setup'],
  ['build/mcu/mcu/atome-fw-mps2-an385.elf', 'tools/setup'],
  ['build/mcu/mcu/atome-fw-microbit.elf', 'tools/setup'],
  ['build/mcu/mcu/atome-fw-pico.elf', 'tools/setup'],
  ['web/index.html', '(part of the source tree)'],
  ['node_modules/uplot/dist/uPlot.esm.js', 'tools/setup (npm ci)'],
];

// URL prefix -> directory, and which files of it are served.
const ROUTES = [
  { prefix: '/web/', dir: 'web', ok: () => true },
  { prefix: '/wasm/', dir: 'wasm', ok: (f) => f === 'atome.mjs' || f === 'atome-thread.mjs' },
  { prefix: '/build/wasm/', dir: 'build/wasm', ok: (f) => /^atome(-scalar|-threads)?\.wasm$/.test(f) },
  { prefix: '/build/mcu/mcu/', dir: 'build/mcu/mcu', ok: (f) => /^atome-fw-[a-z0-9-]+\.elf$/.test(f) },
  { prefix: '/models/', dir: 'models', ok: (f) => /^[^/]+\.(atome|md)$/.test(f) },
  { prefix: '/vendor/uplot/', dir: 'node_modules/uplot/dist', ok: (f) => f === 'uPlot.esm.js' || f === 'uPlot.min.css' },
];

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8', '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.wasm': 'application/wasm', '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8', '.md': 'text/plain; charset=utf-8', '.png': 'image/png', '.svg': 'image/svg+xml',
  '.atome': 'application/octet-stream', '.elf': 'application/octet-stream', '.ico': 'image/x-icon',
};

export const CSP = ["default-src 'self'", "script-src 'self' 'wasm-unsafe-eval'", "connect-src 'self'",
  "worker-src 'self'", "style-src 'self'", "img-src 'self' data: blob:", "font-src 'self'", "object-src 'none'",
  "base-uri 'none'", "form-action 'none'", "frame-ancestors 'none'"].join('; ');

// Cross-origin isolation (COOP + COEP): the page may then use shared memory,
// which the trainer's threads need (wasm/atome.mjs threadsAvailable). Every
// resource is same-origin, so require-corp costs nothing. startServer({
// isolated: false }) leaves COEP out (tests of the one-thread fallback).
let isolated = true;
function headers(type, extra = {}) {
  return {
    'Content-Type': type, 'Content-Security-Policy': CSP, 'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer', 'Cache-Control': 'no-cache', 'Cross-Origin-Opener-Policy': 'same-origin',
    ...(isolated ? { 'Cross-Origin-Embedder-Policy': 'require-corp', 'Cross-Origin-Resource-Policy': 'same-origin' } : {}),
    ...extra,
  };
}

function listModels() {
  const dir = path.join(repo, 'models');
  const out = [];
  let names = [];
  try { names = readdirSync(dir).sort(); } catch { return out; }
  for (const f of names) {
    if (!f.endsWith('.atome')) continue;
    let st;
    try { st = statSync(path.join(dir, f)); } catch { continue; }   // removed meanwhile
    if (st.isFile()) out.push({ name: f, bytes: st.size, card: existsSync(path.join(dir, f.replace(/\.atome$/, '.md'))) ? f.replace(/\.atome$/, '.md') : null });
  }
  // The web model (the largest that is not the 60K board model) first, then the rest by size.
  out.sort((a, b) => (b.name.includes('atome-60k') ? 0 : 1) - (a.name.includes('atome-60k') ? 0 : 1) || b.bytes - a.bytes);
  return out;
}

function resolveFile(urlPath) {
  if (urlPath === '/' || urlPath === '/index.html') return path.join(repo, 'web/index.html');
  if (urlPath === '/favicon.ico') return path.join(repo, 'web/favicon.svg');
  for (const r of ROUTES) {
    if (!urlPath.startsWith(r.prefix)) continue;
    const rel = urlPath.slice(r.prefix.length);
    if (!rel || rel.split('/').some((p) => p === '' || p === '.' || p === '..' || p.startsWith('.'))) return null;
    if (!r.ok(rel)) return null;
    const base = path.join(repo, r.dir);
    const file = path.join(base, rel);
    if (!existsSync(file)) return null;
    let real;
    try { real = realpathSync(file); } catch { return null; }
    let realBase;
    try { realBase = realpathSync(base); } catch { return null; }
    if (real !== realBase && !real.startsWith(realBase + path.sep)) return null;
    try { return statSync(real).isFile() ? real : null; } catch { return null; }
  }
  return null;
}

// Without --allow-remote only requests naming this machine are answered: a
// web page elsewhere cannot reach the server through a DNS name of its own
// that resolves to 127.0.0.1 (DNS rebinding).
const LOCAL_NAMES = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);
let hostCheck = (host) => LOCAL_NAMES.has(host);

function handler(req, res) {
  const host = String(req.headers.host ?? '').replace(/:\d+$/, '').toLowerCase();
  if (!hostCheck(host)) {
    res.writeHead(421, headers('text/plain; charset=utf-8')).end('this server answers only requests for 127.0.0.1 / localhost\n');
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, headers('text/plain; charset=utf-8', { Allow: 'GET, HEAD' })).end('method not allowed\n');
    return;
  }
  let urlPath;
  try { urlPath = decodeURIComponent(new URL(req.url, 'http://x').pathname); } catch {
    res.writeHead(400, headers('text/plain; charset=utf-8')).end('bad request\n');
    return;
  }
  if (urlPath === '/api/models') {
    const body = JSON.stringify({ models: listModels() });
    res.writeHead(200, headers('application/json', { 'Content-Length': Buffer.byteLength(body) }));
    res.end(req.method === 'HEAD' ? undefined : body);
    return;
  }
  const file = resolveFile(urlPath);
  if (!file) {
    res.writeHead(404, headers('text/plain; charset=utf-8')).end('not found\n');
    return;
  }
  const type = TYPES[path.extname(file)] ?? 'application/octet-stream';
  let size;
  try { size = statSync(file).size; } catch {
    res.writeHead(404, headers('text/plain; charset=utf-8')).end('not found\n');
    return;
  }
  res.writeHead(200, headers(type, { 'Content-Length': size }));
  if (req.method === 'HEAD') { res.end(); return; }
  createReadStream(file).on('error', () => res.destroy()).pipe(res);
}

export function startServer({ port = 0, host = '127.0.0.1', allowRemote = false, isolated: iso = true } = {}) {
  isolated = iso;
  if (allowRemote) hostCheck = () => true;
  else if (!LOCAL_NAMES.has(host)) LOCAL_NAMES.add(host.toLowerCase());
  const server = createServer(handler);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

export function missingArtifacts() {
  return NEEDS.filter(([f]) => !existsSync(path.join(repo, f)));
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  if (!isLoopback(o.host) && !o.allowRemote)
    fail(2, `--host ${o.host} is not a loopback address: the page would be reachable from other machines. ` +
      'Add --allow-remote if that is what you want.');
  const missing = missingArtifacts();
  if (missing.length) {
    const cmds = [...new Set(missing.map(([, c]) => c))];
    fail(1, `missing ${missing.map(([f]) => f).join(', ')}: build ${missing.length > 1 ? 'them' : 'it'} with ${cmds.join(' / ')}`);
  }
  if (!listModels().length) fail(1, 'no .atome model in models/ (the shipped models are part of the source tree)');
  let server;
  try { server = await startServer(o); } catch (e) {
    if (e.code === 'EADDRINUSE') fail(1, `port ${o.port} on ${o.host} is in use: pass another --port (or --port 0 for any free one)`);
    if (e.code === 'EADDRNOTAVAIL' || e.code === 'ENOTFOUND') fail(1, `cannot listen on ${o.host}: no such local address`);
    if (e.code === 'EACCES') fail(1, `no permission to listen on port ${o.port}: pick one above 1023`);
    fail(1, `cannot listen on ${o.host}:${o.port}: ${e.message}`);
  }
  const { port } = server.address();
  const shown = o.host.includes(':') ? `[${o.host}]` : o.host;
  process.stdout.write(`Atome page: http://${shown}:${port}/   (Ctrl-C stops the server)\n`);
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

const self = process.argv[1] && realpathSync(process.argv[1]);
if (self === fileURLToPath(import.meta.url)) main();
