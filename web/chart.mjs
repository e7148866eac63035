// web/chart.mjs — the training panel's loss curves (uPlot: train points,
// one per 10 steps, and validation points) and its samples list.
import uPlot from '../vendor/uplot/uPlot.esm.js';
import { $, fmt, storyBreaks } from './ui.mjs';

// The chart: its points, the uPlot (made on the first run shown), a pending
// frame; steps() is the length of the run shown (the x axis ends there).
export function initChart(steps) {
  const c = { train: [], val: [], plot: null, raf: 0 };
  return {
    state: c,
    reset: (history) => resetChart(c, history, steps),
    addTrain: (p) => { const t = c.train; if (!t.length || p[0] > t.at(-1)[0]) t.push(p); },
    addVal: (p) => { c.val = c.val.filter(([s]) => s !== p[0]); c.val.push(p); c.val.sort((a, b) => a[0] - b[0]); },
    lastVal: () => c.val.at(-1),
    redraw: () => redrawChart(c),
  };
}

function resetChart(c, history, steps) {
  c.train = [...(history?.train ?? [])];
  c.val = [...(history?.val ?? [])];
  if (!c.plot) {
    const el = $('chart');
    el.hidden = false;
    c.plot = new uPlot({
      width: Math.max(280, el.clientWidth), height: 260, legend: { live: false },
      scales: { x: { time: false, range: (u, lo, hi) => [0, Math.max(hi, steps() ?? hi, 1)] } },
      axes: [{ label: 'step' }, { label: 'bits per byte', size: 60 }],
      series: [{ label: 'step' },
        { label: 'train (mean of 10 steps)', stroke: '#3b6fd8', width: 1.5, points: { show: false } },
        { label: 'validation (held-out text)', stroke: '#d9480f', width: 1.5, dash: [5, 4], points: { show: true, size: 7 },
          spanGaps: true }],
    }, [[], [], []], el);
    new ResizeObserver(() => c.plot.setSize({ width: Math.max(280, el.clientWidth), height: 260 })).observe(el);
  }
  redrawChart(c);
}

function redrawChart(c) {
  if (c.raf) return;
  c.raf = requestAnimationFrame(() => {
    c.raf = 0;
    const xs = [...new Set([...c.train.map((p) => p[0]), ...c.val.map((p) => p[0])])].sort((a, b) => a - b);
    const tm = new Map(c.train), vm = new Map(c.val);
    c.plot.setData([xs, xs.map((x) => tm.get(x) ?? null), xs.map((x) => vm.get(x) ?? null)]);
  });
}

// A sample continuation, newest first, eight at most.
export function addSample(step, text) {
  const d = document.createElement('div');
  d.className = 'sample';
  const b = document.createElement('strong');
  b.textContent = `step ${fmt(step)}: `;
  const t = document.createElement('span');
  const sb = storyBreaks(t);       // <|endoftext|> as a story break
  sb.append(text);
  sb.flush({ cut: true });           // a sample ending in "<|en" ends with a story break
  d.append(b, t);
  $('samples').prepend(d);
  while ($('samples').children.length > 8) $('samples').lastChild.remove();
}
