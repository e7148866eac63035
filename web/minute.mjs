// web/minute.mjs — the `minute` preset's arithmetic (no DOM: Node's tests
// import it too): the schedule for a step count, the step count that fills a
// time budget, and the smoothed ETA every run shows.
//
// The schedule table is web/data/minute-schedule.json, written by
// `node tools/minute-schedule.mjs` from the sweep research/q2-minute-schedule.json
// (its committed results). A step count takes the row of the nearest swept
// count at or below it; below the first swept count the first row, above the
// last the last (the table stops at 8,000 steps).

export const SCHEDULE_URL = new URL('./data/minute-schedule.json', import.meta.url).href;
export const BUDGET = { default: 50, min: 5, max: 3600 };   // seconds (#train-budget)

// The table's row for a step count.
export function scheduleRow(table, steps) {
  const rows = table.rows;
  let row = rows[0];
  for (const r of rows) if (r.steps <= steps) row = r;
  return row;
}

// How long the measure times the steps (web/train-worker.mjs `measure`), ms:
// 3 % of the budget, within 0.5 to 1.5 s (more for a longer budget, where
// its figures decide more steps).
export const measureMs = (budgetS) => Math.min(1500, Math.max(500, 30 * budgetS));
// The longest the measure goes on waiting for the step time to settle (the
// browser's optimised code arriving), ms: 15 % of the budget, within the
// target above and 8 s (on a fresh page under a CPU hog the code took about
// 80 steps, 3 s, to settle).
export const measureMaxMs = (budgetS) => Math.min(8000, Math.max(measureMs(budgetS), 150 * budgetS));

// A number as the form shows it: 0.016 -> '1.6e-2', 0.0001 -> '1e-4', 1 -> '1'.
export const numText = (x) => (x >= 0.1 || x === 0 ? String(x) : x.toExponential());

// The fields of a minute run of `steps` steps (the form's ids, as text), and
// the corpus size it takes.
export function scheduleFields(table, steps) {
  const r = scheduleRow(table, steps);
  return {
    fields: { steps: String(steps), batch: String(r.batch), seq: String(r.seq), lr: numText(r.lr), warmup: String(Math.round(r.warmupFraction * steps)),
      cosine: table.cosine ? '1' : '0', 'lr-min': numText(r.lrMin), clip: numText(r.clip) },
    corpus: r.corpus, row: r,
  };
}

// "Auto" validation and samples: about six a run, on a multiple of 10 steps
// (web/train.mjs takes it from here).
export const autoEvery = (steps) => Math.max(10, Math.round(steps / 6 / 10) * 10);

// What a run of `steps` costs beside its steps, in seconds, from the
// device's measurement m (web/train-worker.mjs `measure`): the model built and
// its first save, a validation at step 0 and every `every` steps over the
// first valChunks held-out chunks, the final pass over all of them, a sample
// at each validation point and at the end, a save every saveEveryS, and the
// end (the packed models and the final checkpoint: exportMs).
export function overheadSeconds(m, steps, { valChunks = 1000, saveEveryS = 3, every = autoEvery(steps) } = {}) {
  const points = 1 + Math.floor((steps - 1) / every);
  const evalS = (points * Math.min(valChunks, m.evalChunks) + m.evalChunks) * m.evalMsPerChunk / 1000;
  const samples = Math.floor(steps / every) + (steps % every ? 1 : 0);
  const trainS = steps * m.msPerStep / 1000;
  return (m.setupMs + m.exportMs) / 1000 + evalS + samples * m.sampleMs / 1000 + (1 + trainS / saveEveryS) * m.saveMs / 1000;
}

// The page's share of the CPU while a run trains (its progress line, curves,
// saves), taken from the steps: a fraction of the step time, and a fixed
// reserve for the end of the run (the reply, the last save, the model into
// Generate). The share is larger when the run's threads take every core:
// the page's work then comes out of the training threads' time (on the
// 2-core test machine two-thread budget-50 runs trained 8 % and 24 % slower
// than their measure, docs/web.md; one-thread runs, with a core left for the
// page, within the 6 %).
export const PAGE_SHARE = 0.06, BUSY_PAGE_SHARE = 0.25, RESERVE_S = 0.6;
export const pageShare = (threads, cores) => (threads >= cores ? BUSY_PAGE_SHARE : PAGE_SHARE);

// The thread count a minute run takes from its measure (msPerStep: count ->
// ms a step): the lowest step time once the page's share is added (the
// smaller count on a tie).
export function runThreads(msPerStep, cores) {
  const eff = Object.entries(msPerStep).map(([n, ms]) => [Number(n), ms * (1 + pageShare(Number(n), cores))]);
  return eff.reduce((a, b) => (b[1] < a[1] || b[1] === a[1] && b[0] < a[0] ? b : a))[0];
}

// The seconds a run of `steps` takes on the device measured (m, as above,
// with msPerStep the step time on the thread count chosen, pageShare the
// page's share there: PAGE_SHARE if not given).
const perStepS = (m) => m.msPerStep * (1 + (m.pageShare ?? PAGE_SHARE)) / 1000;
export const runSeconds = (m, steps, opts = {}) => steps * perStepS(m) + overheadSeconds(m, steps, opts) + RESERVE_S;

// The step count that fills `leftS` seconds (the budget less the time already
// spent measuring): the largest multiple of 10 whose run fits, at least 10.
export function stepsForBudget(m, leftS, opts = {}) {
  const per = perStepS(m);
  let steps = Math.max(10, Math.floor((leftS - runSeconds(m, 0, opts)) / per / 10) * 10);
  while (runSeconds(m, steps + 10, opts) <= leftS) steps += 10;
  while (steps > 10 && runSeconds(m, steps, opts) > leftS) steps -= 10;
  return steps;
}

// The ETA shown under the progress bar: the remaining steps at the smoothed
// step time, smoothed again over time (the last figure counted down, then
// half of the way to a lower new figure or a quarter of the way to a higher
// one) and never more than a tenth above the figure shown before it, in
// whole seconds. next(raw seconds, now ms) -> seconds to show.
export function etaSmoother() {
  let shown = null, at = 0;
  return {
    next(raw, now) {
      if (!Number.isFinite(raw) || raw < 0) raw = 0;
      if (shown === null) { shown = Math.ceil(raw); at = now; return shown; }
      const aged = Math.max(0, shown - (now - at) / 1000);     // the last figure, counted down
      let v = Math.ceil(aged + (raw < aged ? 0.5 : 0.25) * (raw - aged));
      if (v > shown) v = Math.max(shown, Math.floor(shown * 1.1));
      shown = v;
      at = now;
      return shown;
    },
    get shown() { return shown; },
  };
}
