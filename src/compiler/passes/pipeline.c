/* pipeline.c — the pass list, in the order the passes run, read top to bottom (see pipeline.h).
 * Adding a pass: write src/compiler/passes/<name>.c with eg_pass_<name>, declare it in pipeline.h,
 * add one row here. */
#include "compiler/passes/pipeline.h"
#include "ops/verify.h"

#include <string.h>

#include "ir/print.h"
#include "util/error.h"

typedef struct eg_pass {
  const char *name;
  eg_status (*run)(eg_graph *g, const eg_partition_options *opt);
} eg_pass;

static const eg_pass passes[] = {
    /* 1. dead nodes (no result read, e.g. make_fx's detach chains) and unread statics removed:
     *    first, so no later pass sees a use that computes nothing */
    {"prune", eg_pass_prune},
    /* 2. ops the NPU lacks -> ops it has (leaves whole the ops the NPU lowers whole) */
    {"decompose", eg_pass_decompose},
    /* 3. quantization attributes of a QDQ model's values, from its quantize nodes */
    {"annotate_quant", eg_pass_annotate_quant},
    /* 4. every node placed, once: NPU or CPU with the reason (eg_node.place); the passes below
     *    read it and keep it up to date for the nodes they add or change */
    {"place", eg_pass_place},
    /* 5. quantize -> dequantize pairs inside NPU partitions removed: NPU nodes read the quantized
     *    value itself (before the layout and dtype passes) */
    {"fold_qdq", eg_pass_fold_qdq},
    /* 6. the axis order of rank-4 values inside NPU partitions (NHWC for conv / pool / norm)
     *    + conversions where an NCHW-only op meets an NHWC value */
    {"layout_nhwc", eg_pass_layout_nhwc},
    /* 7. int64 values NPU partitions hold -> marked npu_int32 (last, once the graph's nodes are
     *    final) */
    {"i64_to_i32", eg_pass_i64_to_i32},
};
enum { N_PASSES = (int)(sizeof passes / sizeof passes[0]) };

int eg_passes_count(void) { return N_PASSES; }

const char *eg_passes_name(int index) {
  return index >= 0 && index < N_PASSES ? passes[index].name : NULL;
}

eg_status eg_passes_check_dump(const char *dump_after) {
  if (!dump_after || strcmp(dump_after, "all") == 0) return EG_OK;
  char names[256] = "";
  size_t used = 0;
  for (int i = 0; i < N_PASSES; i++) {
    if (strcmp(dump_after, passes[i].name) == 0) return EG_OK;
    if (used < sizeof names)
      used += (size_t)snprintf(names + used, sizeof names - used, "%s, ", passes[i].name);
  }
  return eg_error(EG_ERR_ARGUMENT, "--dump-after %s: no pass of that name: valid names are "
                  "%sall", dump_after, names);
}

eg_status eg_passes_run(eg_graph *g, const eg_partition_options *opt, const char *dump_after,
                        FILE *dump) {
  EG_TRY(eg_passes_check_dump(dump_after));
  for (int i = 0; i < N_PASSES; i++) {
    eg_status s = passes[i].run(g, opt);
    if (s == EG_OK) s = eg_graph_verify(g); /* also refreshes roles and defs (pipeline.h) */
    if (s != EG_OK) return eg_error_prefix(s, "pass %s", passes[i].name);
    if (dump && dump_after &&
        (strcmp(dump_after, "all") == 0 || strcmp(dump_after, passes[i].name) == 0)) {
      fprintf(dump, "# after %s\n", passes[i].name);
      eg_graph_print(g, dump);
    }
  }
  return EG_OK;
}
