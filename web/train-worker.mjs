// web/train-worker.mjs — the page's training worker: the float trainer of
// atome.wasm (wasm SIMD kernels) running one model at a time, in slices
// short enough that pause / stop requests are seen within ~50 ms, and it
// keeps going when the tab is hidden (a dedicated worker is not throttled
// like the page's timers).
//
// Protocol: web/rpc.mjs (requests with ids, events, one reply each); the
// requests (docs/web.md):
//   init { scalar, threads } -> { simd, kernels, threads, isolated, note, options } load the module
//                               (atome-threads.wasm when threads > 1 and shared memory exists);
//                               options: its training option table (core/train/options.h)
//   start { run }            -> { step, steps, valBpb, atome01, atome02, ckpt, history, stopped, seconds }
//                               when the run is over; run = { id, settings, corpus, corpusName, samplePrompt,
//                               resume?, saveEveryMs, failAt }. Its events, while it trains:
//                                 started { info }                model built, data chunked
//                                 progress { step, steps, loss, lr, bytesPerSec, seconds, stepMs, tailMs, state, train,
//                                            threads, probing }
//                                 eval { step, bpb, final? } / sample { step, text }
//                                 checkpoint { reason, step, ckpt, history }   every few seconds, on pause, at start
//                                 state { state, step }           running | paused
//   pause / resume / stop    -> true                              (the change comes as the run's `state` event)
//   measure { settings, corpus, counts, targetMs } -> { threads, msPerStep, blocks, setupMs, evalMsPerChunk, sampleMs, saveMs,
//                               exportMs, trainChunks, evalChunks, seconds }: the minute preset's measure of this
//                               device, on a scratch model of the run's shape (freed after): the step time on each
//                               thread count of counts (the faster is `threads`), one validation chunk, a sample, a
//                               save, the end of a run (packed models, final checkpoint)
// settings.threads is a count or 'auto': the run's first slices alternate one
// thread and all of them (run.startThreads, a measure's choice, skips that
// first comparison), the faster count trains on, and every REPROBE_MS of
// training the two are compared again, so a core taken or freed mid-run
// changes the count (any count gives the same bits).
// A failure carries state (the worker's after it; idle: no run left) and,
// for a run given up (freed; not resumable), failed and runId; a start while
// a run is in progress is refused (refused) and the run goes on.
//
// Determinism: the trainer's state (weights, AdamW moments, step, RNG,
// schedule) is all in the checkpoint; evaluations and samples read the
// weights without changing them, so a run continued from any checkpoint
// reaches the same bits as one that never stopped. The history (loss
// curves, samples) is saved with each checkpoint and restored with it.
import { loadAtome, threadsAvailable } from '../wasm/atome.mjs';
import { simdSupported, yieldNow } from './worker-util.mjs';
import { serve, Transfer } from './rpc.mjs';

let saveEveryMs = 3000;            // checkpoint cadence while running (the page may set it)
const SLICE_MS = 50;              // training time between looks at the message queue
// progress to the page at most every 250 ms: the page's redraws take CPU time
// from the training threads when they use every core
const PROGRESS_MS = 250;
const TRAIN_POINT_EVERY = 10;     // one train-loss point per 10 steps (their mean)
const SAMPLE = { prompt: 'Once upon a time', n: 160, temperature: '0.8', topK: 40, seed: 1 };

let atome = null, simd = false, maxThreads = 1;
let m = null;                    // the Model being trained
let run = null;                  // { id, settings, ... }
let history = null;              // { train: [[step, bpb]], val: [[step, bpb]], samples: [[step, text]], acc: [sum, n] }
let state = 'idle';              // idle | running | paused | stopping | done
let lastSave = 0;
let failAt = 0;                  // test hook (?fail-at=N): the run throws at step N
let emit = null;                 // the events of the run's start request

const bpb = (nats) => nats / Math.LN2;

function post(event, data, transfer = []) { emit?.(event, data, transfer); }

// The run's options for createModel (numbers already checked by the page;
// the C side checks ranges and says why).
function modelOptions(s) {
  const o = { seed: s.seed, steps: s.steps, batch: s.batch, seq: s.seq, lr: s.lr, quant: s.quant,
    warmup: s.warmup, cosine: s.cosine, lrMin: s.lrMin, clip: s.clip, wd: s.wd, fpFraction: s.fpFraction };
  if (s.lr2 !== null && s.lr2 !== undefined) o.lr2 = s.lr2;
  return o;
}

// The run's validation points: the first VAL_CHUNKS held-out chunks (64,000
// bytes at seq 64; every chunk of the built-in reference run's 50 KB), the
// final point all of them. A pass over quick's 200 KB at every point took
// about a tenth of its minute.
const VAL_CHUNKS = 1000;
const cost = { evalMsPerChunk: 0, sampleMs: 0, evalChunks: 0 };   // the latest validation's and sample's times
function evaluate(all = false) {
  const t = performance.now();
  const r = m.evaluate({ maxChunks: all ? 0 : VAL_CHUNKS, batch: 16 });
  cost.evalMsPerChunk = (performance.now() - t) / Math.max(1, all ? cost.evalChunks : Math.min(VAL_CHUNKS, cost.evalChunks));
  return bpb(r.natsPerByte);
}

// What the run still does beside its steps, in ms, from the times of its own
// validations and samples: the validations and samples left, the final pass
// over all held-out chunks, and the export (about a third of that pass).
function tailMs(every) {
  const left = (n) => (n ? Math.max(0, Math.ceil(m.steps / n) - 1 - Math.floor(m.step / n)) : 0);
  const final = cost.evalChunks * cost.evalMsPerChunk;
  return left(every.eval) * Math.min(VAL_CHUNKS, cost.evalChunks) * cost.evalMsPerChunk + 1.3 * final +
    (left(every.sample) + 1) * cost.sampleMs;
}

// Samples start from the run's own prompt: the start of its corpus (the page
// picks it), so a model trained on other text is not asked about TinyStories.
function sample() {
  const t = performance.now();
  const dec = new TextDecoder();
  const prompt = run.samplePrompt || SAMPLE.prompt;
  const bytes = m.generateBytes(prompt, { n: SAMPLE.n, temperature: SAMPLE.temperature, topK: SAMPLE.topK,
    seed: SAMPLE.seed });
  cost.sampleMs = performance.now() - t;
  return prompt + dec.decode(bytes);
}

// A failed start or run leaves nothing behind: the model (and the corpus
// copy inside its session) is freed, the next run starts from a clean worker.
function abandon() {
  if (m) { try { m.free(); } catch { /* already gone */ } m = null; }
  run = null;
  history = null;
  state = 'idle';
}

// Out of memory: says what did not fit and the largest batch at this seq
// that does (each candidate is built, given the corpus and evaluated once,
// then freed).
function memoryAdvice(s, corpus) {
  const fits = (b) => {
    let t = null;
    try {
      t = atome.createModel(s.config, { ...modelOptions(s), batch: b });
      t.setData(corpus, { split: 0.9 });
      t.evaluate({ maxChunks: 1, batch: 16 });
      return true;
    } catch { return false; } finally { try { t?.free(); } catch { /* freed */ } }
  };
  let lo = 0, hi = s.batch - 1;
  while (lo < hi) { const mid = Math.ceil((lo + hi) / 2); if (fits(mid)) lo = mid; else hi = mid - 1; }
  if (lo === 0 && hi >= 1 && fits(1)) lo = 1;
  const what = `out of memory: ${s.config} at batch ${s.batch} × seq ${s.seq} with a ${corpus.length.toLocaleString('en-US')}-byte corpus ` +
    `needs more than the training module's ${(MAX_MEMORY / (1 << 30)).toFixed(0)} GiB of memory`;
  return lo >= 1 ? `${what}; the largest batch that fits at seq ${s.seq} is ${lo}` : `${what}; not even batch 1 fits at seq ${s.seq}: use a shorter seq`;
}
const MAX_MEMORY = 1 << 30;    // wasm/CMakeLists.txt ATOME_WASM_MAX_MEMORY

// The error a failed run ends its start request with.
function failure(e, r) {
  const s = r?.settings, corpus = r?.corpus;
  abandon();
  let message = String(e?.message ?? e);
  if (/out of (wasm )?memory/.test(message) && s && corpus) {
    try { message = memoryAdvice(s, corpus); } catch { /* keep the first message */ }
  }
  return Object.assign(new Error(message), { state: 'idle', runId: r?.id ?? null, failed: true });
}

function saveCheckpoint(reason) {
  // a checkpoint to continue from: the final one (in finish) carries the
  // calibration statistics, these need none
  const ckpt = m.saveCheckpoint({ calibration: false });
  lastSave = performance.now();
  post('checkpoint', { reason, step: m.step, ckpt, history: structuredClone(history) }, [ckpt.buffer]);
}

// Builds the run's model (new or from its checkpoint) on its corpus.
function begin(r) {
  if (m) { m.free(); m = null; }
  state = 'idle';
  run = r;
  if (r.saveEveryMs > 0) saveEveryMs = r.saveEveryMs;
  const s = r.settings;
  if (r.resume) {
    m = atome.loadCheckpoint(r.resume.ckpt);
    history = r.resume.history;
  } else {
    m = atome.createModel(s.config, modelOptions(s));
    history = { train: [], val: [], samples: [], acc: [0, 0] };
  }
  const { trainChunks, evalChunks } = m.setData(r.corpus, { split: 0.9, trainName: r.corpusName });
  Object.assign(cost, { evalChunks, evalMsPerChunk: 0, sampleMs: 0 });
  failAt = r.failAt > 0 ? r.failAt : 0;
  post('started', { info: { params: m.nParams, family: m.family, quant: m.quant, trainChunks, evalChunks,
    step: m.step, steps: m.steps, kernels: atome.kernels(), simd } });
  state = 'running';
  // a first save at once, so that a reload in the first seconds can continue
  if (!r.resume) saveCheckpoint('start');
}

// A run, start to end: the reply is the finished run (see finish).
async function start({ run: r }, ctx) {
  // refused without touching the run in progress
  if (state === 'running' || state === 'paused' || state === 'stopping')
    throw Object.assign(new Error('a run is already in progress'), { refused: true });
  emit = ctx.emit;
  try {
    // not part of the run: a continued run may use another count
    auto = r.settings.threads === 'auto' && maxThreads > 1;
    const first = Number(r.startThreads) > 0 ? Math.min(maxThreads, Number(r.startThreads)) : 0;
    atome.setThreads(auto ? first || maxThreads : Number(r.settings.threads) || 1);
    probe = auto && !first ? { plan: comparePlan(1, maxThreads), i: 0, ms: new Map() } : null;
    // a count the measure chose is checked again after FIRST_REPROBE_MS of training, then every REPROBE_MS
    sinceProbeMs = first ? REPROBE_MS - FIRST_REPROBE_MS : 0;
    begin(r);
    await loop();
    return await finish(state === 'stopping');
  } catch (e) { throw failure(e, r); }
}

function finishTrainPoint(step) {
  const [sum, n] = history.acc;
  if (n > 0) history.train.push([step, bpb(sum / n)]);
  history.acc = [0, 0];
}

// Trains until the last step or a stop, in slices; the loop's pace is in
// `pace` (the step time estimate, the bytes/s rate, the last progress event).
async function loop() {
  const s = run.settings;
  const every = { eval: s.evalEvery > 0 ? s.evalEvery : 0, sample: s.sampleEvery > 0 ? s.sampleEvery : 0 };
  // stepMs: refined as we go, from the page's measure when there was one, else from the first slice (0: none yet)
  const pace = { stepMs: run.stepMsHint > 0 ? run.stepMsHint : 0, rate: 0, lastPost: 0, predicted: m.batch * (m.seq - 1) };
  lastSave = performance.now();
  // the evaluation before the first step (a continued run has it already)
  if (m.step === 0 && !history.val.some(([st]) => st === 0)) {
    const v = evaluate();
    history.val.push([0, v]);
    post('eval', { step: 0, bpb: v });
  }
  while (m.step < m.steps && state !== 'stopping') {
    if (state === 'paused') { await yieldNow(); await new Promise((r) => setTimeout(r, 30)); continue; }
    trainSlice(every, pace);
    const step = m.step;
    if (failAt && step >= failAt) throw new Error(`test: the run was made to fail at step ${step} (?fail-at)`);
    atBoundaries(step, every);
    const now = performance.now();
    if (now - pace.lastPost > PROGRESS_MS || step === m.steps) {
      pace.lastPost = now;
      post('progress', { step, steps: m.steps, loss: m.loss, lr: m.lr, bytesPerSec: pace.rate,
        seconds: m.elapsed, stepMs: pace.stepMs, tailMs: tailMs(every), state, train: history.train.slice(-50),
        threads: probe?.was ?? atome.threads, probing: probe !== null && !probe.was });
    }
    if (now - lastSave > saveEveryMs && step < m.steps) saveCheckpoint('periodic');
    await yieldNow();
  }
}

// Steps up to the next boundary (train point, eval, sample, end, the test's
// failing step), within one slice; the pace follows the time they took.
function trainSlice(every, pace) {
  let k = Math.max(1, Math.floor(SLICE_MS / Math.max(pace.stepMs || 20, 0.5)));
  const step0 = m.step;
  const next = (n) => (n ? (Math.floor(step0 / n) + 1) * n : Infinity);
  const boundary = Math.min(next(TRAIN_POINT_EVERY), next(every.eval), next(every.sample), m.steps);
  k = Math.min(k, boundary - step0);
  if (probe) atome.setThreads(probe.plan[probe.i]);
  const t0 = performance.now();
  if (failAt && step0 < failAt && step0 + k >= failAt) k = failAt - step0;
  for (let i = 0; i < k; i++) {
    const r = m.trainSteps(1);
    history.acc[0] += r.loss;
    history.acc[1] += 1;
  }
  const dt = performance.now() - t0;
  if (probe) probeSlice(dt / k);
  else if (auto && (sinceProbeMs += dt) >= REPROBE_MS) {
    sinceProbeMs = 0;
    // `was`: the count the progress line goes on showing (a comparison every 4 s is not news)
    probe = { plan: comparePlan(atome.threads === 1 ? maxThreads : 1, atome.threads), i: 0, ms: new Map(), was: atome.threads };
  }
  pace.stepMs = pace.stepMs ? 0.7 * pace.stepMs + 0.3 * (dt / k) : dt / k;
  const inst = (pace.predicted * k) / (dt / 1000);
  pace.rate = pace.rate ? 0.8 * pace.rate + 0.2 * inst : inst;
}

// Auto threads: the first slices of a run (as any slice: about SLICE_MS,
// never across a boundary) alternate one thread and all of them, after one
// slice on each to warm up; the count with the lower median step time
// trains on (one thread on a tie).
// Again every REPROBE_MS of training: a slice on the other count and one on
// this (untimed), then the two alternate for PROBE_ROUNDS rounds. Under a
// CPU hog a fresh page's measure once took two threads (16 ms a step against
// 21 for one) that then trained 48 steps a second where one thread trained
// 79; the comparison costs about 2 % of a run where the counts differ by
// half. A run that starts on the count a minute measure chose compares the
// two again after its first FIRST_REPROBE_MS of training: under a hog the
// measure's short blocks can pick the slower count (one measure timed one
// thread at 21 ms a step and two at 17; its run on two trained 81 steps a
// second, the next run, fixed at one thread, 97), and a short budget cannot
// wait 4 s to find out.
const PROBE_ROUNDS = 4;
const REPROBE_MS = 4000;
const FIRST_REPROBE_MS = 1000;
let probe = null;                // { plan: thread counts slice by slice, i, ms: count -> [ms a step] }
let auto = false, sinceProbeMs = 0;
// one untimed slice on each count, then PROBE_ROUNDS rounds of both, the order alternating
const comparePlan = (a, b) => [a, b, ...Array.from({ length: PROBE_ROUNDS }, (_, i) => (i % 2 ? [b, a] : [a, b])).flat()];
const median = (a) => { const b = [...a].sort((x, y) => x - y); return b.length % 2 ? b[b.length >> 1] : (b[b.length / 2 - 1] + b[b.length / 2]) / 2; };
function probeSlice(msPerStep) {
  const n = probe.plan[probe.i];
  if (probe.i >= 2) probe.ms.set(n, [...(probe.ms.get(n) ?? []), msPerStep]);
  if (++probe.i < probe.plan.length) return;
  atome.setThreads(fasterCount(probe.ms));
  probe = null;
}
const fasterCount = (ms) => [...ms.entries()].map(([n, v]) => [n, median(v)]).reduce((a, b) => (b[1] < a[1] || b[1] === a[1] && b[0] < a[0] ? b : a))[0];

// The minute preset's measure of this device: a scratch model of the run's
// shape on the run's corpus (freed after), two warm-up steps on each count
// (the second one timed), then rounds of a block on each count in turn (the
// order alternating), each block as many steps (2 to 40) as fill its share
// of targetMs at the count's latest step time. The browser compiles the
// module's code quickly first and replaces it by optimised code while it
// runs (a step there took 58, 52, 37, then 20 ms in four blocks), so the
// rounds go on until the last SETTLE_ROUNDS blocks of every count agree
// within a tenth (a settled count is not timed again), at least
// PROBE_ROUNDS + 1 rounds and until maxMs at most; the step time of a count
// is the median of its last SETTLE_ROUNDS blocks. The faster count,
// and on it the costs a run has beside its steps: one validation chunk (the
// fastest of five passes), a sample, a save, the end of a run, and building
// the model with its data.
// Settled also means near the fastest block seen: while the optimised code
// is compiled, the compiler's threads take cores from the steps, and a few
// blocks can agree on a level twice the real one (under a CPU hog a fresh
// page's first 80 steps, in blocks of 4: 45, 45, 55, 29, 29, 13, 25, 19, 20,
// 21, 47, 29, 15, 11, 11, 11 ms a step; Node's wasm takes 9).
// And a level is only taken after MIN_WARM_STEPS steps in all: once, on a
// fresh page under a CPU hog, five blocks (17 steps) agreed on 44 ms a step
// before the optimised code arrived (the run then planned 320 steps where
// 1,300 fit); the code settled after about 80 steps in every probe.
const SETTLE_ROUNDS = 3;
const NEAR_FASTEST = 1.2;
const MIN_WARM_STEPS = 100;
const lastBlocks = (v) => v.slice(-SETTLE_ROUNDS);
const countSettled = (v) => v.length >= SETTLE_ROUNDS && Math.max(...lastBlocks(v)) <= 1.1 * Math.min(...lastBlocks(v)) &&
  median(lastBlocks(v)) <= NEAR_FASTEST * Math.min(...v);
// The measure's rounds (see above): each count's step time, block by block,
// until every count has settled or maxMs from t0 has passed.
async function timeCounts(sm, want, targetMs, maxMs, t0) {
  const blocks = new Map(want.map((n) => [n, []]));
  // a block's length in steps, count by count: about blockMs of its latest step time (2 to 40 steps)
  const blockMs = targetMs / ((PROBE_ROUNDS + 1) * want.length);
  const steps = (ms) => Math.max(2, Math.min(40, Math.round(blockMs / Math.max(ms, 0.1))));
  const k = new Map();
  for (const n of want) {
    atome.setThreads(n);
    sm.trainSteps(1);
    const t = performance.now();
    sm.trainSteps(1);
    k.set(n, steps(performance.now() - t));
  }
  // a count whose blocks have settled (after MIN_WARM_STEPS in all) is not timed again
  let trained = 2 * want.length;
  const done = (n) => trained >= MIN_WARM_STEPS && countSettled(blocks.get(n));
  for (let r = 0; r <= PROBE_ROUNDS || !want.every(done) && performance.now() - t0 < maxMs; r++) {
    for (const n of r % 2 ? want : [...want].reverse()) {
      if (r > PROBE_ROUNDS && done(n)) continue;
      atome.setThreads(n);
      const t = performance.now();
      sm.trainSteps(k.get(n));
      const ms = (performance.now() - t) / k.get(n);
      blocks.get(n).push(ms);
      trained += k.get(n);
      k.set(n, steps(ms));
    }
    await yieldNow();
  }
  return blocks;
}

async function measure({ settings: s, corpus, counts, targetMs = 1000, maxMs = 4 * targetMs }) {
  if (state === 'running' || state === 'paused' || state === 'stopping')
    throw Object.assign(new Error('a run is already in progress'), { refused: true });
  const t0 = performance.now();
  const want = [...new Set(counts.map((n) => Math.max(1, Math.min(maxThreads, n | 0))))];
  let sm = null;
  try {
    sm = atome.createModel(s.config, { ...modelOptions(s), steps: 1000000 });
    const { trainChunks, evalChunks } = sm.setData(corpus, { split: 0.9 });
    const setupMs = performance.now() - t0;
    const blocks = await timeCounts(sm, want, targetMs, maxMs, t0);
    const kept = new Map([...blocks].map(([n, v]) => [n, lastBlocks(v)]));
    const threads = fasterCount(kept);
    atome.setThreads(threads);
    const msPerStep = Object.fromEntries([...kept].map(([n, v]) => [n, median(v)]));
    const time = (fn) => { const t = performance.now(); fn(); return performance.now() - t; };
    const EVAL_CHUNKS = 32;
    // the first passes allocate the buffers and get the evaluation's own code optimised: not timed;
    // then the fastest of five (a pass is about 10 ms; one slow one decided seconds of a run's plan)
    for (let i = 0; i < 3; i++) sm.evaluate({ maxChunks: EVAL_CHUNKS, batch: 16 });
    const evalMsPerChunk = Math.min(...[0, 1, 2, 3, 4].map(() => time(() => sm.evaluate({ maxChunks: EVAL_CHUNKS, batch: 16 })))) /
      Math.min(EVAL_CHUNKS, evalChunks);
    const sampleMs = time(() => sm.generateBytes(SAMPLE.prompt, { n: SAMPLE.n, temperature: SAMPLE.temperature, topK: SAMPLE.topK, seed: SAMPLE.seed }));
    const saveMs = time(() => sm.saveCheckpoint({ calibration: false }));
    // the end of a run: the calibration sample and the packed models (atome family), the final checkpoint
    const exportMs = time(() => { if (sm.family === 'atome') { sm.exportAtome({ encoding: 1 }); sm.exportAtome({ encoding: 2 }); } sm.saveCheckpoint(); });
    return { threads, msPerStep, blocks: Object.fromEntries(blocks), setupMs, evalMsPerChunk, sampleMs, saveMs, exportMs, trainChunks,
      evalChunks, seconds: (performance.now() - t0) / 1000 };
  } finally { try { sm?.free(); } catch { /* freed */ } }
}

// A train point, an evaluation, a sample where the step falls on one.
function atBoundaries(step, every) {
  if (step % TRAIN_POINT_EVERY === 0 || step === m.steps) finishTrainPoint(step);
  if (every.eval && step % every.eval === 0 && step < m.steps) {
    const v = evaluate();
    history.val.push([step, v]);
    post('eval', { step, bpb: v });
  }
  if (every.sample && step % every.sample === 0) {
    const text = sample();
    history.samples.push([step, text]);
    post('sample', { step, text });
  }
}

// The end of a run: a validation pass over all held-out chunks, a sample of
// where it ended, the packed models (atome family) and the final checkpoint.
async function finish(stopped) {
  const step = m.step;
  finishTrainPoint(step);
  const v = evaluate(true);
  history.val = history.val.filter(([st]) => st !== step);
  history.val.push([step, v]);
  post('eval', { step, bpb: v, final: true });
  if (!history.samples.some(([st]) => st === step)) {
    const text = sample();
    history.samples.push([step, text]);
    post('sample', { step, text });
  }
  let atome01 = null, atome02 = null;
  if (m.family === 'atome') {
    atome01 = m.exportAtome({ encoding: 1 });
    atome02 = m.exportAtome({ encoding: 2 });
  }
  const ckpt = m.saveCheckpoint();
  state = 'done';
  const transfer = [ckpt.buffer, ...(atome01 ? [atome01.buffer, atome02.buffer] : [])];
  return new Transfer({ step, steps: m.steps, valBpb: v, atome01, atome02, ckpt, history: structuredClone(history), stopped,
    seconds: m.elapsed }, transfer);
}

let initDone = null;
async function init({ scalar, threads = 1 }) {
  simd = !scalar && simdSupported();
  // the threaded module is a SIMD build: no threads for the scalar fallback
  const t = simd && threadsAvailable() ? threads : 1;
  const url = new URL(simd ? '../build/wasm/atome.wasm' : '../build/wasm/atome-scalar.wasm', import.meta.url);
  const load = (n) => loadAtome(url, { onStderr: () => {}, threads: n,
    threadsSource: new URL('../build/wasm/atome-threads.wasm', import.meta.url) });
  let note = null;
  // a threaded module that does not start leaves one thread, said so
  initDone = load(t).catch((e) => { if (t <= 1) throw e; note = e.message; return load(1); }).then((a) => { atome = a; maxThreads = a.threads; });
  await initDone;
  return { simd, kernels: atome.kernels(), threads: atome.threads, isolated: threadsAvailable(), note,
    options: atome.trainOptions() };
}

function pause() {
  if (state === 'running') {
    state = 'paused';
    post('state', { state, step: m.step });
    saveCheckpoint('pause');
  }
  return true;
}

function resume() {
  if (state === 'paused') { state = 'running'; post('state', { state, step: m.step }); }
  return true;
}

// the loop sees it within a slice (also while paused) and finishes
function stop() {
  if (state === 'running' || state === 'paused') state = 'stopping';
  return true;
}

// Every request but init waits for the module; an error says the worker's
// state after it (a failed run's own error says idle already).
function loaded(fn) {
  return async (args, ctx) => {
    try {
      if (fn !== init) {
        if (!initDone) throw new Error('the module is not loaded (init first)');
        await initDone;
      }
      return await fn(args, ctx);
    } catch (e) {
      throw Object.assign(e instanceof Error ? e : new Error(String(e)), { state: e?.state ?? state });
    }
  };
}

serve(Object.fromEntries(Object.entries({ init, start, pause, resume, stop, measure }).map(([k, fn]) => [k, loaded(fn)])));
