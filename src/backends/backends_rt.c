/* backends_rt.c — the registry of backends' runtime halves (lowered.h): which backend owns the
 * partitions a .egp records under a name. The compile halves are registered in backends.c. */
#include "backends/lowered.h"

#include <stdlib.h>
#include <string.h>

#include "backends/htp/runtime.h"

static const void *const builtin[] = {&eg_htp_rt};
static eg_backend_table runtimes = {builtin, sizeof builtin / sizeof *builtin, {0}};

static const char *name_of(const void *entry) { return *(const char *const *)entry; }

const void *eg_backend_table_find(const eg_backend_table *t, const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < t->n_builtin; i++)
    if (strcmp(name_of(t->builtin[i]), name) == 0) return t->builtin[i];
  for (size_t i = 0; i < sizeof t->extra / sizeof *t->extra; i++)
    if (t->extra[i] && strcmp(name_of(t->extra[i]), name) == 0) return t->extra[i];
  return NULL;
}

eg_status eg_backend_table_add(eg_backend_table *t, const void *b) {
  const void *have = eg_backend_table_find(t, name_of(b));
  if (have == b) return EG_OK;
  if (have)
    return eg_error(EG_ERR_INVALID, "backend registry: name %s: already taken by another "
                    "backend: names are unique", name_of(b));
  for (size_t i = 0; i < sizeof t->extra / sizeof *t->extra; i++)
    if (!t->extra[i]) {
      t->extra[i] = b;
      return EG_OK;
    }
  return eg_error(EG_ERR_INVALID, "backend registry: %s: table full (%zu extra backends)",
                  name_of(b), sizeof t->extra / sizeof *t->extra);
}

const eg_backend_rt *eg_backend_rt_named(const char *name) {
  return eg_backend_table_find(&runtimes, name);
}

eg_status eg_backend_rt_register(const eg_backend_rt *b) {
  return eg_backend_table_add(&runtimes, b);
}

void eg_lowered_free(eg_lowered *lp) {
  if (lp->graph && lp->backend) lp->backend->free(lp->graph);
  free(lp->inputs);
  free(lp->outputs);
  memset(lp, 0, sizeof *lp);
}

void eg_boundary_qview_free(eg_boundary_qview *q) {
  free(q->scale);
  free(q->zero_point);
  q->scale = NULL;
  q->zero_point = NULL;
}
