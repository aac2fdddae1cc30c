/* test_hostile_program.c — hostile compiled programs and graphs that once slipped through
 * (issue 10), each refused with one line or compiled into a program its own reader accepts:
 *   - .egp value shapes whose element count wraps past 2^64 ([2^40, 2^40, 1, 1] multiplied to 0
 *     in a uint64) and QNN STATIC tensors whose dims wrap the same way are refused by the
 *     reader, naming the shape and the 2^40 rule (util/checked.h), never accepted or read on;
 *     the graph verifier refuses a zero dim hiding a huge product ([2^40, 2^40, 0, 1]);
 *   - one quantization rule (ir/quant_rule.h): a scale outside [1e-30, 1e30] (1e31, 1e-300 that
 *     would round to 0 as float32) is refused by the graph verifier when loading and by the .egp
 *     reader, with the same rule in both messages; a scale inside it loads, compiles, and the
 *     written program reads back — compile never writes a program its reader refuses;
 *   - a dim above UINT32_MAX (QNN dims are uint32): the partitioner keeps the node on the CPU
 *     with the reason, the program reads back; a partitioning that places it on the NPU anyway
 *     is refused by the lowering with that reason instead of truncating the dim. */
#include <stdint.h>
#include <unistd.h>

#include "eg_test.h"
#include "backends/htp/compile/lower.h"
#include "eg_test_graph.h"
#include "compiler/frontend/frontend.h"
#include "ir/quant_rule.h"
#include "compiler/compile.h"
#include "compiler/egp_write.h"
#include "program/egp_format.h"
#include "target/targets.h"
#include "util/error.h"
#include "ops/verify.h"

#define TINY EG_TEST_DATA "/tiny_step.json"

static char tmpdir[64];

/* The tiny_step fixture compiled for `soc`; *g must be freed by the caller. */
static bool build_tiny(const char *soc, eg_graph **g, eg_program *p) {
  *g = NULL;
  if (eg_graph_load_json(TINY, g) != EG_OK) {
    EG_CHECK_MSG(false, "load: %s", eg_last_error());
    return false;
  }
  if (!eg_test_build(*g, soc, p)) {
    eg_graph_destroy(*g);
    *g = NULL;
    return false;
  }
  return true;
}

/* Writes `p` to memory and reads it back; returns the read status (the message in
 * eg_last_error()), checking that a refusal is one line naming the file. */
static eg_status write_read(const eg_program *p) {
  void *bytes = NULL;
  size_t size = 0;
  eg_status s = eg_egp_write_memory(p, &bytes, &size);
  EG_CHECK_MSG(s == EG_OK, "write: %s", eg_last_error());
  if (s != EG_OK) return s;
  eg_egp *e = NULL;
  s = eg_egp_read_memory("hostile.egp", bytes, size, &e);
  if (s == EG_OK) {
    eg_egp_free(e);
  } else {
    const char *msg = eg_last_error();
    EG_CHECK_MSG(strncmp(msg, "hostile.egp: ", 13) == 0 && !strchr(msg, '\n'), "'%s'", msg);
    EG_CHECK(e == NULL);
  }
  free(bytes);
  return s;
}

/* ---- element counts that wrap ---- */

static void test_value_shape_overflow_rejected(void) {
  static const int64_t T40 = (int64_t)1 << 40;
  static const struct {
    int64_t shape[4];
    const char *text;
  } cases[] = {
      {{T40, T40, 1, 1}, "shape [1099511627776, 1099511627776, 1, 1]"},   /* wraps to 0 */
      {{T40, T40, T40, 0}, "shape [1099511627776, 1099511627776, 1099511627776, 0]"},
      {{(int64_t)1 << 62, 4, 0, 1}, "shape [4611686018427387904, 4, 0, 1]"}, /* 2^64 */
      {{0, (int64_t)1 << 41, 1, 1}, "shape [0, 2199023255552, 1, 1]"},
      {{2, -1, 12, 12}, "shape [2, -1, 12, 12]"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    eg_graph *g;
    eg_program p;
    if (!build_tiny("SM8650", &g, &p)) return;
    eg_value *v = &p.graph->values[p.graph->inputs[0].value]; /* input [2, 1, 12, 12] */
    EG_CHECK(v->kind == EG_VALUE_TENSOR && v->rank == 4);
    memcpy(v->shape, cases[k].shape, sizeof cases[k].shape);
    EG_CHECK(write_read(&p) == EG_ERR_FORMAT);
    const char *msg = eg_last_error();
    EG_CHECK_MSG(strstr(msg, "GRAPH: values[") && strstr(msg, cases[k].text) &&
                     strstr(msg, "at most 2^40"), "case %zu: '%s'", k, msg);
    eg_program_free(&p);
    eg_graph_destroy(g);
  }
}

/* The verifier (run by every reader: graph JSON, .egp, and after passes) holds the same rule,
 * so eg_value_numel's invariant does not depend on each loader's own check. */
static void test_verify_refuses_hidden_huge_shape(void) {
  eg_graph *g = eg_test_fixture("tiny_step");
  if (!g) return;
  eg_value *v = &g->values[g->inputs[0].value];
  EG_CHECK(v->kind == EG_VALUE_TENSOR && v->rank == 4);
  const int64_t shape[4] = {(int64_t)1 << 40, (int64_t)1 << 40, 0, 1}; /* 0 elements */
  memcpy(v->shape, shape, sizeof shape);
  EG_CHECK(eg_graph_verify(g) != EG_OK);
  EG_CHECK_MSG(strstr(eg_last_error(), "shape [1099511627776, 1099511627776, 0, 1]: every dim "
                                       "must be >= 0 and the product of the non-zero dims at "
                                       "most 2^40"), "'%s'", eg_last_error());
  eg_graph_destroy(g);
}

static void test_qnn_static_dims_overflow_rejected(void) {
  eg_graph *g;
  eg_program p;
  if (!build_tiny("SM8650", &g, &p)) return;
  eg_htp_qnn_tensor *t = NULL; /* the first STATIC rank-4 tensor (a conv filter) */
  for (int32_t k = 0; !t && k < p.parts.n_partitions; k++)
    for (int32_t i = 0; !t && i < eg_htp_qnn_graph_num_tensors(p.lowered[k].graph); i++) {
      const eg_htp_qnn_tensor *x = eg_htp_qnn_graph_tensor(p.lowered[k].graph, i);
      if (x->type == EG_HTP_QNN_TENSOR_STATIC && x->rank == 4) t = (eg_htp_qnn_tensor *)x;
    }
  EG_CHECK(t != NULL);
  if (t) {
    /* 2^20 * 2^20 * 2^24 is 2^64: a uint64 product wraps to 0 elements (0 bytes) */
    const uint32_t dims[4] = {1u << 20, 1u << 20, 1u << 24, 4};
    memcpy(t->dims, dims, sizeof dims);
    EG_CHECK(write_read(&p) == EG_ERR_FORMAT);
    EG_CHECK_MSG(strstr(eg_last_error(), "NPU: partition ") &&
                     strstr(eg_last_error(), "STATIC dims [1048576, 1048576, 16777216, 4]") &&
                     strstr(eg_last_error(), "at most 2^40"), "'%s'", eg_last_error());
  }
  eg_program_free(&p);
  eg_graph_destroy(g);
}

/* ---- one quantization rule ---- */

/* A quantize/dequantize graph with per-tensor scale `scale` (JSON text). */
static eg_status load_quant_graph(const char *scale, eg_graph **g) {
  char path[128], nodes[640];
  snprintf(path, sizeof path, "%s/quant.json", tmpdir);
  snprintf(nodes, sizeof nodes,
           "{\"name\": \"q\", \"target\": \"aten.quantize_per_tensor.default\", \"args\": "
           "[{\"value\": 0}, {\"float\": %s}, 3, {\"dtype\": \"uint8\"}], \"kwargs\": {}, "
           "\"output\": 1}, {\"name\": \"dq\", \"target\": \"aten.dequantize.self\", \"args\": "
           "[{\"value\": 1}], \"kwargs\": {}, \"output\": 2}", scale);
  FILE *f = fopen(path, "w");
  EG_CHECK(f != NULL);
  if (!f) return EG_ERR_IO;
  fprintf(f, "{\"format\": \"edgegrad.graph\", \"version\": 1, \"values\": ["
          "{\"id\": 0, \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [2, 3]}, "
          "{\"id\": 1, \"kind\": \"tensor\", \"dtype\": \"uint8\", \"shape\": [2, 3]}, "
          "{\"id\": 2, \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [2, 3]}], "
          "\"inputs\": [{\"name\": \"x\", \"value\": 0, \"role\": \"data\"}], \"statics\": [], "
          "\"nodes\": [%s], \"outputs\": [{\"name\": \"out\", \"value\": 2, \"role\": "
          "\"output\"}]}\n", nodes);
  fclose(f);
  *g = NULL;
  return eg_graph_load_json(path, g);
}

/* Compile accepts exactly the scales the reader accepts: a graph that loads compiles into a
 * program that reads back; one that does not is refused with the shared rule. */
static void test_quant_scale_compile_reader_agree(void) {
  static const char *const scales[] = {"1e31", "1e-300", "1e30", "1e-30", "1.0000001e30",
                                       "9.999999e-31", "0.02", "1e-38", "3e38", "0"};
  for (size_t k = 0; k < sizeof scales / sizeof scales[0]; k++) {
    const double scale = strtod(scales[k], NULL);
    eg_graph *g = NULL;
    eg_status s = load_quant_graph(scales[k], &g);
    EG_CHECK_MSG((s == EG_OK) == eg_quant_scale_ok(scale), "scale %s: load %d: %s", scales[k],
                 (int)s, s == EG_OK ? "" : eg_last_error());
    if (s != EG_OK) {
      EG_CHECK_MSG(strstr(eg_last_error(), "node q: scale (") &&
                       strstr(eg_last_error(), EG_QUANT_SCALE_RULE), "'%s'", eg_last_error());
      continue;
    }
    eg_program p;
    if (eg_test_build(g, "SM8650", &p)) {
      EG_CHECK_MSG(write_read(&p) == EG_OK, "scale %s: compiled, but the reader says '%s'",
                   scales[k], eg_last_error());
      eg_program_free(&p);
    }
    eg_graph_destroy(g);
  }
}

/* The reader applies the same rule to a value's quantization annotation. */
static void test_quant_scale_reader_rule(void) {
  static const double scales[] = {1e31, 1e-300, 1e30, 1e-30, 0.02, 0.0, -1.0, INFINITY, NAN,
                                  1e-31, 2e30};
  for (size_t k = 0; k < sizeof scales / sizeof scales[0]; k++) {
    eg_graph *g;
    eg_program p;
    if (!build_tiny("SM8350", &g, &p)) return; /* all on the CPU: no boundary to agree with */
    const double scale[1] = {scales[k]};
    const int64_t zp[1] = {0};
    const eg_quant q = {EG_DTYPE_INT8, -1, 1, scale, zp, -128, 127};
    p.graph->values[p.graph->nodes[0].output].quant = &q;
    eg_status s = write_read(&p);
    EG_CHECK_MSG((s == EG_OK) == eg_quant_scale_ok(scales[k]), "scale %g: read %d: %s",
                 scales[k], (int)s, s == EG_OK ? "" : eg_last_error());
    if (s != EG_OK)
      EG_CHECK_MSG(strstr(eg_last_error(), "quant scale[0] (") &&
                       strstr(eg_last_error(), EG_QUANT_SCALE_RULE), "'%s'", eg_last_error());
    p.graph->values[p.graph->nodes[0].output].quant = NULL;
    eg_program_free(&p);
    eg_graph_destroy(g);
  }
}

/* ---- dims beyond QNN's uint32 ---- */

/* relu over a float32 [dim] input. */
static eg_graph *relu_graph(int64_t dim) {
  char values[256];
  snprintf(values, sizeof values,
           "{\"id\": 0, \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [%lld]}, "
           "{\"id\": 1, \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [%lld]}",
           (long long)dim, (long long)dim);
  return eg_test_graph_json(tmpdir, "relu_big", "", values, "{\"name\": \"x\", \"value\": 0}", "",
                            "{\"name\": \"relu\", \"target\": \"aten.relu.default\", \"args\": "
                            "[{\"value\": 0}], \"kwargs\": {}, \"output\": 1}",
                            "{\"name\": \"out\", \"value\": 1}");
}

static void test_huge_dim_stays_on_cpu(void) {
  static const int64_t dims[] = {((int64_t)1 << 33), ((int64_t)1 << 32) + 1, (int64_t)1 << 40,
                                 (int64_t)UINT32_MAX};
  for (size_t k = 0; k < sizeof dims / sizeof dims[0]; k++) {
    eg_graph *g = relu_graph(dims[k]);
    if (!g) continue;
    eg_program p;
    if (eg_test_build(g, "SM8650", &p)) {
      const int32_t relu = eg_test_node_named(p.graph, "relu");
      const eg_node_placement *np = relu >= 0 ? &p.parts.nodes[relu] : NULL;
      char want[128];
      snprintf(want, sizeof want, "dimension %lld of x exceeds QNN's 32-bit dims",
               (long long)dims[k]);
      if (dims[k] > (int64_t)UINT32_MAX)
        EG_CHECK_MSG(np && !np->npu && np->reason && strstr(np->reason, want), "dim %lld: %s",
                     (long long)dims[k], np && np->reason ? np->reason : "on the NPU");
      else
        EG_CHECK_MSG(np && np->npu, "dim %lld fits a uint32: %s", (long long)dims[k],
                     np && np->reason ? np->reason : "?");
      EG_CHECK_MSG(write_read(&p) == EG_OK, "dim %lld: compiled, but the reader says '%s'",
                   (long long)dims[k], eg_last_error());
      eg_program_free(&p);
    }
    eg_graph_destroy(g);
  }
}

/* A partitioning that puts the relu on the NPU regardless: lowering refuses, never truncates. */
static void test_lowering_refuses_huge_dim(void) {
  static const int64_t dims[] = {((int64_t)1 << 33), ((int64_t)1 << 32) + 1, (int64_t)1 << 40};
  for (size_t k = 0; k < sizeof dims / sizeof dims[0]; k++) {
    eg_graph *g = relu_graph(dims[k]);
    if (!g) continue;
    eg_node_placement place = {.npu = true, .partition = 0, .reason = NULL};
    int32_t node = 0;
    eg_partition part = {.n_nodes = 1, .nodes = &node};
    eg_partitioning pt = {.n_nodes = 1, .nodes = &place, .n_partitions = 1, .partitions = &part};
    EG_CHECK(g->n_nodes == 1);
    eg_lowered hp;
    eg_status s = eg_htp_lower_partition(g, &pt, 0, eg_htp_builders, &hp);
    char want[128];
    snprintf(want, sizeof want, "dimension %lld of x exceeds QNN's 32-bit dims",
             (long long)dims[k]);
    EG_CHECK_MSG(s != EG_OK && strstr(eg_last_error(), want) && !strchr(eg_last_error(), '\n'),
                 "dim %lld: status %d, '%s'", (long long)dims[k], (int)s,
                 s == EG_OK ? "lowered" : eg_last_error());
    if (s == EG_OK) eg_lowered_free(&hp);
    eg_graph_destroy(g);
  }
}

/* ---- repeated names (found by sorting, not by comparing every pair) ---- */

static void test_repeated_names_refused(void) {
  for (int list = 0; list < 3; list++) {
    eg_graph *g;
    eg_program p;
    if (!build_tiny("SM8650", &g, &p)) return;
    eg_graph *pg = p.graph;
    const char *what = list == 0 ? "nodes" : list == 1 ? "inputs" : "statics";
    int32_t n = list == 0 ? pg->n_nodes : list == 1 ? pg->n_inputs : pg->n_statics;
    EG_CHECK_MSG(n >= 2, "%s: %d entries", what, n);
    if (n < 2) {
      eg_program_free(&p);
      eg_graph_destroy(g);
      return;
    }
    /* The last entry repeats the one before: the message names both, as a pairwise scan did. */
    if (list == 0) pg->nodes[n - 1].name = pg->nodes[n - 2].name;
    if (list == 1) pg->inputs[n - 1].name = pg->inputs[n - 2].name;
    if (list == 2) pg->statics[n - 1].name = pg->statics[n - 2].name;
    EG_CHECK(write_read(&p) == EG_ERR_FORMAT);
    char want[64];
    snprintf(want, sizeof want, "%s[%d]: name '", what, n - 1);
    const char *msg = eg_last_error();
    char also[64];
    snprintf(also, sizeof also, "repeats %s[%d]", what, n - 2);
    EG_CHECK_MSG(strstr(msg, want) && strstr(msg, also), "%s: '%s'", what, msg);
    eg_program_free(&p);
    eg_graph_destroy(g);
  }
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/eg_hostile_XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  EG_RUN(test_value_shape_overflow_rejected);
  EG_RUN(test_verify_refuses_hidden_huge_shape);
  EG_RUN(test_qnn_static_dims_overflow_rejected);
  EG_RUN(test_quant_scale_compile_reader_agree);
  EG_RUN(test_quant_scale_reader_rule);
  EG_RUN(test_huge_dim_stays_on_cpu);
  EG_RUN(test_lowering_refuses_huge_dim);
  EG_RUN(test_repeated_names_refused);
  char path[128];
  snprintf(path, sizeof path, "%s/quant.json", tmpdir);
  unlink(path);
  snprintf(path, sizeof path, "%s/relu_big.json", tmpdir);
  unlink(path);
  rmdir(tmpdir);
  return eg_test_summary();
}
