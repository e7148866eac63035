/* cli/main.c — `atome` entry point: command dispatch and usage texts.
 * The commands live in cli/cmd_*.c; docs/cli.md documents every flag. */
#include "cli.h"
#include "core/boards.h"
#include "atome_version.h"   /* ATOME_VERSION: <build>/generated, cmake/version.cmake */
#include <string.h>

static const char *const USAGE_MAIN =
    "usage: atome <command> [flags]\n"
    "\n"
    "commands:\n"
    "  train     train a model on a byte corpus, write a checkpoint\n"
    "  eval      score a checkpoint or .atome model on held-out bytes (JSON line)\n"
    "  generate  sample bytes from a checkpoint or .atome model\n"
    "  params    parameter counts of a config (JSON)\n"
    "  match     baseline shapes within a tolerance of a parameter count (JSON)\n"
    "  init      write a randomly initialised checkpoint\n"
    "  import    reference legacy ATOME01/ATOME02 blob -> float checkpoint\n"
    "  strip     copy a checkpoint without its optimiser moments\n"
    "  export    atome checkpoint -> packed .atome model for the integer engine\n"
    "  convert   re-encode a .atome model (ATOME01 <-> ATOME02)\n"
    "  inspect   describe a .atome model, checkpoint or legacy blob (JSON)\n"
    "  bench     generation speed of a .atome model or checkpoint (JSON line)\n"
    "  firmware  .atome model -> Cortex-M firmware image (ELF) for QEMU or a board\n"
    "  header    .atome model -> C header (const byte array)\n"
    "  boards    the boards the firmware runs on (table or JSON)\n"
    "\n"
    "'atome <command> --help' lists a command's flags; 'atome --version' prints\n"
    "the version and the git commit of this build. Exit status: 0 ok,\n"
    "2 usage error, 1 runtime error (data, checkpoint, I/O).\n";

static const char *const USAGE_SHAPE =
    "shape overrides (family in brackets):\n"
    "  --d-model N         width of the residual stream [all]\n"
    "  --layers N          number of blocks [all]\n"
    "  --d-head N          q/k width [atome]; d_model/heads [vanilla]\n"
    "  --heads N           attention heads [vanilla]\n"
    "  --kernel N          causal conv length [atome]\n"
    "  --attn-top-k N      attention keeps the top N scores [atome]\n"
    "  --attn-window N     attention sees only the last N positions, as the\n"
    "                      engine at window N does (>= top-k; default: all) [atome]\n"
    "  --pathways LIST     comma list of conv,ssm,attn [atome]\n"
    "  --d-ff N            FFN width [vanilla, gssm]\n"
    "  --d-inner N         recurrent width [gssm]\n"
    "  --max-seq N         learned positions [vanilla]\n"
    "  --pos P             learned (fp32 table, default) | none (no positions) |\n"
    "                      ternary (table quantised with the weights) [vanilla]\n";

static const char *const USAGE_TRAIN =
    "usage: atome train --config NAME --data FILE --out CKPT [--steps 3000] [flags]\n"
    "       atome train --resume CKPT [--steps N] [--out CKPT] [flags]\n"
    "\n"
    "  --config NAME       atome-60k, atome-944k, vanilla-60k, vanilla-6k, gssm-60k,\n"
    "                      atome-tiny, vanilla-tiny, gssm-tiny\n"
    "  --quant Q           ternary | fp32 (default: ternary for atome, fp32 otherwise)\n"
    "  --data FILE         training corpus (bytes)\n"
    "  --max-bytes N       read only the first N bytes of each file\n"
    "  --split S           first floor(S*chunks) chunks train, the rest evaluate (0.9)\n"
    "  --valid FILE        evaluate on this file instead of a split\n"
    "  --steps N           total optimiser steps (3000; a resumed run continues to N)\n"
    "  --train-bytes N     byte budget: steps = ceil(N / (batch * seq)) (not with --steps)\n"
    "  --batch N           sequences per step (16)\n"
    "  --seq N             bytes per chunk; seq-1 predictions each (64)\n"
    "  --lr X              peak learning rate (3e-4, constant unless scheduled)\n"
    "  --seed N            uint32 seed of init and batch sampling (0)\n"
    "  --out CKPT          checkpoint written at the end (atomically)\n"
    "  --resume CKPT       continue a run bit-identically from a checkpoint\n"
    "  --warmup N          linear warmup steps (0)\n"
    "  --cosine            cosine decay to --lr-min after warmup\n"
    "  --lr-min X          cosine floor (0)\n"
    "  --clip X            clip the global gradient norm to X (0 = off)\n"
    "  --wd X              AdamW decoupled weight decay (0.01)\n"
    "  --beta1 X --beta2 X --eps X   AdamW constants (0.9, 0.999, 1e-8)\n"
    "  --fp-fraction F     two-stage: first round(F*steps) steps in fp32, then ternary\n"
    "  --lr2 X             constant lr of the ternary stage (default: --lr)\n"
    "  --log FILE          JSON-lines log (default CKPT.log.jsonl)\n"
    "  --log-every N       log every N steps (10)\n"
    "  --eval-every N      evaluate every N steps (0 = only at the end)\n"
    "  --ckpt-every N      also save CKPT every N steps (0 = only at the end)\n"
    "  --stop-at N         end this invocation after step N (schedules still span\n"
    "                      --steps); continue later with --resume\n"
    "  --quiet             no progress on stderr\n"
    "  --options-json      print the training option table (names, kinds, defaults,\n"
    "                      ranges, help) as JSON and exit\n"
    "  --threads N         trainer threads (ATOME_THREADS, else the cores, at most 4);\n"
    "                      the same bits on any count; not kept in the checkpoint\n"
    "  --teacher CKPT      distil: also learn the teacher checkpoint's next-byte\n"
    "                      distribution (any family, same vocabulary; atome students)\n"
    "  --distill-weight W  weight of the teacher's soft targets in the loss, (0, 1] (0.5)\n"
    "  --init CKPT         start from that checkpoint's weights (same shape as --config\n"
    "                      and its flags; --attn-window may differ): a new run, step 0,\n"
    "                      zero moments, this command's schedule and seed (fine-tuning)\n";

static const char *const USAGE_EVAL =
    "usage: atome eval --model MODEL --data FILE [--max-bytes N] [--split S] [--seq N]\n"
    "\n"
    "Prints one JSON line: nats_per_byte, bpb, ppl, bytes (predicted bytes), chunks, seq.\n"
    "  --model MODEL       float checkpoint (evaluated with its quantiser) or packed\n"
    "                      .atome model (integer engine)\n"
    "  --data FILE         bytes to score: all whole chunks of the file\n"
    "  --max-bytes N       read only the first N bytes\n"
    "  --split S           score only the held-out tail: chunks after floor(S*chunks)\n"
    "  --seq N             chunk length (default: the model's training seq)\n"
    "  --batch N           chunks per forward pass (16; does not change the result)\n"
    "  --window W          .atome only: attention window (default seq-1: the whole chunk)\n"
    "  --threads N         checkpoints: float evaluation threads (as train; same result)\n"
    "  --router            atome models: also the mean router weight of each pathway\n"
    "                      per layer (router: [[conv,ssm,attn],...]) and the mean\n"
    "                      router entropy in nats (router_entropy), over the scored bytes\n";

static const char *const USAGE_GENERATE =
    "usage: atome generate --model MODEL (--prompt TEXT | --prompt-hex HEX) [--n 256] [flags]\n"
    "\n"
    "Writes exactly the N new bytes to stdout (no prompt echo, no newline).\n"
    "MODEL is a float checkpoint or a packed .atome model (integer engine).\n"
    "  --prompt TEXT       prompt bytes (empty: a single newline byte)\n"
    "  --prompt-hex HEX    prompt as hex digits, e.g. 4f6e6365\n"
    "  --n N               bytes to generate (256; 0..1000000000000)\n"
    "  --temperature T     decimal 0..100; 0 = greedy argmax (default 0)\n"
    "  --top-k K           keep the K most likely bytes (0 = off)\n"
    "  --top-p P           decimal 0..1, nucleus mass (1 = off)\n"
    "  --seed S            uint32 sampler seed (1)\n"
    "  --window W          attention window in positions (default: training seq;\n"
    "                      .atome: the model's window)\n"
    "  --router-json FILE  .atome only: also write one JSON line per generated byte\n"
    "                      (router weights and entropy per layer, top 5 next bytes)\n"
    "Sampling is the fixed-point sampler of core/sampler.h on both paths.\n";

static const char *const USAGE_IMPORT =
    "usage: atome import --legacy FILE --config NAME --out CKPT [--seq N]\n"
    "\n"
    "Reads the reference implementation's headerless ATOME01/ATOME02 blob (the\n"
    "shape is not stored in it: --config names it, e.g. atome-944k) and writes a\n"
    "ternary float checkpoint whose weights re-quantise to exactly the stored\n"
    "trits and scales. --seq is the training chunk length recorded in it (256,\n"
    "the reference's 944K recipe); it is eval's and generate's default.\n";

static const char *const USAGE_STRIP =
    "usage: atome strip --model CKPT --out CKPT\n"
    "\n"
    "Copies a checkpoint without its AdamW moments (a third of the size). The\n"
    "copy evaluates and generates identically; resuming it restarts the moments.\n";

static const char *const USAGE_EXPORT =
    "usage: atome export --model CKPT --format atome01|atome02 --out FILE.atome [--calib FILE] [--window W]\n"
    "\n"
    "Packs a float atome checkpoint for the integer engine (docs/format.md):\n"
    "ternary tensors as trits with their scale, the rest in fixed point.\n"
    "Prints one JSON line (out, encoding, bytes, window, calibration).\n"
    "  --format F          atome01 (4 trits/byte) or atome02 (5 trits/byte)\n"
    "  --calib FILE        calibrate on this text (default: the statistics 'train'\n"
    "                      stored in the checkpoint; else its training data; else\n"
    "                      provable bounds only)\n"
    "  --window W          default attention window stored (default: training seq)\n"
    "  --quiet             no notes on stderr\n";

static const char *const USAGE_CONVERT =
    "usage: atome convert --model FILE.atome --format atome01|atome02 --out FILE.atome\n"
    "\n"
    "Re-encodes the trits of a .atome model; config, scales and fixed-point\n"
    "vectors are kept, so the engine computes the same logits. Prints one JSON line.\n";

static const char *const USAGE_INSPECT =
    "usage: atome inspect FILE [--window W]\n"
    "\n"
    "Prints one JSON object describing a .atome model (format, version, encoding,\n"
    "config, params, bytes per section, crc_ok, window, arena_bytes), a float\n"
    "checkpoint (format \"checkpoint\") or a reference legacy blob (format\n"
    "\"legacy\"). A damaged .atome file is still described as far as its header\n"
    "allows, then the error goes to stderr and the exit status is 1.\n"
    "  --window W          .atome: report arena_bytes at this window\n"
    "  --model FILE        the same as the positional FILE\n";

static const char *const USAGE_BENCH =
    "usage: atome bench --model MODEL [--prompt TEXT] [--n 1024] [--window 64] [--repeat 5]\n"
    "                   [--kernel auto|portable|lut|sse2|avx2|avx512]\n"
    "\n"
    "Greedy generation speed as one JSON line: a .atome model on the integer\n"
    "engine, a checkpoint on the float generator. Each repetition feeds the\n"
    "prompt (\"Once upon a time\" by default), then times N bytes.\n";

/* after "usage: atome firmware --model FILE.atome --board " and the boards */
static const char *const USAGE_FIRMWARE =
    " --out FILE [flags]\n"
    "\n"
    "Patches the model into the model slot of the board's prebuilt firmware\n"
    "(the template the mcu preset builds: tools/setup; found in\n"
    "$ATOME_MCU_BUILD/mcu, beside this binary in ../mcu/mcu, or build/mcu/mcu of\n"
    "the source tree). Prints one JSON line (max_window: the largest attention\n"
    "window the board's RAM holds).\n"
    "  --format F          elf (default), hex (Intel HEX: the micro:bit's file),\n"
    "                      bin (raw flash bytes from the flash base) or uf2 (the\n"
    "                      Pico's file for its RPI-RP2 drive; pico only)\n"
    "  --template ELF      another template\n"
    "  --encoding E        auto (default): the trit encoding the engine runs\n"
    "                      fastest from on the board (ATOME01 on each), when it\n"
    "                      fits the slot; keep: the model's own (encoding_choice\n"
    "                      in the JSON says which and why)\n"
    "Standalone image: with the generation flags of `atome generate` (--prompt or\n"
    "--prompt-hex, --n, --temperature, --top-k, --top-p, --seed, --window) the\n"
    "image carries its settings and prints the story on the board's serial port\n"
    "(115200 8N1; the Pico's also on its USB serial port) with no debugger;\n"
    "expect_hex is the known answer.\n"
    "  --loop              story k with seed S+k, one after another\n"
    "  --interactive       after each story, read the next prompt from the UART\n"
    "Without them the image reads its settings over semihosting (a debugger, or\n"
    "QEMU for the mps2-an385 and the microbit):\n"
    "  qemu-system-arm -M BOARD -nographic -semihosting-config \\\n"
    "    enable=on,target=native,arg=atome,arg=--prompt-hex,arg=HEX,arg=--n,arg=64 -kernel FILE.elf\n";

static const char *const USAGE_HEADER =
    "usage: atome header --model FILE.atome --out model.h [--name atome_model] [--board B] [settings]\n"
    "\n"
    "Writes the model as a C header: a static const uint8_t array (flash on a\n"
    "microcontroller), NAME_BYTES and NAME_CRC32, and a comment with its config.\n"
    "With the generation flags of `atome firmware` it also holds the settings\n"
    "block (NAME_settings, NAME_ARENA_BYTES) and writes atome_model.c beside it:\n"
    "a one-file example firmware main for your own board. --board B (one of\n"
    "'atome boards') checks the model against that board's RAM (its firmware\n"
    "template's arena): the settings' window must fit, and without --window the\n"
    "largest that fits is used when the model's default does not.\n";

static const char *const USAGE_PARAMS =
    "usage: atome params --config NAME [--quant Q] [shape overrides]\n"
    "\n"
    "Prints one JSON object: params, quant_params, fp32_params, family, config\n"
    "fields and a per-tensor table.\n";

static const char *const USAGE_MATCH =
    "usage: atome match --family vanilla|gssm --params N [--max-seq 64] [--tol 0.02]\n"
    "                   [--layers L] [--ffn-ratio M] [--heads 4] [--pos learned|none|ternary]\n"
    "\n"
    "Lists the shapes of the matcher's grid (docs/models.md) whose parameter count\n"
    "is within a relative --tol of N, by depth then closeness, as one JSON object:\n"
    "shapes, the closest of them (closest) and the library's single answer over\n"
    "the whole grid (library). --layers and --ffn-ratio\n"
    "(d_ff = M * d_model, 1..4) restrict the grid.\n";

static const char *const USAGE_INIT =
    "usage: atome init --config NAME --seed S --out CKPT [--quant Q] [--seq N] [shape overrides]\n"
    "\n"
    "Writes a checkpoint with weights initialised from the seed exactly as\n"
    "'atome train' would (default training options, step 0).\n";

static const char *const USAGE_BOARDS =
    "usage: atome boards [--json]\n"
    "       atome boards --cost --model FILE.atome --board B [--window W] [--offsets]\n"
    "\n"
    "The boards `atome firmware` and `atome header` know (core/boards.def): name,\n"
    "label, CPU, clock, flash, RAM, model slot and the files each takes, as a table,\n"
    "or with --json as one JSON object (the page's board cards read the same JSON\n"
    "from the wasm module). --cost prints the cost model's features and estimate\n"
    "of the model on the board at window W (default: the model's), --offsets as\n"
    "in an image holding the model's offset stream (docs/mcu-cost.md).\n";

/* "mps2-an385|microbit|pico" */
static void board_names(FILE *f) {
    for (size_t i = 0; i < atm_board_count(); i++) fprintf(f, "%s%s", i ? "|" : "", atm_board_at(i)->name);
}

void cli_usage(FILE *f, const char *cmd) {
    if (!cmd) { fputs(USAGE_MAIN, f); return; }
    if (strcmp(cmd, "train") == 0) { fputs(USAGE_TRAIN, f); fputc('\n', f); fputs(USAGE_SHAPE, f); }
    else if (strcmp(cmd, "eval") == 0) fputs(USAGE_EVAL, f);
    else if (strcmp(cmd, "generate") == 0) fputs(USAGE_GENERATE, f);
    else if (strcmp(cmd, "params") == 0) { fputs(USAGE_PARAMS, f); fputc('\n', f); fputs(USAGE_SHAPE, f); }
    else if (strcmp(cmd, "match") == 0) fputs(USAGE_MATCH, f);
    else if (strcmp(cmd, "import") == 0) fputs(USAGE_IMPORT, f);
    else if (strcmp(cmd, "strip") == 0) fputs(USAGE_STRIP, f);
    else if (strcmp(cmd, "export") == 0) fputs(USAGE_EXPORT, f);
    else if (strcmp(cmd, "convert") == 0) fputs(USAGE_CONVERT, f);
    else if (strcmp(cmd, "inspect") == 0) fputs(USAGE_INSPECT, f);
    else if (strcmp(cmd, "bench") == 0) fputs(USAGE_BENCH, f);
    else if (strcmp(cmd, "firmware") == 0) {
        fputs("usage: atome firmware --model FILE.atome --board ", f);
        board_names(f);
        fputs(USAGE_FIRMWARE, f);
    }
    else if (strcmp(cmd, "boards") == 0) fputs(USAGE_BOARDS, f);
    else if (strcmp(cmd, "header") == 0) fputs(USAGE_HEADER, f);
    else if (strcmp(cmd, "init") == 0) { fputs(USAGE_INIT, f); fputc('\n', f); fputs(USAGE_SHAPE, f); }
    else fputs(USAGE_MAIN, f);
}

static int wants_help(int argc, char **argv) {
    for (int i = 0; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return 1;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return cli_err(CLI_USAGE, "missing command (try 'atome --help')");
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        cli_usage(stdout, argc > 2 && strcmp(cmd, "help") == 0 ? argv[2] : NULL);
        return CLI_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("atome %s\n", ATOME_VERSION);
        return CLI_OK;
    }
    static const struct { const char *name; int (*fn)(int, char **); } CMDS[] = {
        { "train", cmd_train }, { "eval", cmd_eval }, { "generate", cmd_generate },
        { "params", cmd_params }, { "init", cmd_init }, { "import", cmd_import },
        { "match", cmd_match },
        { "strip", cmd_strip }, { "export", cmd_export }, { "convert", cmd_convert },
        { "inspect", cmd_inspect }, { "bench", cmd_bench },
        { "firmware", cmd_firmware }, { "header", cmd_header }, { "boards", cmd_boards },
    };
    for (size_t i = 0; i < sizeof CMDS / sizeof CMDS[0]; i++) {
        if (strcmp(cmd, CMDS[i].name) != 0) continue;
        if (wants_help(argc - 2, argv + 2)) { cli_usage(stdout, cmd); return CLI_OK; }
        return CMDS[i].fn(argc - 2, argv + 2);
    }
    return cli_err(CLI_USAGE, "unknown command '%s' (try 'atome --help')", cmd);
}
