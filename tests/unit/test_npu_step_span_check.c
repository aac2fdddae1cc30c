/* test_npu_step_span_check.c — an NPU step refuses an executor's spans it cannot plan
 * (runtime/npu_step.h eg_npu_step_create, backends/executor.h spans): a span over ops outside
 * its graph (first before op 0, last at or past the op count), its first op after its last,
 * bytes not a multiple of 64, or a negative count, fails the step with EG_ERR_INVALID and one
 * line naming the span, its ops and bytes and the graph's op count; spans at the graph's first
 * and last op with 64-byte multiples are taken. The executor is htp's for the largest
 * partition of the tiny_step fixture compiled for SM8650, with the test's spans() in place of
 * its own (every other function, create and destroy included, is htp's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/compile.h"
#include "compiler/frontend/frontend.h"
#include "eg_test.h"
#include "runtime/npu_step.h"
#include "target/targets.h"

/* What the test's spans() hands out: span 0 good, span 1 the one under test. */
static eg_backend_span spans_out[2];
static int32_t count_out;

static int32_t test_spans(const void *ex, const eg_backend_span **out) {
  (void)ex;
  *out = spans_out;
  return count_out;
}

/* The step of `lp` with the test's spans (count n, span 1 `bad`); the status of its creation
 * (a step made is destroyed). */
static eg_status create_with(const eg_program *p, int32_t k, const eg_lowered *lp, int32_t n,
                             eg_backend_span bad) {
  spans_out[0] = (eg_backend_span){.tensor = 0, .bytes = 128, .first_op = 0, .last_op = 0};
  spans_out[1] = bad;
  count_out = n;
  eg_npu_step *s = NULL;
  const eg_status st = eg_npu_step_create(p->graph, lp, &p->parts.partitions[k], 0, NULL,
                                          EG_PRECISION_FP32, &s);
  EG_CHECK((st == EG_OK) == (s != NULL));
  eg_npu_step_destroy(s);
  return st;
}

/* Span 1 = `bad` is refused with the one-line message naming it. */
static void refused(const eg_program *p, int32_t k, const eg_lowered *lp, int32_t ops,
                    eg_backend_span bad) {
  const eg_status st = create_with(p, k, lp, 2, bad);
  char want[512];
  snprintf(want, sizeof want, "npu step: executor span 1 (ops %d..%d, %zu bytes): must be ops "
           "of its graph (%d ops), first not after last, a multiple of 64 bytes",
           (int)bad.first_op, (int)bad.last_op, bad.bytes, (int)ops);
  EG_CHECK_MSG(st == EG_ERR_INVALID, "span ops %d..%d, %zu bytes: status %d", (int)bad.first_op,
               (int)bad.last_op, bad.bytes, (int)st);
  EG_CHECK_MSG(strcmp(eg_last_error(), want) == 0, "got  \"%s\"\nwant \"%s\"", eg_last_error(),
               want);
}

static void test_invalid_spans_refused(void) {
  eg_graph *src = NULL;
  eg_program p;
  memset(&p, 0, sizeof p);
  EG_CHECK_MSG(eg_graph_load_json(EG_TEST_DATA "/tiny_step.json", &src) == EG_OK, "%s",
               eg_last_error());
  const eg_partition_options opt = {.target = eg_target_find("SM8650")};
  const bool built = src && eg_program_build(src, &opt, &p) == EG_OK;
  EG_CHECK_MSG(built && p.parts.n_partitions > 0, "build: %s", eg_last_error());
  if (!built || p.parts.n_partitions == 0) goto out;
  /* the partition with the most ops (at least 2: a span first after last within range) */
  int32_t k = 0, ops = 0;
  for (int32_t q = 0; q < p.parts.n_partitions; q++) {
    eg_npu_partition_info info = {0};
    p.lowered[q].backend->describe(p.lowered[q].graph, &info);
    if (info.num_ops > ops) k = q, ops = info.num_ops;
  }
  EG_CHECK_MSG(ops >= 2, "%d ops", (int)ops);
  if (ops < 2) goto out;
  /* htp's runtime half and executor, the executor's spans the test's */
  eg_backend_executor ex = *p.lowered[k].backend->executor;
  ex.spans = test_spans;
  eg_backend_rt rt = *p.lowered[k].backend;
  rt.executor = &ex;
  eg_lowered lp = p.lowered[k];
  lp.backend = &rt;

  /* taken: spans at the first and the last op, 64-byte multiples, a scratch span (tensor -1) */
  eg_status st = create_with(&p, k, &lp, 2, (eg_backend_span){.tensor = 1, .bytes = 64,
                                                              .first_op = 0, .last_op = ops - 1});
  EG_CHECK_MSG(st == EG_OK, "%s", eg_last_error());
  st = create_with(&p, k, &lp, 2, (eg_backend_span){.tensor = -1, .bytes = 192,
                                                    .first_op = ops - 1, .last_op = ops - 1});
  EG_CHECK_MSG(st == EG_OK, "%s", eg_last_error());
  EG_CHECK_MSG(create_with(&p, k, &lp, 0, spans_out[1]) == EG_OK, "%s", eg_last_error());

  /* refused: ops out of the graph's range, first after last, bytes not a multiple of 64 */
  refused(&p, k, &lp, ops, (eg_backend_span){.tensor = 1, .bytes = 64, .first_op = -1,
                                             .last_op = 0});
  refused(&p, k, &lp, ops, (eg_backend_span){.tensor = 1, .bytes = 64, .first_op = 0,
                                             .last_op = ops});
  refused(&p, k, &lp, ops, (eg_backend_span){.tensor = 1, .bytes = 64, .first_op = 1,
                                             .last_op = 0});
  refused(&p, k, &lp, ops, (eg_backend_span){.tensor = 1, .bytes = 65, .first_op = 0,
                                             .last_op = 0});
  refused(&p, k, &lp, ops, (eg_backend_span){.tensor = 1, .bytes = 32, .first_op = 0,
                                             .last_op = ops - 1});
  refused(&p, k, &lp, ops, (eg_backend_span){.tensor = -1, .bytes = 100, .first_op = 0,
                                             .last_op = 0});

  /* a negative count */
  st = create_with(&p, k, &lp, -1, spans_out[1]);
  EG_CHECK_MSG(st == EG_ERR_INVALID && strcmp(eg_last_error(), "npu step: executor spans (-1): "
               "a count >= 0") == 0, "status %d: %s", (int)st, eg_last_error());
out:
  if (built) eg_program_free(&p);
  eg_graph_destroy(src);
}

int main(void) {
  EG_RUN(test_invalid_spans_refused);
  return eg_test_summary();
}
