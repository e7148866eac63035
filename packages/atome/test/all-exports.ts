// packages/atome/test/all-exports.ts — every export of the `atome` package in
// use, for `tsc --strict --noEmit --noUnusedLocals` against the installed
// package's declarations (tests/node/package.test.mjs installs the tarball
// beside a copy of this file). It is type-checked, not run: the board calls
// need a firmware template from build/mcu.
import {
  Atome, Model, PackedModel, checkOption, defaultWasmUrl, fileKind, findOption, loadAtome, main, modelUrls, optionText,
  threadsAvailable, threadsWasmUrl,
} from 'atome';
import type {
  AtomeError, AtomeExports, Evaluation, ExplainedPiece, FirmwareInfo, GenLimits, LoadOptions, ModelOptions,
  PromptProgress, ScoreOptions, ScoreResult, Setting, TrainOption, TrainResult, TrainerStats, WasmSource,
} from 'atome';

async function bytesOf(url: URL): Promise<Uint8Array> {
  return new Uint8Array(await (await fetch(url)).arrayBuffer());
}

function train(atome: Atome, corpus: Uint8Array): Model {
  const options: ModelOptions = { seed: 1, steps: 4, lr: 3e-3, batch: 4, seq: 32, dModel: 32, 'attn-top-k': 4, pathways: 'conv,attn' };
  const m: Model = atome.createModel('atome-tiny', options);
  const { trainChunks, evalChunks }: { trainChunks: number; evalChunks: number } =
    m.setData(corpus, { split: 0.9, maxBytes: 0, trainName: 'a.txt', validName: 'b.txt', valid: null });
  let last: TrainResult = { done: 0, step: m.step, loss: m.loss, lr: m.lr };
  while (m.step < m.steps) last = m.trainSteps(2);
  const ev: Evaluation = m.evaluate({ maxChunks: 2, batch: 4 });
  const quant: 'ternary' | 'fp32' = m.quant;
  const family: 'atome' | 'vanilla' | 'gssm' = m.family;
  const numbers: number[] = [trainChunks, evalChunks, last.done, last.loss, m.gradNorm, m.nParams, m.stage, m.batch,
    m.seq, m.vocab, m.elapsed, m.stat('loss'), m.check(0), m.h, ev.natsPerByte, ev.bpb, ev.ppl];
  const stats: TrainerStats = m.stats();
  const rows: TrainOption[] = atome.trainOptions();
  const steps: TrainOption | undefined = findOption(rows, 'steps');
  if (steps) console.log(checkOption(steps, optionText(3000), 'Steps'), stats.grad_norm, atome.statIndex().loss);
  console.log(quant, family, numbers.join(' '));
  const again: Model = atome.loadCheckpoint(m.saveCheckpoint({ calibration: false }));
  again.loadCheckpoint(m.saveCheckpoint());
  again.configure('atome-tiny', { quant: 'fp32', cosine: true });
  again.free();
  return m;
}

function generate(m: Model, p: PackedModel): void {
  const t: Setting = '0.8';
  for (const piece of m.generate('Once', { n: 32, temperature: t, topK: 40, topP: null, seed: 7, window: 0, chunk: 8 }))
    console.log(piece.length);
  const all: Uint8Array = m.generateBytes(new Uint8Array([0x4f]), { n: 8 }, (piece: Uint8Array) => console.log(piece));
  const packed: Uint8Array = p.generateBytes('Once', { n: 16, temperature: 0.5, topP: '0.9' }, null);
  for (const piece of p.generate('', { n: 4, window: 16 })) console.log(piece);
  for (const x of p.generateSteps('Once upon', { n: 4, promptSlice: 4 }))
    console.log(x instanceof Uint8Array ? x.length : `${x.fed}/${x.total}`);
  for (const e of p.generateExplained('Once', { n: 2 })) {
    const piece: ExplainedPiece = e;
    console.log(piece.bytes.length, piece.lines.join('\n'));
  }
  for (const e of p.generateExplained('Once', { n: 2, steps: true })) {
    const marker: ExplainedPiece | PromptProgress = e;
    console.log('bytes' in marker ? marker.lines.length : marker.fed);
  }
  const prompt: Uint8Array = p.begin('Once', { temperature: 0, seed: 1, window: 0 });
  p.ex.atome_engine_feed;   // raw exports stay reachable for tools
  for (const piece of p.pieces({ n: 4, chunk: 2 })) console.log(prompt.length, piece.length);
  const logits: Int32Array = p.step(0x20);
  const so: ScoreOptions = { slice: 64, records: false };
  const scored: ScoreResult = p.score('Once upon a time there was a cat.', so);
  for (const prog of p.scoreSteps(new Uint8Array(100))) console.log(prog.done, prog.total);
  console.log(scored.bpb ?? 0, scored.nats.length, scored.recs?.length ?? 0, scored.stride);
  console.log(all.length, packed.length, logits[0], p.arenaFor(32), p.stat(0), p.check(0), p.h);
  console.log(p.vocab, p.window, p.arenaBytes, p.dModel, p.layers, p.bytes, p.nParams, p.storedValues,
    p.defaultWindow, p.trainSeq, p.encoding, p.a === m.a);
}

function boards(atome: Atome, template: Uint8Array, templateV2: Uint8Array, model: Uint8Array): void {
  const fit: FirmwareInfo = atome.firmwareFit(template, model, 32);
  const ram: number = atome.firmwareRam(model, 0);
  const { image, info } = atome.firmware(template, 'microbit-v1', model);
  const standalone = atome.firmwareStandalone(template, 'microbit-v1', model,
    { prompt: 'Once', n: 64, temperature: '0.8', topK: 40, topP: null, seed: 7, window: 0, loop: false, interactive: false }, 'hex');
  const header: { text: Uint8Array; info: FirmwareInfo } = atome.header(model, { name: 'story', source: 'story.atome', file: 'story.h' });
  const other: Uint8Array = atome.convert(model, 1);
  const v2 = atome.firmwareStandalone(templateV2, 'microbit-v2', model, { prompt: 'Once', n: 64 }, 'hex');
  const both: Uint8Array = atome.universalHex(standalone.bytes, v2.bytes);
  const v2only: Uint8Array = atome.universalHex(null, v2.bytes);
  const raw: number = atome.fwCall(both.length + v2only.length);
  console.log(fit.max_window, fit.fits_flash, ram, image.length, info.board, standalone.bytes.length,
    standalone.info['expect_hex'], header.text.length, other.length, raw, atome.fwOut().length, atome.fwInfo().capacity);
}

function memory(atome: Atome): void {
  const limits: GenLimits = atome.genLimits();
  const p: number = atome.alloc('text');
  const view: Uint8Array = atome.u8(p, 4);
  const floats: Float32Array = atome.f32(0, 0);
  const text: string = atome.cstr(p);
  atome.ex.atome_free(p);
  const n: number = atome.withBytes(new Uint8Array(3), (q: number) => q + 1);
  const s: string = atome.withSettings('0.8', 40, null, (t: number, k: number, pp: number) => `${t} ${k} ${pp}`);
  const ex: AtomeExports = atome.ex;
  const mem: WebAssembly.Memory = atome.memory;
  console.log(limits.nMax, limits.nDefault, limits.seedDefault, limits.maxWindow, view.length, floats.length, text, n, s,
    ex.memory === mem);
  try {
    atome.checkSettings('2.5', '0', '1');
    atome.useKernels('ref');
  } catch (e) {
    const err = e as AtomeError;
    console.log(err.message, err.usage === true);
  }
  console.log(atome.kernels(), atome.threads, atome.setThreads(2), atome.workers.length);
}

export async function allExports(template: Uint8Array, templateV2: Uint8Array, corpus: Uint8Array): Promise<number> {
  const options: LoadOptions = { env: { ATOME_KERNELS: 'ref' }, onStderr: (t: string) => console.log(t), threads: 2,
    threadsSource: threadsWasmUrl };
  const source: WasmSource = defaultWasmUrl;
  const atome: Atome = await loadAtome(source, threadsAvailable() ? options : {});
  memory(atome);
  const blob: Uint8Array = await bytesOf(modelUrls['atome-60k']);
  const kind: 'checkpoint' | 'atome' | 'unknown' = fileKind(blob);
  const opened: Model | PackedModel = atome.open(blob, { window: 32 });
  const p: PackedModel = opened instanceof PackedModel ? opened : atome.loadModel(blob, { window: 0 });
  p.open(blob, 16);
  const m: Model = train(atome, corpus);
  generate(m, p);
  boards(atome, template, templateV2, m.exportAtome({ encoding: 2, window: 0, calibration: corpus }));
  boards(atome, template, templateV2, await bytesOf(modelUrls['atome-944k']));
  const own: PackedModel = new PackedModel(atome);
  const fresh: Model = new Model(atome);
  const other: Atome = new Atome(atome.ex);
  console.log(kind, other.kernels());
  own.free(); fresh.free(); m.free(); p.free();
  atome.close();
  return main(['generate', '--help']);
}
