/* placement.c — freeing a placement (see placement.h). */
#include "ir/placement.h"

#include <string.h>

void eg_partitioning_free(eg_partitioning *p) {
  if (!p) return;
  eg_arena_destroy(p->arena);
  memset(p, 0, sizeof *p);
}
