#!/usr/bin/env node
// tools/models/model-card.mjs — measures a shipped model and writes its card
// (models/<name>.md) and a small copy of its training log
// (models/<name>.log.jsonl). Every figure on the card is measured here by
// the project's own tools, and the card prints the command beside it.
//
//   node tools/models/model-card.mjs --name NAME --role board|web --ckpt CKPT
//        --train-cmd "COMMAND" [--train-cmd "COMMAND" ...] --log LOG.jsonl
//        --batch N [--note TEXT] [--out-dir DIR] [--variants RESULTS.jsonl]
//        [--init-log LOG.jsonl]
//
// --init-log: the model was fine-tuned (`atome train --init`) from another
// run's checkpoint; LOG is that run's log. The card counts both phases
// (steps, bytes seen, hours, evaluations) and the log copy holds both,
// each line marked with its "phase".
// Reads models/NAME.atome (the shipped ATOME02 container) and CKPT (its
// float checkpoint); writes models/NAME.md and models/NAME.log.jsonl.
// The card ends with a machine-readable line (an HTML comment holding JSON)
// that tests/node/models.test.mjs checks the shipped files against.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const A = path.join(repo, 'build/native/atome');
const shared = process.env.ATOME_SHARED_DIR ?? path.join(repo, '../shared');
const TRAIN = path.join(shared, 'data/tinystories-train.txt');
const VALID = path.join(shared, 'data/tinystories-valid.txt');
const rel = (p) => path.relative(repo, p).replace(/^\.\.\/shared/, '../shared');

const args = { 'train-cmd': [] };
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i].replace(/^--/, '');
  if (k === 'train-cmd') args[k].push(process.argv[i + 1]);
  else args[k] = process.argv[i + 1];
}
for (const k of ['name', 'role', 'ckpt', 'log', 'batch']) if (!args[k]) { console.error(`model-card: --${k} is required`); process.exit(2); }
const name = args.name;
const atomeFile = path.join(repo, 'models', `${name}.atome`);
const tmp = mkdtempSync(path.join(tmpdir(), 'atome-card-'));

const run = (file, a, opts = {}) => execFileSync(file, a, { maxBuffer: 1 << 26, ...opts });
const json = (file, a) => JSON.parse(run(file, a).toString().trim().split('\n').at(-1));
const sha256 = (f) => createHash('sha256').update(readFileSync(f)).digest('hex');
const fmt = (x, d = 0) => Number(x).toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });

// ---- what the model is
const ins = json(A, ['inspect', atomeFile]);
const ckIns = json(A, ['inspect', args.ckpt]);
const c = ins.config;
const a1 = path.join(tmp, 'a1.atome');
run(A, ['convert', '--model', atomeFile, '--format', 'atome01', '--out', a1]);
const bytes01 = statSync(a1).size, bytes02 = statSync(atomeFile).size;

// ---- scores
const evalFloat = json(A, ['eval', '--model', args.ckpt, '--data', VALID]);
const evalEngine = json(A, ['eval', '--model', atomeFile, '--data', VALID]);
const evalEngineW32 = evalEngine.window === 32 ? evalEngine : json(A, ['eval', '--model', atomeFile, '--data', VALID, '--window', '32']);
// the whole chunk visible (window seq - 1): how a default export, and the float model, are scored
const fullWindow = evalEngine.seq - 1;
const evalEngineFull = evalEngine.window === fullWindow ? evalEngine
  : json(A, ['eval', '--model', atomeFile, '--data', VALID, '--window', String(fullWindow)]);
const slice = json(A, ['eval', '--model', atomeFile, '--data', VALID, '--max-bytes', '65536']);

// ---- speed
const benchNative = json(A, ['bench', '--model', atomeFile, '--n', '1024', '--repeat', '5']);
const node = process.execPath;
let best = Infinity;
for (let r = 0; r < 3; r++) {
  const t0 = process.hrtime.bigint();
  run(node, [path.join(repo, 'wasm/atome.mjs'), 'generate', '--model', atomeFile, '--prompt', 'Once upon a time', '--n', '3000',
    '--temperature', '0.8']);
  best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9);
}

// ---- samples: greedy, and two seeds with the page's default settings
const PROMPT = 'Once upon a time';
const gen = (extra) => run(A, ['generate', '--model', atomeFile, '--prompt', PROMPT, '--n', '500', ...extra]).toString('utf8');
const samples = [
  ['greedy', [], 'atome generate --model models/NAME.atome --prompt "Once upon a time" --n 500'],
  ['seed 1', ['--temperature', '0.8', '--top-k', '40', '--top-p', '0.95', '--seed', '1'],
    'atome generate --model models/NAME.atome --prompt "Once upon a time" --n 500 --temperature 0.8 --top-k 40 --top-p 0.95 --seed 1'],
  ['seed 2', ['--temperature', '0.8', '--top-k', '40', '--top-p', '0.95', '--seed', '2'],
    'atome generate --model models/NAME.atome --prompt "Once upon a time" --n 500 --temperature 0.8 --top-k 40 --top-p 0.95 --seed 2'],
].map(([label, f, cmd]) => ({ label, cmd: cmd.replace('NAME', name), text: PROMPT + gen(f) }));

// ---- training log, kept small: every log line at most 200, evaluations all
const readLog = (f) => readFileSync(f, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
function smallLog(log, phase) {
  const steps = log.filter((l) => l.loss !== undefined);
  const every = Math.max(1, Math.ceil(steps.length / 200));
  const small = log.filter((l) => l.loss === undefined || steps.indexOf(l) % every === 0 || l === steps.at(-1));
  return { every, lines: phase ? small.map((l) => ({ phase, ...l })) : small };
}
const log = readLog(args.log);
const preLog = args['init-log'] ? readLog(args['init-log']) : null;
const steps = log.filter((l) => l.loss !== undefined);
const preSteps = preLog ? preLog.filter((l) => l.loss !== undefined) : [];
const ft = smallLog(log, preLog ? 'finetune' : null), pre = preLog ? smallLog(preLog, 'pretrain') : { every: 1, lines: [] };
const every = Math.max(ft.every, pre.every);
const outDir = args['out-dir'] ? path.resolve(args['out-dir']) : path.join(repo, 'models');
writeFileSync(path.join(outDir, `${name}.log.jsonl`), [...pre.lines, ...ft.lines].map((l) => JSON.stringify(l)).join('\n') + '\n');
const evals = log.filter((l) => l.eval_bpb !== undefined);
const preEvals = preLog ? preLog.filter((l) => l.eval_bpb !== undefined) : [];
const last = steps.at(-1);
const hours = (last.elapsed_s + (preSteps.length ? preSteps.at(-1).elapsed_s : 0)) / 3600;

// bytes seen: steps x batch x seq bytes read, (seq - 1) predicted per sequence (both phases: same batch and seq)
const stepsDone = ckIns.step, stepsPre = preSteps.length ? preSteps.at(-1).step : 0;
const batch = Number(args.batch), seq = ckIns.train_seq;
const predicted = (stepsDone + stepsPre) * batch * (seq - 1);
const trainBytes = statSync(TRAIN).size;

const fits = (board) => {
  try {
    const out = path.join(tmp, `${board}.elf`);
    const j = json(A, ['firmware', '--model', atomeFile, '--board', board, '--out', out]);
    return j;
  } catch (e) { return { error: String(e.stderr ?? e.message).trim().split('\n')[0] }; }
};
const m3 = fits('mps2-an385'), m0 = fits('microbit');

const web = args.role === 'web';

// The variants tried (tools/harness/sweep-60k's results, copied beside the card).
function variantsTable() {
  if (!args.variants) return '';
  const rows = readFileSync(args.variants, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  const cell = (x) => (x === undefined || x === null ? '—' : Number(x).toFixed(4));
  const flags = (cmd) => cmd.replace(/^.*--seed 1 /, '').replace(/ --ckpt-every.*$/, '');
  return `## Variants tried

Every variant was trained by \`tools/harness/sweep-60k STEPS NAME\` with the shared flags \`atome train --config atome-60k
--quant ternary --data ${rel(TRAIN)} --valid ${rel(VALID)} --batch 16 --seq 64 --warmup 500 --clip 1.0 --seed 1\` plus
its own (a later flag wins); scored on all of \`tinystories-valid.txt\` as the float checkpoint and as the ATOME02 model
(integer engine; chunks of the training seq at the window the export stores, the whole chunk unless the variant trained
with \`--attn-window\`; also at window 32 and in 64-byte chunks). One seed each: differences of ~0.03 bpb at 20,000
steps are within what another seed gives. \`ft-*\` rows continue a finished run (\`--init\`, a new warmup and cosine). Raw results: [\`${path.basename(args.variants)}\`](${path.basename(args.variants)}).

| variant | steps | params | float bpb | engine bpb | window 32 | 64-byte chunks | its flags |
|---|---:|---:|---:|---:|---:|---:|---|
${rows.map((r) => `| ${r.variant.replace(/-s\d+$/, '')} | ${fmt(r.steps)} | ${fmt(r.params)} | ${cell(r.float_bpb)} | ${cell(r.engine_bpb)} | ` +
    `${cell(r.engine_bpb_w32)} | ${cell(r.engine_bpb_seq64 ?? (/--seq/.test(r.command) ? undefined : r.engine_bpb))} | \`${flags(r.command)}\` |`).join('\n')}

`;
}
const card = `# ${name}${web ? ' — the web-demo model' : ' — the board model'}

${web
    ? `The model the page offers first: an atome-family routed ternary block of ${fmt(ins.params)} parameters that
tells simple stories in the browser, natively, and on the mps2-an385 (Cortex-M3) firmware.`
    : `The model for boards with 16 KiB of RAM: an atome-family routed ternary block of ${fmt(ins.params)} parameters
that runs on the micro:bit v1 (Cortex-M0, 16 KiB RAM) at window 32, and everywhere else.`}
Trained by this project's own trainer (\`atome train\`) on \`tinystories-train.txt\` only; every figure below
was measured by the command printed beside it (this card is written by \`node tools/models/model-card.mjs\`,
called from \`tools/models/ship-models\`).

## Intended use and limits

- ${web ? 'Demonstrating a tiny ternary language model in the page: short children\'s stories from a prompt, and "why this byte" (router weights per layer).' : 'Running a language model on a microcontroller: stories on a serial terminal, the same bytes as the page and the CLI.'}
- It knows only the style and vocabulary of TinyStories (simple English stories for small children). It has
  no knowledge, makes grammar mistakes, loses the thread over a few sentences, and should not be used for
  anything where its output matters. Byte-level: it can produce any byte, including invalid UTF-8.
- Not evaluated for bias or safety; the corpus is synthetic text written by GPT-3.5 / GPT-4.

## Licence

The weights are derived from TinyStories (R. Eldan and Y. Li, 2023, arXiv:2305.07759), whose dataset card
gives the licence **CDLA-Sharing-1.0**; the model is shared under the same terms. Corpus copy and provenance:
\`../shared/data/README.md\`.

## Model

| | |
|---|---|
| family | atome (LayerNorm, conv / SSM / top-k attention mixed by a per-token router, one residual, no FFN) |
| shape | d_model ${c.d_model}, ${c.layers} layers, d_head ${c.d_head}, kernel ${c.kernel}, attention top-k ${c.attn_top_k}, pathways ${c.pathways}, vocabulary ${c.vocab} bytes |
| parameters | ${fmt(ins.params)} (${fmt(ins.trit_params)} ternary, ${fmt(ins.vector_params)} fixed-point vector values) |
| file | \`models/${name}.atome\`: ATOME02 ${fmt(bytes02)} bytes; ATOME01 ${fmt(bytes01)} bytes (\`atome convert --model models/${name}.atome --format atome01\`) |
| default window | ${ins.window} (training seq ${ins.train_seq}); engine RAM ${fmt(ins.arena_bytes_by_window['32'])} bytes at window 32, ${fmt(ins.arena_bytes_by_window['64'])} at 64 (\`atome inspect\`) |
| float checkpoint | \`models/${name}.ckpt\` (${fmt(statSync(args.ckpt).size)} bytes, moments stripped)${statSync(args.ckpt).size > 1 << 20 ? ': not committed (over 1 MiB); `tools/models/ship-models` writes it from the training run' : ''} |
| mps2-an385 firmware | ${m3.error ? `does not fit: ${m3.error}` : `fits: ${fmt(m3.model_bytes)} of ${fmt(m3.capacity)} slot bytes, largest window ${fmt(m3.max_window)}`} |
| micro:bit v1 firmware | ${m0.error ? `does not fit: ${m0.error}` : `fits: ${fmt(m0.model_bytes)} of ${fmt(m0.capacity)} slot bytes, RAM for windows up to ${fmt(m0.max_window)}`} |

## Training

Corpus: \`../shared/data/tinystories-train.txt\`, ${fmt(trainBytes)} bytes, sha256 \`${sha256(TRAIN)}\`. The valid
text was used only to report evaluations during training. ${preLog
    ? `${fmt(stepsPre)} steps of ${batch} × ${seq} bytes, then ${fmt(stepsDone)} more fine-tuning from that checkpoint (\`--init\`; the second command below):`
    : `${fmt(stepsDone)} steps of ${batch} × ${seq} bytes:`}
${fmt(predicted)} predicted bytes seen (steps × batch × (seq − 1)), ${(predicted / trainBytes).toFixed(1)} passes over the corpus,
${fmt(hours, 2)} h of training on one core of the 2-core test machine.

\`\`\`sh
${args['train-cmd'].join('\n')}
\`\`\`
${args.note ? `\n${args.note}\n` : ''}
Evaluations during training (float, all of \`tinystories-valid.txt\`): ${preLog ? `pretraining ${preEvals.map((e) => `step ${fmt(e.step)} ${e.eval_bpb.toFixed(3)}`).join(', ')}; fine-tuning ` : ''}${evals.map((e) => `step ${fmt(e.step)} ${e.eval_bpb.toFixed(3)}`).join(', ')} bpb.
Training log: [\`${name}.log.jsonl\`](${name}.log.jsonl) (${preLog ? `one log line in ${pre.every} of pretraining and one in ${ft.every} of fine-tuning, each marked with its "phase",` : every === 1 ? 'every log line' : `one log line in ${every}`} and every evaluation).

## Scores on \`tinystories-valid.txt\` (${fmt(evalEngine.bytes)} predicted bytes)

| model | bpb | nats/byte | command |
|---|---:|---:|---|
| float checkpoint | ${evalFloat.bpb.toFixed(4)} | ${evalFloat.nats_per_byte.toFixed(4)} | \`atome eval --model models/${name}.ckpt --data ${rel(VALID)}\` |
| integer engine (the \`.atome\`, window ${evalEngine.window}: ${evalEngine.window === ins.window ? 'the one it stores' : `the whole chunk; it stores ${ins.window}`}) | **${evalEngine.bpb.toFixed(4)}** | ${evalEngine.nats_per_byte.toFixed(4)} | \`atome eval --model models/${name}.atome --data ${rel(VALID)}\` |
${evalEngine.window !== 32 ? `| integer engine, window 32 | ${evalEngineW32.bpb.toFixed(4)} | ${evalEngineW32.nats_per_byte.toFixed(4)} | \`… --window 32\` |
` : ''}${evalEngine.window !== fullWindow ? `| integer engine, window ${fullWindow} (the whole chunk, as the float model) | ${evalEngineFull.bpb.toFixed(4)} | ${evalEngineFull.nats_per_byte.toFixed(4)} | \`… --window ${fullWindow}\` |
` : ''}| integer engine, first 64 KiB | ${slice.bpb.toFixed(4)} | ${slice.nats_per_byte.toFixed(4)} | \`… --max-bytes 65536\` (the figure \`tests/node/models.test.mjs\` re-scores) |

## Speed

| where | figure | command |
|---|---|---|
| native, integer engine (${benchNative.kernel}) | ${fmt(benchNative.bytes_per_s)} generated bytes/s (best of 5 × 1,024, greedy) | \`atome bench --model models/${name}.atome\` |
| Node, wasm SIMD, whole process | ${best.toFixed(2)} s for 3,000 bytes, start-up included (best of 3) | \`node wasm/atome.mjs generate --model models/${name}.atome --prompt "Once upon a time" --n 3000 --temperature 0.8\` |

(The page shows its own bytes/s under the text; \`node tools/bench/bench-web-generate.mjs\` measures it in Chromium.)

${variantsTable()}## Samples

${samples.map((s) => `**${s.label}** — \`${s.cmd}\`\n\n\`\`\`text\n${s.text.replace(/```/g, '` ` `')}\n\`\`\``).join('\n\n')}

<!-- card: ${JSON.stringify({ name, params: ins.params, bytes_atome02: bytes02, bytes_atome01: bytes01,
  engine_bpb: evalEngine.bpb, float_bpb: evalFloat.bpb, engine_bpb_w32: evalEngineW32.bpb, engine_window: evalEngine.window,
  engine_bpb_full_chunk: evalEngineFull.bpb, slice_65536_bpb: slice.bpb,
  sha256_atome: sha256(atomeFile) }) } -->
`;
writeFileSync(path.join(outDir, `${name}.md`), card);
// models/README.md indexes the cards: this model's row there takes the card's figures
{
  const idx = path.join(outDir, 'README.md');
  if (existsSync(idx)) {
    const rowStart = `| \`${name}.atome\` |`;
    const lines = readFileSync(idx, 'utf8').split('\n');
    const i = lines.findIndex((l) => l.startsWith(rowStart));
    if (i < 0) console.error(`model-card: models/README.md has no row for ${name}.atome; add one starting with ${rowStart}`);
    else {
      const cells = lines[i].split('|');   // ['', file, role, params, bytes, bpb, card, '']
      cells[3] = ` ${fmt(ins.params)} `;
      cells[4] = ` ${fmt(bytes02)} `;
      cells[5] = ` ${evalEngine.bpb.toFixed(4)} `;
      lines[i] = cells.join('|');
      writeFileSync(idx, lines.join('\n'));
    }
  }
}
rmSync(tmp, { recursive: true, force: true });
console.log(JSON.stringify({ name, engine_bpb: evalEngine.bpb, float_bpb: evalFloat.bpb, slice_65536_bpb: slice.bpb,
  native_bytes_per_s: benchNative.bytes_per_s, node_3000_s: best }));
