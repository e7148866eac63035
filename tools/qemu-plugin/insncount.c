/* tools/qemu-plugin/insncount.c — a QEMU TCG plugin that counts every guest
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
 *
 * Build: tools/CMakeLists.txt (native preset) makes libinsncount.so; by
 * hand: gcc -O2 -shared -fPIC -fvisibility=hidden -o libinsncount.so insncount.c
 * Use:   qemu-system-arm ... -plugin PATH/libinsncount.so,out=count.txt
 *        (tools/run-qemu --count FILE does this). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 = 0 };

/* From QEMU 7.2 include/qemu/qemu-plugin.h (API version 1). */
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
                                           void (*cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb));
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

static void on_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    for (size_t i = 0; i < n; i++)
        qemu_plugin_register_vcpu_insn_exec_inline(qemu_plugin_tb_get_insn(tb, i),
                                                   QEMU_PLUGIN_INLINE_ADD_U64, &insn_count, 1);
}

static void on_plugin_exit(qemu_plugin_id_t id, void *userdata) {
    (void)id; (void)userdata;
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
        } else {
            fprintf(stderr, "insncount: unknown argument '%s' (only out=PATH)\n", argv[i]);
            return -1;
        }
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_trans);
    qemu_plugin_register_atexit_cb(id, on_plugin_exit, NULL);
    return 0;
}
