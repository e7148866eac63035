/* core/pathways.h — the one name for the pathway bits of a block (the
 * trainer's config, the .atome container's `pathways` field, the engine):
 * a model's pathways are the OR of the bits it has. The values are part of
 * the container format (docs/format.md), so they never change. */
#ifndef ATOME_PATHWAYS_H
#define ATOME_PATHWAYS_H

enum { ATM_PATH_CONV = 1, ATM_PATH_SSM = 2, ATM_PATH_ATTN = 4, ATM_PATH_ALL = 7 };

#endif
