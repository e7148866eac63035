/* cli/cmd_boards.c — `atome boards`: the table of boards (core/boards.def)
 * as a table for people, or as JSON (--json: the text of
 * fwimage's atm_fw_boards_json, which the wasm module's boards() gives the
 * page); with --cost, the cost model's features and estimate of a model on
 * a board (core/cost.c, the rule tools/mcu/fit-mcu-cost.mjs fits to).
 * Errors: one line, exit 2 for usage, 1 for an unreadable model. */
#include "cli.h"
#include "core/boards.h"
#include "core/cost.h"
#include "fwimage/fwimage.h"
#include <stdlib.h>
#include <string.h>

static int print_json(void) {
    const size_t need = atm_fw_boards_json(NULL, 0);
    char *t = (char *)malloc(need + 1);
    if (!t) return cli_err(CLI_RUNTIME, "boards: out of memory");
    atm_fw_boards_json(t, need + 1);
    puts(t);
    free(t);
    return CLI_OK;
}

static void print_table(void) {
    printf("%-11s %-18s %-14s %8s %10s %10s %10s  %s\n", "board", "label", "cpu", "clock", "flash", "RAM", "slot", "files");
    for (size_t i = 0; i < atm_board_count(); i++) {
        const atm_board *b = atm_board_at(i);
        char files[40] = "";
        for (int f = ATM_FW_FORMAT_ELF; f <= ATM_FW_FORMAT_UF2; f++)
            if (b->formats & (1u << f)) {
                strcat(files, files[0] ? " " : "");
                strcat(files, atm_fw_format_name(f));
            }
        printf("%-11s %-18s %-14s %5u MHz %10lu %10lu %10lu  %s\n", b->name, b->label, b->cpu, (unsigned)(b->clock_hz / 1000000u),
               (unsigned long)b->flash_bytes, (unsigned long)b->ram_bytes, (unsigned long)b->slot_bytes, files);
    }
}

/* --cost: {"board","encoding","window","offsets","features":[7],"estimate_insns_per_byte"}. */
static int print_cost(const char *model, const char *board, int64_t window, int offsets) {
    if (!model) return cli_err(CLI_USAGE, "boards: --cost needs --model FILE.atome");
    if (!board) return cli_err(CLI_USAGE, "boards: --cost needs --board B");
    if (!atm_board_find(board)) {
        char names[256];
        atm_fw_board_list(names, sizeof names, " or ");
        return cli_err(CLI_USAGE, "boards: unknown board '%s' (%s)", board, names);
    }
    uint8_t *blob = NULL;
    size_t blen = 0;
    atm_model m;
    int rc = cli_open_container("boards", model, &blob, &blen, &m);
    if (rc) return rc;
    const int w = window > 0 ? (int)window : (int)m.cfg.window;
    int64_t f[ATM_COST_FEATURES];
    atm_cost_features(&m.cfg, m.encoding, board, w, offsets, f);
    printf("{\"board\":\"%s\",\"encoding\":\"%s\",\"window\":%d,\"offsets\":%s,\"features\":[", board,
           cli_encoding_name(m.encoding), w, offsets ? "true" : "false");
    for (int k = 0; k < ATM_COST_FEATURES; k++) printf("%s%lld", k ? "," : "", (long long)f[k]);
    printf("],\"estimate_insns_per_byte\":%llu}\n",
           (unsigned long long)atm_cost_insns_per_byte(&m.cfg, m.encoding, board, w, offsets));
    free(blob);
    return CLI_OK;
}

int cmd_boards(int argc, char **argv) {
    int json = 0, cost = 0, offsets = 0;
    const char *model = NULL, *board = NULL;
    int64_t window = 0;
    cli_opt opts[] = {
        { "json",    OPT_FLAG, &json, 0, 0, 0, 0 },
        { "cost",    OPT_FLAG, &cost, 0, 0, 0, 0 },
        { "model",   OPT_STR,  &model, 0, 0, 0, 0 },
        { "board",   OPT_STR,  &board, 0, 0, 0, 0 },
        { "window",  OPT_INT,  &window, 1, ATM_MAX_WINDOW, 0, 0 },
        { "offsets", OPT_FLAG, &offsets, 0, 0, 0, 0 },
    };
    const int n = (int)(sizeof opts / sizeof opts[0]);
    int rc = cli_parse("boards", argc, argv, opts, n);
    if (rc) return rc;
    if (cost) return print_cost(model, board, window, offsets);
    if (model || board || cli_seen(opts, n, "window") || offsets)
        return cli_err(CLI_USAGE, "boards: --model, --board, --window and --offsets go with --cost");
    if (json) return print_json();
    print_table();
    return CLI_OK;
}
