// web/app.mjs — the Atome page: generate with the shipped (or your own)
// model, train a model in the tab, download it for a board. This module
// wires the sections together; each is a module whose init function makes
// its state and listeners:
//   web/models.mjs    the model list and the open model
//   web/generate.mjs  Generate (web/why.mjs: the "why this byte" strip)
//   web/board.mjs     Download for a board
//   web/train.mjs     Train in the tab (web/chart.mjs: curves and samples)
//   web/runs.mjs      Saved runs, the resume banner, one run per tab
//   web/score.mjs     Score your own text (one or two models side by side)
// The heavy work runs in two module workers on atome.wasm, both spoken to
// through web/rpc.mjs: web/gen-worker.mjs (integer engine, board files) and
// web/train-worker.mjs (float trainer). Saved runs live in IndexedDB
// (web/store.mjs); web/hook.mjs is the test hook window.__atome; web/ui.mjs
// what the sections share. docs/web.md describes the page, its element
// contract and the page <-> worker messages.
import { connect } from './rpc.mjs';
import { $, fmt, showError, hideError, fetchBytes } from './ui.mjs';
import { initSite } from './site.mjs';
import { initModels } from './models.mjs';
import { initWhy } from './why.mjs';
import { initGenerate } from './generate.mjs';
import { initBoard } from './board.mjs';
import { initTrain, trainedLabel } from './train.mjs';
import { initRuns } from './runs.mjs';
import { initScore } from './score.mjs';

// What every section sees: the query string, the generation limits, what is
// ready, the two workers, refresh() (the buttons that depend on all that)
// and the sections themselves.
const page = {
  params: new URLSearchParams(location.search),
  // One set of generation limits, the C core's (core/sampler.h), read from the
  // module at start: n in 0..nMax, an empty Length is nDefault bytes, an empty
  // Seed is seedDefault — in Generate, on the board cards, in the CLI and in
  // the firmware alike.
  limits: { nMax: 1e12, nDefault: 256, seedDefault: 1, maxWindow: 65535 },
  ready: { module: false, model: false, trainer: false },
  refresh: () => { page.generate.refresh(); page.train.refresh(); page.board.refresh(); page.score?.refresh(); },
};
page.gen = connect(new URL('./gen-worker.mjs', import.meta.url), { name: 'generation worker' });
page.trainer = connect(new URL('./train-worker.mjs', import.meta.url), { name: 'training worker',
  onCrash: (message) => page.train.crashed(message) });

$('error-close').addEventListener('click', hideError);
window.addEventListener('unhandledrejection', (e) => showError(e.reason?.message ?? String(e.reason)));

// Settings from the query string: any field by its id.
for (const [k, v] of page.params) {
  const el = document.getElementById(k);
  if (el && (el.tagName === 'INPUT' && el.type !== 'file' || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT')) el.value = v;
}

page.models = initModels(page);
page.why = initWhy();
page.generate = initGenerate(page);
page.board = initBoard(page);
page.train = initTrain(page);
page.runs = initRuns(page);
page.score = initScore(page);

// Start-up: both modules load, the models are listed and the first opened,
// then the saved runs (their trained models join the list) and the offer of
// an interrupted one.
async function boot() {
  page.train.status('idle', { step: 0, valBpb: '' });
  const scalar = page.params.get('scalar') === '1';
  page.train.init(scalar);
  if (!(await loadModule(scalar))) return;
  await listModels();
  page.refresh();
  const runs = await page.runs.list();
  for (const r of runs.filter((x) => x.state === 'done' && x.hasModel).reverse())
    page.models.add(`trained-${r.settings.config}-${r.id.slice(4, 12)}.atome`, { label: trainedLabel(r, r.step), kind: 'trained', runId: r.id });
  await page.runs.offer(runs);
}

async function loadModule(scalar) {
  let mod;
  try { mod = await page.gen.call('init', { forceScalar: scalar }); } catch (e) {
    $('module-status').textContent = 'The WebAssembly module did not load.';
    showError(`cannot load the WebAssembly module: ${e.message} (run tools/setup, then tools/serve)`);
    return false;
  }
  page.ready.module = true;
  Object.assign(page.limits, mod.limits);
  $('version').textContent = mod.version;   // as `atome --version`: version (commit)
  page.board.setBoards(mod.boards);         // the table of boards, core/boards.def
  $('module-status').textContent = mod.simd ? 'Ready: WebAssembly SIMD module.' :
    'Ready: this browser has no WebAssembly SIMD, so the page uses the scalar module (atome-scalar.wasm): the same bytes, slower.';
  $('module-status').dataset.module = mod.module;
  $('module-status').dataset.wasm = mod.wasm;   // its URL (which version's wasm runs)
  return true;
}

// The shipped models (the web model first), then the one the query string
// names, or the first, opened.
async function listModels() {
  let list = [];
  // the site's static list (tools/web/site.mjs), beside the models
  const at = new URL('../models/index.json', import.meta.url);
  try { list = JSON.parse(new TextDecoder().decode(await fetchBytes(at.href))).models; } catch (e) { showError(`cannot list the models: ${e.message}`); }
  for (const m of list) page.models.add(m.name, { label: `${m.name} (${fmt(m.bytes)} bytes)`, kind: 'shipped', url: new URL(encodeURIComponent(m.name), at).href,
    card: m.card ? new URL(encodeURIComponent(m.card), at).href : null });
  const want = page.params.get('model-select') ?? page.params.get('model');
  const first = want && page.models.has(want) ? want : list[0]?.name;
  if (first) { $('model-select').value = first; await page.models.open(first); }
}

// the service worker (offline copy, isolation headers) once the page is up
boot().finally(initSite);
