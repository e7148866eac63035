// web/sw.js — the page's service worker. tools/web/site.mjs writes it to the site
// root as sw.js, after a line that sets self.ATOME_SITE = { version, dir, csp,
// files: { path: sha-256 prefix } } for its build. web/site.mjs registers it.
//
// Offline: on install it keeps every file of its version in the cache
// atome-site-<version>, each checked against its hash (a file unchanged since
// the version before is copied from that version's cache instead of fetched
// again). A page it controls is answered from that cache only, so a page of
// one version never runs another version's wasm (the version folder's name
// changes with its content, too). A new version waits until the page asks
// for it (web/site.mjs shows "a new version is ready — reload"); on
// activation older caches are dropped, once no other tab may still need them.
//
// Threads: every response it gives carries the cross-origin isolation headers
// (COOP same-origin, COEP require-corp, CORP same-origin) and the page's CSP,
// so from the second load on the page is cross-origin isolated (shared
// memory for the trainer's threads) on hosts that send no such headers: the
// technique of the coi-serviceworker package, written here because one
// service worker per scope must also keep the offline copy.
const SITE = self.ATOME_SITE;
const PREFIX = 'atome-site-';
const CACHE = PREFIX + SITE.version;
const LIST = '__atome-files__.json';   // per cache: its files and hashes (for the next version's copy)

const scopeUrl = () => self.registration.scope;
const abs = (p) => new URL(p, scopeUrl()).href;

async function sha(buf) {
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', buf));
  return [...d].map((b) => b.toString(16).padStart(2, '0')).join('').slice(0, 32);
}

// hash -> { cache, url } of the files the older versions keep
async function olderCopies() {
  const have = new Map();
  for (const name of await caches.keys()) {
    if (!name.startsWith(PREFIX) || name === CACHE) continue;
    const c = await caches.open(name);
    const list = await c.match(abs(LIST));
    if (!list) continue;
    for (const [p, h] of Object.entries(await list.json())) have.set(h, { cache: c, url: abs(p) });
  }
  return have;
}

// One file of this version, checked: an older version's copy, or the network.
async function fetchChecked(p, want, have) {
  const old = have.get(want);
  const hit = old && await old.cache.match(old.url);
  if (hit) return hit;
  for (const mode of ['no-cache', 'reload']) {
    const r = await fetch(abs(p), { cache: mode });
    if (!r.ok) throw new Error(`${p}: HTTP ${r.status}`);
    const body = await r.arrayBuffer();
    if (await sha(body) === want) return new Response(body, { status: 200, headers: r.headers });
  }
  throw new Error(`${p} is not the file of version ${SITE.version} (a newer build was published meanwhile?)`);
}

async function precache() {
  const cache = await caches.open(CACHE);
  const have = await olderCopies();
  const todo = Object.entries(SITE.files);
  const worker = async () => {
    for (let e = todo.shift(); e; e = todo.shift()) await cache.put(abs(e[0]), await fetchChecked(e[0], e[1], have));
  };
  await Promise.all([worker(), worker(), worker()]);
  await cache.put(abs(LIST), new Response(JSON.stringify(SITE.files), { headers: { 'Content-Type': 'application/json' } }));
}

// Older versions' caches go once this tab is the only one (another tab may
// still be a page of an older version, reading its files).
async function dropOld() {
  const tabs = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  if (tabs.length > 1) return;
  for (const name of await caches.keys()) if (name.startsWith(PREFIX) && name !== CACHE) await caches.delete(name);
}

self.addEventListener('install', (e) => e.waitUntil(precache()));
self.addEventListener('activate', (e) => e.waitUntil(dropOld()));

self.addEventListener('message', (e) => {
  if (e.data?.type === 'update') self.skipWaiting();
  else if (e.data?.type === 'status') e.waitUntil(status().then((s) => e.source.postMessage({ type: 'status', ...s })));
});

// What web/site.mjs shows: this worker's version, whether its copy is whole,
// and whether the server itself sends the isolation headers.
async function status() {
  const cache = await caches.open(CACHE);
  const page = await cache.match(abs('./'));
  const h = page?.headers;
  return {
    version: SITE.version, complete: !!(await cache.match(abs(LIST))),
    serverIsolated: !!h && h.get('cross-origin-opener-policy') === 'same-origin' && h.get('cross-origin-embedder-policy') === 'require-corp',
  };
}

const TYPES = { mjs: 'text/javascript; charset=utf-8', js: 'text/javascript; charset=utf-8', wasm: 'application/wasm' };

// The response as the page gets it: isolation headers, the CSP, and a script
// or wasm type that a host without them got wrong.
function dressed(res, path) {
  if (res.type === 'opaque' || res.status === 0) return res;
  const h = new Headers(res.headers);
  h.set('Cross-Origin-Opener-Policy', 'same-origin');
  h.set('Cross-Origin-Embedder-Policy', 'require-corp');
  h.set('Cross-Origin-Resource-Policy', 'same-origin');
  if (!h.has('Content-Security-Policy')) h.set('Content-Security-Policy', SITE.csp);
  const t = TYPES[path.split('.').pop()];
  if (t && !/javascript|wasm/.test(h.get('Content-Type') ?? '')) h.set('Content-Type', t);
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers: h });
}

// The cached file of a request: this version's (the page itself for the
// scope's own URL, whatever its query), or a file of an older version's
// folder (a tab still open on it).
async function cached(req) {
  const url = new URL(req.url);
  url.search = '';
  url.hash = '';
  const rel = url.href.slice(scopeUrl().length);
  const key = rel === '' || rel === 'index.html' ? abs('./') : url.href;
  const own = await (await caches.open(CACHE)).match(key);
  if (own || key === abs('./')) return own;
  return /^app-[0-9a-f]+\//.test(rel) ? caches.match(key) : undefined;
}

const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
function offline(req) {
  const last = new URL(req.url).pathname.split('/').pop();
  let what = 'this page';
  try { if (last) what = decodeURIComponent(last); } catch { what = last; }   // a malformed %-escape: the raw name
  const text = `the server cannot be reached (no network?) and ${what} is not in this browser's offline copy of the page`;
  const html = text.replace(/[&<>"']/g, (c) => ESC[c]);
  return new Response(req.mode === 'navigate' ? `<!doctype html><meta charset="utf-8"><title>Offline</title><p>Offline: ${html}.</p>` : text,
    { status: 503, headers: { 'Content-Type': req.mode === 'navigate' ? 'text/html; charset=utf-8' : 'text/plain; charset=utf-8', 'X-Atome-Offline': '1' } });
}

async function answer(req) {
  const path = new URL(req.url).pathname;
  const hit = req.headers.has('range') ? null : await cached(req);
  if (hit) return dressed(hit, path);
  try { return dressed(await fetch(req), path); } catch { return dressed(offline(req), path); }
}

self.addEventListener('fetch', (e) => {
  const req = e.request;
  if (req.method !== 'GET' || new URL(req.url).origin !== self.location.origin || !req.url.startsWith(scopeUrl())) return;
  e.respondWith(answer(req));
});
