// web/store.mjs — saved training runs in IndexedDB.
//
// Database "atome" (version 1):
//   runs    keyPath "id": { id, created, updated, settings, corpusName,
//           corpusBytes, corpusBuiltin, step, steps, state, history,
//           valBpb, hasCkpt, hasModel }      (small: listed on every save)
//   blobs   keyPath "id": { id, ckpt, atome01, atome02 }   (the run's bytes)
//   corpora keyPath "id": { id, bytes }      (a user-picked corpus, per run)
//
// Every save is one readwrite transaction over both stores, so it lands
// whole or not at all: a tab closed mid-save, a full disk or a denied
// database leave the record that was there before untouched. Errors come
// back as Error objects with a one-line message for the page's #error.

const DB = 'atome', VERSION = 1;
let dbPromise = null;

function why(e) {
  const name = e?.name ?? '';
  if (name === 'QuotaExceededError') return 'the browser\'s storage for this page is full';
  if (name === 'SecurityError' || name === 'InvalidStateError') return 'the browser does not allow storage for this page (private window or blocked site data?)';
  if (name === 'AbortError') return 'the save was cut short';
  return e?.message || name || 'unknown IndexedDB error';
}

function wrap(e, what) {
  const err = new Error(`${what}: ${why(e)}`);
  err.cause = e;
  return err;
}

export function openDb() {
  if (dbPromise) return dbPromise;
  dbPromise = new Promise((resolve, reject) => {
    let req;
    try {
      if (typeof indexedDB === 'undefined' || !indexedDB) throw Object.assign(new Error('no IndexedDB'), { name: 'SecurityError' });
      req = indexedDB.open(DB, VERSION);
    } catch (e) { reject(wrap(e, 'cannot open saved runs')); return; }
    req.onupgradeneeded = () => {
      const db = req.result;
      for (const name of ['runs', 'blobs', 'corpora'])
        if (!db.objectStoreNames.contains(name)) db.createObjectStore(name, { keyPath: 'id' });
    };
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(wrap(req.error, 'cannot open saved runs'));
    req.onblocked = () => reject(new Error('cannot open saved runs: another tab holds an older version of the database open'));
  });
  dbPromise.catch(() => { dbPromise = null; });
  return dbPromise;
}

function tx(db, stores, mode, body) {
  return new Promise((resolve, reject) => {
    let t;
    try { t = db.transaction(stores, mode); } catch (e) { reject(e); return; }
    let out;
    t.oncomplete = () => resolve(out);
    t.onerror = (ev) => { ev.preventDefault(); reject(t.error ?? ev.target?.error); };
    t.onabort = () => reject(t.error ?? Object.assign(new Error('aborted'), { name: 'AbortError' }));
    try { out = body(t); } catch (e) { try { t.abort(); } catch { /* already done */ } reject(e); }
  });
}

// Writes a run record (and its corpus, once, if given) in one transaction.
export async function saveRun(record, corpus = null) {
  const db = await openDb();
  const { ckpt = null, atome01 = null, atome02 = null, ...meta } = record;
  meta.hasCkpt = !!ckpt;
  meta.hasModel = !!atome02;
  try {
    await tx(db, ['runs', 'blobs', 'corpora'], 'readwrite', (t) => {
      t.objectStore('runs').put(meta);
      t.objectStore('blobs').put({ id: record.id, ckpt, atome01, atome02 });
      if (corpus) t.objectStore('corpora').put({ id: record.id, bytes: corpus });
    });
  } catch (e) { throw wrap(e, `could not save the run at step ${record.step}`); }
}

// All runs, newest first (their metadata only).
export async function listRuns() {
  const db = await openDb();
  let all = [];
  try {
    await tx(db, ['runs'], 'readonly', (t) => {
      const r = t.objectStore('runs').getAll();
      r.onsuccess = () => { all = r.result; };
    });
  } catch (e) { throw wrap(e, 'cannot read saved runs'); }
  return all.sort((a, b) => b.updated - a.updated);
}

// One run with its bytes: { ...meta, ckpt, atome01, atome02, corpus }.
export async function getRun(id) {
  const db = await openDb();
  let rec = null, blob = null, corpus = null;
  try {
    await tx(db, ['runs', 'blobs', 'corpora'], 'readonly', (t) => {
      const a = t.objectStore('runs').get(id), b = t.objectStore('blobs').get(id), c = t.objectStore('corpora').get(id);
      a.onsuccess = () => { rec = a.result ?? null; };
      b.onsuccess = () => { blob = b.result ?? null; };
      c.onsuccess = () => { corpus = c.result?.bytes ?? null; };
    });
  } catch (e) { throw wrap(e, 'cannot read the saved run'); }
  return rec ? { ...rec, ckpt: blob?.ckpt ?? null, atome01: blob?.atome01 ?? null, atome02: blob?.atome02 ?? null, corpus } : null;
}

export async function deleteRun(id) {
  const db = await openDb();
  try {
    await tx(db, ['runs', 'blobs', 'corpora'], 'readwrite', (t) => {
      for (const name of ['runs', 'blobs', 'corpora']) t.objectStore(name).delete(id);
    });
  } catch (e) { throw wrap(e, 'could not delete the run'); }
}
