/* core/train/gssm.c — PLACEHOLDER so the tree links while the family is written. */
#include "model.h"
static int layout_placeholder(const atm_config *c, atm_layout *L) { (void)c; (void)L; return -1; }
const atm_family atm_family_gssm = { "gssm", layout_placeholder, 0, 0, 0, 0, 0, 0, 0, 0 };
