// wasm/atome.d.mts — TypeScript declarations of wasm/atome.mjs (the `atome`
// npm package's entry, packages/atome/). Every export and every member of the
// exported classes is declared here; tests/node/package.test.mjs checks both
// directions against the module and type-checks packages/atome/test/all-exports.ts
// with `tsc --strict`. The types URL, WebAssembly.* and Worker come from the
// standard "dom" lib (or the "webworker" lib).

/** A prompt: UTF-8 text or raw bytes. An empty prompt is one `\n`, as in the CLI. */
export type Prompt = string | Uint8Array;
/**
 * A sampling setting: decimal text parsed by the shared fixed-point parser
 * (`core/sampler.h`), a number (written as decimal text, no exponent), or
 * null/undefined for the default.
 */
export type Setting = string | number | null;

/** Where the module comes from: a URL (fetched; a `file:` URL is read in Node), its bytes, or a compiled module. */
export type WasmSource = URL | string | ArrayBuffer | ArrayBufferView | WebAssembly.Module;

export interface LoadOptions {
  /** The module's environment, e.g. `{ ATOME_KERNELS: 'ref' }` (the kernel set, as natively). */
  env?: Record<string, string>;
  /** Receives the module's stderr text (default: console.error). */
  onStderr?: (text: string) => void;
  /** Trainer threads; > 1 loads atome-threads.wasm on a shared memory where threadsAvailable(). */
  threads?: number;
  /** The threaded module (default threadsWasmUrl). */
  threadsSource?: WasmSource;
}

/** The raw exports of the instance (the C functions of wasm/atome_wasm*.c); for tests and tools. */
export interface AtomeExports {
  readonly memory: WebAssembly.Memory;
  readonly [name: string]: any;
}

/** Either kind of worker the trainer's threads run in (a Web Worker, or Node's worker_threads Worker). */
export interface ThreadWorker {
  terminate(): unknown;
}

export interface GenLimits {
  /** The largest n. */
  nMax: number;
  /** The n taken when none is given. */
  nDefault: number;
  /** The seed taken when none is given. */
  seedDefault: number;
  /** The largest attention window. */
  maxWindow: number;
}

/** Model shape and training options: CLI names ('d-model') or camelCase (dModel). */
export interface ModelOptions {
  dModel?: number; 'd-model'?: number;
  layers?: number;
  dHead?: number; 'd-head'?: number;
  heads?: number;
  kernel?: number;
  attnTopK?: number; topK?: number; 'attn-top-k'?: number;
  /** A comma list of conv, ssm, attn, or the bit mask (conv 1, ssm 2, attn 4). */
  pathways?: string | number;
  dFf?: number; 'd-ff'?: number;
  dInner?: number; 'd-inner'?: number;
  maxSeq?: number; 'max-seq'?: number;
  quant?: 'ternary' | 'fp32' | 0 | 1;
  lr?: number;
  lr2?: number;
  beta1?: number;
  beta2?: number;
  eps?: number;
  wd?: number;
  clip?: number;
  lrMin?: number; 'lr-min'?: number;
  warmup?: number;
  cosine?: boolean | number;
  fpFraction?: number; 'fp-fraction'?: number;
  steps?: number;
  batch?: number;
  seq?: number;
  seed?: number;
}

export interface DataOptions {
  /** A held-out corpus; without it the last (1 - split) of the chunks evaluate. */
  valid?: Uint8Array | null;
  split?: number;
  /** Keep only the first bytes of each corpus (0 = all), as `atome train --max-bytes`. */
  maxBytes?: number;
  trainName?: string;
  validName?: string;
}

export interface SamplingOptions {
  temperature?: Setting;
  topK?: Setting;
  topP?: Setting;
  /** uint32 sampler seed (default 1). */
  seed?: number;
  /** Attention window in positions; 0 = the default (training seq; a .atome model's default window). */
  window?: number;
}

export interface GenerateOptions extends SamplingOptions {
  /** Bytes to generate (default 64). */
  n?: number;
  /** The largest piece the iterator yields (default 16). */
  chunk?: number;
}

export interface PackedGenerateOptions extends GenerateOptions {
  /** generateSteps(): prompt bytes fed between two { fed, total } markers (default 1024). */
  promptSlice?: number;
}

export interface ExplainOptions extends PackedGenerateOptions {
  /** Feed the prompt in slices and pass generateSteps()' { fed, total } markers through. */
  steps?: boolean;
}

export interface PromptProgress {
  fed: number;
  total: number;
}

export interface ExplainedPiece {
  bytes: Uint8Array;
  /** lines[i]: the core/explain.h JSON line of bytes[i] (what `atome generate --router-json` writes). */
  lines: string[];
}

export interface TrainResult {
  /** Steps done by this call. */
  done: number;
  step: number;
  loss: number;
  lr: number;
}

export interface Evaluation {
  natsPerByte: number;
  bpb: number;
  ppl: number;
}

export interface ExportOptions {
  /** 1 = ATOME01, 2 = ATOME02. */
  encoding?: 1 | 2;
  /** 0 = the training seq. */
  window?: number;
  /** Text whose activation statistics calibrate the fixed-point formats. */
  calibration?: Uint8Array | null;
}

/** The JSON the board calls report (the CLI's fields; more may appear). */
export interface FirmwareInfo {
  board?: string;
  model_bytes?: number;
  capacity?: number;
  encoding?: string;
  encoding_choice?: string;
  arena_bytes?: number;
  window?: number;
  engine_bytes?: number;
  max_window?: number;
  fits_flash?: boolean;
  estimate_insns_per_byte?: number;
  estimate_bytes_per_s?: number;
  clock_hz?: number;
  [field: string]: unknown;
}

export interface StandaloneSettings {
  prompt?: Prompt | null;
  n?: number | string | null;
  temperature?: Setting;
  topK?: Setting;
  topP?: Setting;
  seed?: Setting;
  /** 0 = the CLI's choice. */
  window?: number;
  loop?: boolean;
  interactive?: boolean;
}

export type FirmwareFormat = 'elf' | 'hex' | 'bin' | 'uf2';

/** An Error from the C side; usage is true where the CLI would exit with status 2; fit is true (board files) when the
 * model does not fit the board (its slot, or its RAM at window 1). */
export interface AtomeError extends Error {
  usage?: boolean;
  fit?: boolean;
}

/** The module's own atome.wasm (the package's build/wasm/atome.wasm). */
export const defaultWasmUrl: URL;
/** The shared-memory build used when threads > 1. */
export const threadsWasmUrl: URL;
/** The packed models shipped beside the module, by name. */
export const modelUrls: Readonly<Record<'atome-944k' | 'atome-60k', URL>>;

/** A row of the training option table (core/train/options.h; `atome train --options-json`). */
export interface TrainOption {
  /** The CLI flag without "--" ("lr-min"). */
  name: string;
  /** The camelCase key ("lrMin"). */
  key: string;
  kind: 'int' | 'number' | 'flag' | 'enum';
  /** The default, or null with default_note. */
  default: number | string | null;
  default_note?: string;
  min?: number;
  max?: number;
  min_open?: boolean;
  max_open?: boolean;
  /** An enum's names. */
  values?: string[];
  /** The words after "must be" ("an integer in 1..1099511627776"). */
  want: string;
  /** model: stored in the checkpoint's options; run: a setting the front end keeps. */
  scope: 'model' | 'run';
  stored: string;
  help: string;
}

/** The trainer's stats by name (Model.stats()). */
export interface TrainerStats {
  step: number; steps: number; loss: number; lr: number; grad_norm: number; params: number;
  quant: 'ternary' | 'fp32'; stage: number; batch: number; seq: number; vocab: number;
  family: 'atome' | 'vanilla' | 'gssm'; elapsed_s: number;
}

/** The row named name (its CLI name or camelCase key). */
export function findOption(options: readonly TrainOption[], name: string): TrainOption | undefined;
/** A value as the text the table's grammar reads (numbers in JS's shortest form, booleans as 1/0). */
export function optionText(x: number | string | boolean): string;
/** The value of text for row opt as the C parser reads it, or throws (error.usage) with the CLI's words after label. */
export function checkOption(opt: TrainOption, text: string | number, label?: string): number | string | boolean;
/** Whether this context can run the threaded module (shared memory; in a browser, cross-origin isolation). */
export function threadsAvailable(): boolean;
/** Instantiates the module (default: defaultWasmUrl) and returns its API. */
export function loadAtome(source?: WasmSource, options?: LoadOptions): Promise<Atome>;
/** A file's kind by its magic: an ATOMECKP checkpoint, a packed .atome model, or neither. */
export function fileKind(bytes: Uint8Array): 'checkpoint' | 'atome' | 'unknown';
/** The Node command `generate` (argv without the command name's path); resolves to the exit status. */
export function main(argv: string[]): Promise<number>;

/** One row of the table of boards (`atome boards --json`). */
export interface BoardRow {
  name: string; label: string; cpu: string; chip: string; clock_hz: number;
  flash_base: string; flash_bytes: number; ram_bytes: number; slot_bytes: number;
  formats: Array<'elf' | 'hex' | 'bin' | 'uf2'>; drive: 'elf' | 'hex' | 'bin' | 'uf2';
  faster_encoding: 'ATOME01' | 'ATOME02'; uf2_family: string | null;
  semihosting: boolean; offset_stream: boolean; tables: boolean; emulator: string;
  cost: { count: 'insns_per_byte' | 'cycles_per_byte'; windows: number[] };
  machine: string | null; alias: string | null; uhex_board_id: string | null; hex_with: string | null;
  card_label: string; card_order: number;
}

export class Atome {
  constructor(ex: AtomeExports);
  readonly ex: AtomeExports;
  workers: ThreadWorker[];

  /** The trainer's threads in effect. */
  get threads(): number;
  /** Sets the threads (1 .. workers started + 1); returns the count in effect. */
  setThreads(n: number): number;
  /** Ends the worker instances. */
  close(): void;

  genLimits(): GenLimits;
  get memory(): WebAssembly.Memory;
  /** A view into wasm memory (valid until the memory grows). */
  u8(ptr: number, n: number): Uint8Array;
  /** A view into wasm memory (valid until the memory grows). */
  f32(ptr: number, n: number): Float32Array;
  /** The NUL-terminated string at ptr. */
  cstr(ptr: number): string;
  /** A NUL-terminated copy of bytes in a fresh block (atome_free it). */
  alloc(bytes: Prompt): number;
  /** Runs fn with a temporary copy of bytes. */
  withBytes<T>(bytes: Prompt, fn: (ptr: number) => T): T;
  /** Runs fn with the settings as C strings (0 for a null setting). */
  withSettings<T>(temperature: Setting | undefined, topK: Setting | undefined, topP: Setting | undefined,
    fn: (t: number, k: number, p: number) => T): T;
  /** Throws (error.usage) if generate would refuse these settings. */
  checkSettings(temperature?: Setting, topK?: Setting, topP?: Setting): void;

  /** The training option table (core/train/options.h), as the module exports it. */
  trainOptions(): TrainOption[];
  /** The trainer stats' indexes by name (the module's list). */
  statIndex(): Record<string, number>;

  /** The matmul kernel set in use ("wasm-simd" or "ref"). */
  kernels(): string;
  useKernels(name: string): void;

  /** A new float model from a named config ('atome-60k', 'atome-tiny', 'vanilla-60k', ...). */
  createModel(config: string, options?: ModelOptions): Model;
  /** A float model from checkpoint bytes (ATOMECKP, as `atome train` writes). */
  loadCheckpoint(bytes: Uint8Array): Model;
  /** A packed .atome model for the integer engine; window 0 = its default. */
  loadModel(bytes: Uint8Array, options?: { window?: number }): PackedModel;
  /** Either kind, by the file's magic. */
  open(bytes: Uint8Array, options?: { window?: number }): Model | PackedModel;

  fwCall(rc: number): number;
  fwOut(): Uint8Array;
  fwInfo(): FirmwareInfo;
  /** How model fits the board of template (a firmware template ELF). */
  firmwareFit(template: Uint8Array, model: Uint8Array, window?: number): FirmwareInfo;
  /** RAM the board must give the engine for model at window (0 = default), bytes. */
  firmwareRam(model: Uint8Array, window?: number): number;
  /** `atome firmware --model M --board B`. */
  firmware(template: Uint8Array, board: string, model: Uint8Array): { image: Uint8Array; info: FirmwareInfo };
  /** `atome firmware ... --prompt ... --n ... --format F`: a standalone image. */
  firmwareStandalone(template: Uint8Array, board: string, model: Uint8Array, settings: StandaloneSettings,
    format?: FirmwareFormat): { bytes: Uint8Array; info: FirmwareInfo };
  /** `atome header --model M [--name N]`. */
  header(model: Uint8Array, options?: { name?: string; source?: string; file?: string }): { text: Uint8Array; info: FirmwareInfo };
  /**
   * The micro:bit Universal Hex (`atome firmware --board microbit --format hex`) of the v1 and v2
   * single-board .hex files (v1 null: the v2's alone).
   */
  universalHex(v1: Uint8Array | null, v2: Uint8Array): Uint8Array;
  /** The project version and git commit the module was built from, as `atome --version` prints them after `atome `. */
  version(): string;
  /** The table of boards (core/boards.def), as `atome boards --json` prints it (docs/cli.md). */
  boards(): { boards: BoardRow[] };
  /** `atome convert`: 1 = ATOME01, 2 = ATOME02. */
  convert(model: Uint8Array, encoding: 1 | 2): Uint8Array;
}

/** What Model and PackedModel share: a C session in wasm memory (free() it). Not exported. */
declare class Session {
  readonly a: Atome;
  readonly ex: AtomeExports;
  /** The session handle (0 once freed). */
  h: number;

  free(): void;
  /** rc, or throws the session's error (error.usage when rc is -2). */
  check(rc: number): number;
}

/** A float model: one trainer session in wasm memory (free() it). */
export class Model extends Session {
  constructor(atome: Atome);
  configure(config: string, options: ModelOptions): void;
  setData(train: Uint8Array, options?: DataOptions): { trainChunks: number; evalChunks: number };
  /** A trainer stat by name: step, steps, loss, lr, grad_norm, params, quant, stage, batch, seq, vocab, family, elapsed_s. */
  stat(name: string): number;
  /** All trainer stats by name (quant and family as names). */
  stats(): TrainerStats;
  get step(): number;
  get steps(): number;
  get loss(): number;
  get lr(): number;
  get gradNorm(): number;
  get nParams(): number;
  get quant(): 'ternary' | 'fp32';
  get stage(): number;
  get batch(): number;
  get seq(): number;
  get vocab(): number;
  get family(): 'atome' | 'vanilla' | 'gssm';
  /** Seconds spent in trainSteps. */
  get elapsed(): number;

  /** Up to n more optimiser steps (never past steps). */
  trainSteps(n?: number): TrainResult;
  /** Held-out cross-entropy over the first maxChunks evaluation chunks (0 = all). */
  evaluate(options?: { maxChunks?: number; batch?: number }): Evaluation;
  /** The ATOMECKP bytes of `atome train`; calibration: false leaves out the activation statistics. */
  saveCheckpoint(options?: { calibration?: boolean }): Uint8Array;
  loadCheckpoint(bytes: Uint8Array): void;
  /** The weights as a packed .atome model (atome family). */
  exportAtome(options?: ExportOptions): Uint8Array;
  /** Float generation, as `atome generate --model CKPT`: n bytes in pieces. */
  generate(prompt: Prompt, options?: GenerateOptions): Generator<Uint8Array, void, undefined>;
  /** All n bytes at once; onBytes sees each piece as it comes. */
  generateBytes(prompt: Prompt, options?: GenerateOptions, onBytes?: ((piece: Uint8Array) => void) | null): Uint8Array;
}

/** A packed .atome model on the integer engine (the bytes of the CLI and the firmware); free() it. */
/** Options of PackedModel.score / scoreSteps. */
export interface ScoreOptions {
  /** Bytes scored between two yields (default 1024). */
  slice?: number;
  /** Keep each byte's record (rank, top bytes, router mix); default true. */
  records?: boolean;
}

/** What PackedModel.score returns. */
export interface ScoreResult {
  seq: number;
  window: number;
  layers: number;
  /** Int32 values per byte in recs. */
  stride: number;
  /** Each byte's cost in nats; NaN where not scored (the first byte of a chunk). */
  nats: Float64Array;
  /** [n x stride]: rank, n_top, top bytes, top p Q16, router Q15 and entropy Q16 per layer; null without records. */
  recs: Int32Array | null;
  chunks: number;
  scoredBytes: number;
  sumNats: number;
  /** Over the whole chunks only, as `atome eval` reports it; null below one chunk. */
  bpb: number | null;
}

export class PackedModel extends Session {
  constructor(atome: Atome);
  open(bytes: Uint8Array, window?: number): void;
  stat(i: number): number;
  get vocab(): number;
  get window(): number;
  get arenaBytes(): number;
  get dModel(): number;
  get layers(): number;
  /** The container's size in bytes. */
  get bytes(): number;
  /** The parameter count (as `atome params` gives it). */
  get nParams(): number;
  /** Values the file stores. */
  get storedValues(): number;
  get defaultWindow(): number;
  get trainSeq(): number;
  /** 1 = ATOME01, 2 = ATOME02. */
  get encoding(): number;

  /** Integer generation, as `atome generate --model FILE.atome`: n bytes in pieces. */
  generate(prompt: Prompt, options?: PackedGenerateOptions): Generator<Uint8Array, void, undefined>;
  /** generate() with { fed, total } markers while the prompt is read in slices. */
  generateSteps(prompt: Prompt, options?: PackedGenerateOptions): Generator<PromptProgress | Uint8Array, void, undefined>;
  /** Sets the window and the sampler; returns the prompt's bytes. */
  begin(prompt: Prompt, options?: SamplingOptions): Uint8Array;
  /** The generated pieces after begin() and a fed prompt. */
  pieces(options?: { n?: number; chunk?: number }): Generator<Uint8Array, void, undefined>;
  generateBytes(prompt: Prompt, options?: PackedGenerateOptions, onBytes?: ((piece: Uint8Array) => void) | null): Uint8Array;
  /** The bytes of generate() with one explanation line per byte. */
  generateExplained(prompt: Prompt, options?: ExplainOptions & { steps?: false }): Generator<ExplainedPiece, void, undefined>;
  generateExplained(prompt: Prompt, options: ExplainOptions): Generator<ExplainedPiece | PromptProgress, void, undefined>;
  /** Engine RAM at window w (0 = default), bytes. */
  /**
   * "Score your own text" as `atome eval --model M --data FILE` scores that file: chunks of eval's
   * seq bytes from a reset engine; yields progress after each slice and returns the scores.
   */
  scoreSteps(text: string | Uint8Array, options?: ScoreOptions): Generator<{ done: number; total: number }, ScoreResult, void>;
  /** scoreSteps run to its end. */
  score(text: string | Uint8Array, options?: ScoreOptions): ScoreResult;
  arenaFor(w?: number): number;
  /** Feeds one byte; returns the Q16 logits (value / 65536). */
  step(byte: number): Int32Array;
}

// Only what is marked export is exported (a declaration file otherwise exports
// every top-level declaration, Session included).
export {};
