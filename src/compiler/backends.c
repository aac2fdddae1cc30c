/* backends.c — the backend registry (see backend.h): which backend compiles for which target,
 * and each backend by name (the .egp writer asks for the one that owns a partition). The
 * runtime halves are registered in backends_rt.c. */
#include "compiler/backend.h"

#include "backends/htp/compile/compiler.h"

static const void *const builtin[] = {&eg_htp_backend};
static eg_backend_table compilers = {builtin, sizeof builtin / sizeof *builtin, {0}};

const eg_backend *eg_backend_for_target(const eg_target *t) {
  (void)t; /* every SoC edgegrad targets has a Hexagon NPU (HTP) */
  return &eg_htp_backend;
}

const eg_backend *eg_backend_named(const char *name) {
  return eg_backend_table_find(&compilers, name);
}

eg_status eg_backend_register(const eg_backend *b) {
  EG_TRY(eg_backend_rt_register(b->rt));
  return eg_backend_table_add(&compilers, b);
}
