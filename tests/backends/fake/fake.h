/* fake.h — a test-only NPU backend, "fake": a second backend behind the seam of
 * compiler/backend.h and backends/lowered.h, with another op set than htp's — Conv2d
 * (aten.convolution, not transposed) and same-shape elementwise add / mul / relu, float32 only —
 * and its own lowered form (a list of ops over tensors, every value in the IR's traced order,
 * whatever axis order pass layout_nhwc chose: the fake NPU holds values as the CPU does, so its
 * boundary converts nothing), its own .egp record, and an executor of plain loops.
 *
 * It touches no file outside this folder: a test registers it (eg_backend_register) and
 * compiles with it (eg_partition_options.backend). */
#ifndef EG_TESTS_FAKE_H
#define EG_TESTS_FAKE_H

#include "compiler/backend.h"

extern const eg_backend eg_fake_backend;
extern const eg_backend_rt eg_fake_rt;

/* Ops the fake executor has run since the program started (a test checks it ran). */
long eg_fake_ops_run(void);

#endif
