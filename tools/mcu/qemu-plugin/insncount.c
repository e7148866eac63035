/* tools/mcu/qemu-plugin/insncount.c — a QEMU TCG plugin that counts every guest
 * instruction executed (emulated instructions, not cycles: QEMU models no
 * pipeline, wait states or flash latency).
 *
 * Contract.
 *  - Built for QEMU's plugin API version 1 (QEMU 7.2, Debian 12). Debian
 *    ships qemu-system-arm with plugin support but without the plugin
 *    header, so the few API prototypes used are declared here by hand, with
 *    the types of QEMU's include/qemu/qemu-plugin.h of that version.
 *  - At translation time every instruction of every translation block gets
 *    an inline "add 1 to a 64-bit counter" (QEMU_PLUGIN_INLINE_ADD_U64): the
 *    count is exact even when a block is left early (a fault, a semihosting
 *    trap) and costs no helper call.
 *  - At exit (the guest's semihosting exit included) the total is written as
 *    one decimal line to the file given by the plugin argument out=PATH, or
 *    to stderr without it.
 *  - One vCPU (the Cortex-M boards have one), so one shared counter.
 *  - Profile (tools/bench-mcu --profile): with map=PATH (lines "ADDR SIZE
 *    NAME", hexadecimal, as printed by `arm-none-eabi-nm -S`; other lines
 *    are skipped) and prof=PATH, every instruction also adds 1 to the
 *    counter of the symbol whose [ADDR, ADDR + SIZE) holds its address
 *    (bit 0, the Thumb bit, cleared; the smallest such symbol), or of
 *    "(other)" when none does. At exit prof=PATH gets one line "COUNT NAME"
 *    per symbol that ran, the largest first; the counts sum to the total.
 *
 * Build: tools/CMakeLists.txt (native preset) makes libinsncount.so; by
 * hand: gcc -O2 -shared -fPIC -fvisibility=hidden -o libinsncount.so insncount.c
 * Use:   qemu-system-arm ... -plugin PATH/libinsncount.so,out=count.txt
 *        (tools/mcu/run-qemu --count FILE does this). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 = 0 };

/* From QEMU 7.2 include/qemu/qemu-plugin.h (API version 1). */
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
                                           void (*cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb));
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn *insn, enum qemu_plugin_op op,
                                                void *ptr, uint64_t imm);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, void (*cb)(qemu_plugin_id_t id, void *userdata),
                                    void *userdata);

#define EXPORT __attribute__((visibility("default")))

EXPORT int qemu_plugin_version = 1;

static uint64_t insn_count;
static char out_path[4096];
static char prof_path[4096];

typedef struct { uint64_t lo, hi; char name[96]; uint64_t count; } sym_t;
static sym_t *syms;      /* syms[0] is "(other)" */
static size_t nsyms;

static int load_map(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) { fprintf(stderr, "insncount: cannot read %s\n", path); return -1; }
    size_t cap = 256;
    syms = calloc(cap, sizeof *syms);
    if (!syms) { fclose(f); return -1; }
    strcpy(syms[0].name, "(other)");
    nsyms = 1;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        unsigned long long a, sz; char type; char name[96];
        if (sscanf(line, "%llx %llx %c %95s", &a, &sz, &type, name) != 4 || sz == 0) continue;
        if (nsyms == cap) {
            sym_t *n = realloc(syms, 2 * cap * sizeof *syms);
            if (!n) { fclose(f); return -1; }
            syms = n; cap *= 2;
        }
        sym_t *s = &syms[nsyms++];
        s->lo = a & ~1ull; s->hi = s->lo + sz; s->count = 0;
        strcpy(s->name, name);
    }
    fclose(f);
    return 0;
}

static uint64_t *counter_for(uint64_t pc) {
    size_t best = 0;
    for (size_t i = 1; i < nsyms; i++)
        if (pc >= syms[i].lo && pc < syms[i].hi &&
            (best == 0 || syms[i].hi - syms[i].lo < syms[best].hi - syms[best].lo)) best = i;
    return &syms[best].count;
}

static void on_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &insn_count, 1);
        if (syms)
            qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64,
                                                       counter_for(qemu_plugin_insn_vaddr(insn)), 1);
    }
}

static int by_count(const void *a, const void *b) {
    const sym_t *x = a, *y = b;
    return x->count < y->count ? 1 : x->count > y->count ? -1 : strcmp(x->name, y->name);
}

static void write_profile(void) {
    FILE *f = fopen(prof_path, "w");
    if (!f) { fprintf(stderr, "insncount: cannot write %s\n", prof_path); return; }
    qsort(syms, nsyms, sizeof *syms, by_count);
    for (size_t i = 0; i < nsyms; i++)
        if (syms[i].count) fprintf(f, "%llu %s\n", (unsigned long long)syms[i].count, syms[i].name);
    fclose(f);
}

static void on_plugin_exit(qemu_plugin_id_t id, void *userdata) {
    (void)id; (void)userdata;
    if (syms && prof_path[0]) write_profile();
    FILE *f = out_path[0] ? fopen(out_path, "w") : stderr;
    if (!f) { fprintf(stderr, "insncount: cannot write %s\n", out_path); return; }
    fprintf(f, "%llu\n", (unsigned long long)insn_count);
    if (f != stderr) fclose(f);
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0 && strlen(argv[i] + 4) < sizeof out_path) {
            strcpy(out_path, argv[i] + 4);
        } else if (strncmp(argv[i], "prof=", 5) == 0 && strlen(argv[i] + 5) < sizeof prof_path) {
            strcpy(prof_path, argv[i] + 5);
        } else if (strncmp(argv[i], "map=", 4) == 0) {
            if (load_map(argv[i] + 4) != 0) return -1;
        } else {
            fprintf(stderr, "insncount: unknown argument '%s' (out=PATH, map=PATH, prof=PATH)\n", argv[i]);
            return -1;
        }
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_trans);
    qemu_plugin_register_atexit_cb(id, on_plugin_exit, NULL);
    return 0;
}
