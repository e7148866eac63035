/* cli/main.c — PLACEHOLDER until the CLI lands. */
#include <stdio.h>
int main(void) { fprintf(stderr, "atome: not built yet\n"); return 2; }
