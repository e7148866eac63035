// web/runs.mjs — the saved runs (IndexedDB, web/store.mjs): the #runs list
// (continue, open the model, download the checkpoint, delete with a second
// click), the banner that offers an interrupted run, and one run, one tab.
//
// A run training in a tab holds the Web Lock atome-run:<id> until it ends or
// the tab closes; other tabs of the browser show it as running there (no
// Continue, no Delete) and offer it again when the lock is released. A
// BroadcastChannel (atome-runs) tells the other tabs to refresh their list.
import * as store from './store.mjs';
import { $, fmt, stamp, li, button, guarded, download } from './ui.mjs';
import { trainedLabel } from './train.mjs';

const lockName = (id) => `atome-run:${id}`;

// The section: the lock release of the run this tab trains, the runs whose
// release is awaited (held by another tab), the runs the banner offered once
// (their settings went to the form), whether the banner was dismissed, the
// channel to the other tabs.
export function initRuns(page) {
  const rs = { locks: typeof navigator !== 'undefined' ? navigator.locks : null, release: null, watching: new Set(),
    offered: new Set(), dismissed: false,
    channel: typeof BroadcastChannel !== 'undefined' ? new BroadcastChannel('atome-runs') : null };
  if (rs.channel) rs.channel.onmessage = () => { listSavedRuns(page, rs).then(() => offerInterrupted(page, rs)); };
  return {
    state: rs,
    list: () => listSavedRuns(page, rs),
    offer: (runs = null) => offerInterrupted(page, rs, runs),
    announce: () => announce(rs),
    hold: (id) => holdRun(rs, id),
    release: () => releaseRun(rs),
  };
}

function announce(rs) { rs.channel?.postMessage('changed'); }

function holdRun(rs, id) {
  if (!rs.locks) return Promise.resolve(true);
  return new Promise((resolve) => {
    rs.locks.request(lockName(id), { ifAvailable: true }, (lock) => {
      if (!lock) { resolve(false); return null; }
      resolve(true);
      announce(rs);
      return new Promise((release) => { rs.release = release; });
    });
  });
}

function releaseRun(rs) {
  if (!rs.release) return;
  rs.release();
  rs.release = null;
  setTimeout(() => announce(rs), 0);
}

// ids of the runs a training tab other than this one holds
async function runsHeldElsewhere(page, rs) {
  if (!rs.locks) return new Set();
  const mine = rs.release && page.train.run ? lockName(page.train.run.id) : null;
  const q = await rs.locks.query();
  return new Set(q.held.map((l) => l.name).filter((n) => n.startsWith('atome-run:') && n !== mine).map((n) => n.slice(10)));
}

// When the other tab lets the run go, offer it here.
function watchRun(page, rs, id) {
  if (!rs.locks || rs.watching.has(id)) return;
  rs.watching.add(id);
  rs.locks.request(lockName(id), () => { rs.watching.delete(id); })
    .then(() => setTimeout(() => listSavedRuns(page, rs).then(() => offerInterrupted(page, rs)), 0));
}

async function listSavedRuns(page, rs) {
  let runs;
  try { runs = await store.listRuns(); } catch (e) {
    $('runs').replaceChildren(li(`Saved runs are not available: ${e.message}`));
    $('runs').dataset.loaded = '1';
    return [];
  }
  const elsewhere = await runsHeldElsewhere(page, rs);
  const items = runs.map((r) => runItem(page, rs, r, elsewhere.has(r.id)));
  $('runs').replaceChildren(...(items.length ? items : [li('No saved runs yet.')]));
  $('runs').dataset.loaded = '1';
  return runs;
}

// One li[data-run-id]: what the run is and where it stands, and its buttons.
function runItem(page, rs, r, there) {
  const item = document.createElement('li');
  const s = r.settings;
  const txt = document.createElement('span');
  const when = stamp(r.updated);
  const isLive0 = page.train.run?.id === r.id && page.train.active;
  if (there) watchRun(page, rs, r.id);
  const stateText = there ? 'training in another tab' : r.state === 'done' ? (r.stopped ? 'stopped early' : 'finished') :
    r.state === 'failed' ? `failed: ${r.error ?? 'an error'}` :
    !r.hasCkpt && !isLive0 ? 'interrupted before its first save' :
    isLive0 ? r.state : r.state === 'running' ? 'interrupted (continues from this step)' : 'paused';
  txt.textContent = `${s.config} ${s.quant}, ${r.corpusName}: step ${fmt(r.step)} of ${fmt(r.steps)}, ${stateText}` +
    (r.valBpb ? `, validation ${r.valBpb.toFixed(4)} bpb` : '') + ` — ${when}`;
  item.append(txt);
  const isLive = isLive0 || there;
  if (there) item.dataset.elsewhere = '1';
  if (r.state !== 'done' && r.state !== 'failed' && r.hasCkpt && !isLive) item.append(button('Continue', () => continueRun(page, rs, r.id), `continue-${r.id}`));
  if (r.state === 'done' && r.hasModel) item.append(button('Open in Generate', () => openRunModel(page, r.id), `open-${r.id}`));
  if (r.hasCkpt) item.append(button('Checkpoint', () => downloadCkpt(r.id), `ckpt-${r.id}`, 'secondary'));
  if (!isLive) item.append(deleteButton(page, rs, r.id));
  if (r.hasCkpt) item.append(...cliResume(page, r));
  item.dataset.runId = r.id;
  return item;
}

// Two clicks: the first asks, the second deletes (the run's model goes with it).
function deleteButton(page, rs, id) {
  const del = button('Delete', () => {
    if (del.dataset.armed !== '1') {
      del.dataset.armed = '1';
      del.textContent = 'Delete? Click again';
      setTimeout(() => { del.dataset.armed = ''; del.textContent = 'Delete'; }, 4000);
      return Promise.resolve();
    }
    return deleteSavedRun(page, rs, id);
  }, `delete-${id}`, 'secondary');
  return del;
}

async function continueRun(page, rs, id) {
  if (page.train.active) throw new Error('a run is in progress: pause or stop it first');
  page.train.claim();      // at once: a second click finds the run taken
  if (!(await holdRun(rs, id))) {
    page.train.status('idle');
    await listSavedRuns(page, rs);
    await offerInterrupted(page, rs);
    throw new Error('that run is training in another tab of this browser');
  }
  let r, corpus;
  try {
    r = await store.getRun(id);
    if (!r || !r.ckpt) throw new Error('that run has no saved checkpoint');
    corpus = r.corpusBuiltin ? await page.train.builtinCorpus(r.corpusBytes || 500000) : r.corpus;
    if (!corpus) throw new Error('the corpus of that run was not saved; it cannot be continued');
    if (r.state === 'failed') throw new Error('that run failed; it cannot be continued');
  } catch (e) { releaseRun(rs); page.train.status('idle'); throw e; }
  $('resume-banner').hidden = true;
  const { corpus: _c, ...run } = r;
  run.state = 'running';
  page.train.continueRun(run, corpus, { ckpt: r.ckpt, history: r.history });
}

async function openRunModel(page, id) {
  const r = await store.getRun(id);
  if (!r?.atome02) throw new Error('that run has no packed model');
  const v = page.models.add(`trained-${r.settings.config}-${r.id.slice(4, 12)}.atome`,
    { label: trainedLabel(r, r.step), kind: 'trained', bytes: r.atome02, runId: r.id }, true);
  await page.models.open(v);
  location.hash = '#sec-generate';
}

// The run's float checkpoint (ATOMECKP): `atome train --resume` continues
// it, `atome export` packs it, `atome eval` scores it.
async function downloadCkpt(id) {
  const r = await store.getRun(id);
  if (!r?.ckpt) throw new Error('that run has no saved checkpoint');
  download(r.ckpt, ckptName(r));
}

const ckptName = (r) => `${r.settings.config}-${r.id.slice(4, 12)}-step${r.step}.ckpt`;

// How the downloaded checkpoint goes on in the CLI: the data it needs (the
// very bytes the run trained on, under the name the checkpoint records) and
// the command; the Corpus button downloads those bytes.
function cliResume(page, r) {
  const p = document.createElement('p');
  p.className = 'hint cli-resume';
  const ck = ckptName(r);
  const data = r.corpusBuiltin ? `the first ${fmt(r.corpusBytes)} bytes of TinyStories` : 'your file';
  p.append('To continue it in the CLI, save the checkpoint and the corpus (Checkpoint, Corpus: ', r.corpusName, `, ${data}) and run `,
    Object.assign(document.createElement('code'), { textContent: `atome train --resume ${ck} --data ${r.corpusName} --out ${ck}` }), '.');
  return [button('Corpus', () => downloadCorpus(page, r.id), `corpus-${r.id}`, 'secondary'), p];
}

// The bytes a run trained on, under the name its checkpoint records.
async function downloadCorpus(page, id) {
  const r = await store.getRun(id);
  if (!r) throw new Error('that run is gone');
  const bytes = r.corpusBuiltin ? await page.train.builtinCorpus(r.corpusBytes || 500000) : r.corpus;
  if (!bytes) throw new Error('the corpus of that run was not saved');
  download(bytes, r.corpusName, 'text/plain');
}

async function deleteSavedRun(page, rs, id) {
  if ((await runsHeldElsewhere(page, rs)).has(id)) { await listSavedRuns(page, rs); throw new Error('that run is training in another tab of this browser'); }
  await store.deleteRun(id);
  announce(rs);
  await listSavedRuns(page, rs);
  $('runs-heading').focus();
}

// The banner offers the newest interrupted run that no tab is training; the
// form then shows that run's settings and corpus (once per run: edits made
// afterwards stay).
async function offerInterrupted(page, rs, runs = null) {
  if (page.train.active) return;
  if (!runs) { try { runs = await store.listRuns(); } catch { return; } }
  const elsewhere = await runsHeldElsewhere(page, rs);
  for (const r of runs) if (elsewhere.has(r.id)) watchRun(page, rs, r.id);
  const live = runs.find((r) => (r.state === 'running' || r.state === 'paused') && r.hasCkpt && !elsewhere.has(r.id));
  if (!live || rs.dismissed) {
    $('resume-banner').hidden = true;
    if (!live && $('train-text').dataset.offer) { $('train-text').textContent = 'Not started.'; delete $('train-text').dataset.offer; }
    return;
  }
  $('resume-text').textContent = `A training run (${live.settings.config}, step ${fmt(live.step)} of ${fmt(live.steps)}) ` +
    'was interrupted. Continue it from its last save?';
  $('resume-banner').hidden = false;
  $('train-text').textContent = `An interrupted run (step ${fmt(live.step)}) can be continued: see the banner at the top or Saved runs.`;
  $('train-text').dataset.offer = live.id;
  if (!rs.offered.has(live.id)) {
    rs.offered.add(live.id);
    page.train.showRun(live);
  }
  $('resume-continue').onclick = () => guarded(() => continueRun(page, rs, live.id));
  $('resume-later').onclick = () => { rs.dismissed = true; $('resume-banner').hidden = true; };
}
