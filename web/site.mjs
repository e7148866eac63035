// web/site.mjs — the page and its service worker (the site root's sw.js,
// written from web/sw.js by tools/web/site.mjs): registers it, and says in
// #site-status which mode the page is in — cross-origin isolated (by the
// server's headers or by the service worker's: training may use every core)
// or not (one thread, and whether a reload changes that), and whether this
// browser keeps an offline copy of this version. A new version, once its
// worker has its copy, shows #update-banner; its Reload button lets that
// worker take over and reloads the page, which then runs the new version only.
import { $, fmt } from './ui.mjs';

// This page's version: the name of the folder its modules came from (app-<version>/).
export const VERSION = /\/app-([0-9a-f]+)\/web\/[^/]*$/.exec(new URL(import.meta.url).pathname)?.[1] ?? null;

const site = { updating: false, status: null };

export function initSite() {
  const sw = navigator.serviceWorker;
  $('site-reload').addEventListener('click', () => location.reload());
  $('update-reload').addEventListener('click', () => update(site));
  if (!sw) { show(site, 'none'); return; }
  show(site, 'starting');
  sw.addEventListener('message', (e) => {
    if (e.data?.type === 'status') { site.status = e.data; show(site, 'ready'); }
  });
  sw.addEventListener('controllerchange', () => {
    if (site.updating) location.reload();
    else if (site.had) notice('A new version of the page is running in another tab — reload to use it.');
  });
  site.had = !!sw.controller;
  sw.startMessages?.();
  // the root's sw.js (beside index.html), whatever sub-path the site is under
  sw.register(new URL('sw.js', document.baseURI), { scope: './' }).then((reg) => watch(site, reg)).catch((e) => {
    site.error = e.message;
    show(site, 'failed');
  });
}

function watch(site, reg) {
  site.reg = reg;
  if (reg.waiting && navigator.serviceWorker.controller) notice();
  reg.addEventListener('updatefound', () => track(site, reg.installing));
  if (reg.installing) track(site, reg.installing);
  else ask(site);
  // a tab left open learns of a new version when it comes back
  document.addEventListener('visibilitychange', () => { if (!document.hidden) reg.update().catch(() => {}); });
}

function track(site, w) {
  show(site, 'saving');
  w.addEventListener('statechange', () => {
    if (w.state === 'installed' && navigator.serviceWorker.controller) { notice(); ask(site); }
    else if (w.state === 'activated') ask(site);
    else if (w.state === 'redundant' && !site.reg.active) { site.error = 'the offline copy could not be saved'; show(site, 'failed'); }
  });
}

function ask(site) {
  const w = navigator.serviceWorker.controller ?? site.reg.active;
  if (w) w.postMessage({ type: 'status' });
}

function notice(text = null) {
  if (text) $('update-text').textContent = text;
  $('update-banner').hidden = false;
  $('update-banner').dataset.version = 'new';
}

function update(site) {
  const w = site.reg?.waiting;
  if (!w) { location.reload(); return; }
  site.updating = true;
  w.postMessage({ type: 'update' });
}

// #site-status: data-mode (server, service-worker, none) and data-offline
// (starting, saving, ready, none, failed) for the tests; words for people.
function show(site, offline) {
  const sw = navigator.serviceWorker;
  const controlled = !!sw?.controller;
  const cores = fmt(navigator.hardwareConcurrency || 1);
  // under the service worker the server's own headers are those of the page it keeps
  const mode = !crossOriginIsolated ? 'none' : !controlled || site.status?.serverIsolated ? 'server' : 'service-worker';
  $('site-status').dataset.mode = mode;
  $('site-status').dataset.offline = offline;
  $('site-threads').textContent = mode === 'server' ? `Threads: cross-origin isolated by the server's headers; training may use all ${cores} cores.`
    : mode === 'service-worker' ? `Threads: cross-origin isolated by the page's service worker; training may use all ${cores} cores.`
      : !sw ? 'One thread: this host sends no cross-origin isolation headers, and this browser offers no service worker here (it needs https or localhost) to add them.'
        : `One thread for now: this host sends no cross-origin isolation headers. The page's service worker adds them from the next load: reload to train on up to ${cores} threads.`;
  $('site-offline').textContent = offlineText(site, offline);
  $('site-reload').hidden = !(mode === 'none' && sw && (controlled || offline === 'ready' || offline === 'saving'));
}

function offlineText(site, offline) {
  const v = VERSION ? ` (version ${VERSION})` : '';
  if (offline === 'none') return 'No offline copy: without the network this page will not load.';
  if (offline === 'failed') return `No offline copy: the service worker did not start (${site.error}); without the network this page will not load.`;
  if (offline === 'saving') return navigator.serviceWorker?.controller ? 'Fetching a new version of the page…' : 'Saving an offline copy of the page…';
  if (offline === 'ready' && site.status?.complete) return `Offline copy saved${v}: the page loads, generates, trains and downloads without the network.`;
  return '';
}
