#!/usr/bin/env node
// tools/web/serve.mjs (run as tools/serve) — serves the Atome web page on
// 127.0.0.1 in the layout tools/build-site writes (tools/web/site.mjs: index.html,
// sw.js, manifest.webmanifest, app-<version>/ with web/, the wasm modules of
// build/wasm, the shipped models and their list, the firmware templates of
// build/mcu/mcu, uPlot, rp2040js), from memory, with what `tools/setup` built. GET and
// HEAD only, nothing outside the layout (plus /api/models, the model list as
// JSON), every response with a Content-Security-Policy that allows this
// origin and nothing else, and the cross-origin isolation headers (COOP +
// COEP) the trainer's threads need. docs/web.md describes the page.
//
//   tools/serve [--port 8080] [--host 127.0.0.1] [--allow-remote]
//
// A --host that is not a loopback address is refused unless --allow-remote
// is given (the page has no login; anyone who reaches it can use it).
import { createServer } from 'node:http';
import { existsSync, realpathSync } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { planSite, sourceStamp, modelList, missingNeeds, CSP } from './site.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const USAGE = `usage: tools/serve [--port 8080] [--host 127.0.0.1] [--allow-remote]

Serves the Atome page at http://HOST:PORT/ (generate, train in the tab,
download for a board), in the layout tools/build-site writes, with the
cross-origin isolation headers. --port 0 picks a free port. A non-loopback
--host needs --allow-remote.
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


// The site: tools/web/site.mjs's layout (the one tools/build-site writes), planned
// at start and again when a source file changed and the page or its service
// worker is asked for (an edit shows after a reload; the service worker then
// offers the new version). The last few plans stay served, so a page of an
// older version still finds its files.
let plans = [];
let stamp = null;
function currentPlan(refresh) {
  if (plans.length && !refresh) return plans[0];
  const now = sourceStamp();
  if (now !== stamp || !plans.length) {
    stamp = now;
    const p = planSite();
    if (p.version !== plans[0]?.version) plans = [p, ...plans].slice(0, 3);
  }
  return plans[0];
}

export { CSP };

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

// /api/models (kept for scripts; the page reads app-<version>/models/index.json)
function listModels() {
  const plan = currentPlan(false);
  const pre = `${plan.dir}/`;
  return modelList(new Map([...plan.files].filter(([p]) => p.startsWith(pre)).map(([p, f]) => [p.slice(pre.length), f])));
}

// The file of a URL path: the site's, or the favicon; null for anything else.
function resolveFile(urlPath) {
  const rel = urlPath === '/' ? 'index.html' : urlPath === '/favicon.ico' ? null : urlPath.slice(1);
  const plan = currentPlan(rel === 'index.html' || rel === 'sw.js');
  if (rel === null) return plan.files.get(`${plan.dir}/web/favicon.svg`) ?? null;
  for (const p of plans) if (p.files.has(rel)) return p.files.get(rel);
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
  res.writeHead(200, headers(file.type, { 'Content-Length': file.body.length }));
  res.end(req.method === 'HEAD' ? undefined : file.body);
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

// What the page needs and is missing (tools/web/site.mjs), the page's own source too.
export async function missingArtifacts() {
  const src = existsSync(path.join(repo, 'web/index.html')) ? [] : [['web/index.html', '(part of the source tree)']];
  return [...src, ...await missingNeeds()];
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  if (!isLoopback(o.host) && !o.allowRemote)
    fail(2, `--host ${o.host} is not a loopback address: the page would be reachable from other machines. ` +
      'Add --allow-remote if that is what you want.');
  const missing = await missingArtifacts();
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
