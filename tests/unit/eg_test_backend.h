/* eg_test_backend.h — the htp backend over a test's own builder table (fake builders that
 * pretend ops are NPU-capable, or an empty table), for partition options' `backend`. */
#ifndef EG_TEST_BACKEND_H
#define EG_TEST_BACKEND_H

#include "backends/htp/compile/compiler.h"

/* A backend over `table` that stays valid for the test's run (the last 16 calls' backends are
 * kept; no test holds more at once). */
static inline const eg_backend *eg_test_backend(const eg_htp_builder *const *table) {
  static eg_backend kept[16];
  static int next;
  eg_backend *b = &kept[next++ % 16];
  *b = eg_htp_backend_with_builders(table);
  return b;
}

#endif
