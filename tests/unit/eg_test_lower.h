/* eg_test_lower.h — the lowering fixture of the NPU builder tests (include after eg_test.h):
 * write a small exported graph (JSON + safetensors) into `tmpdir`, load it, compile it for
 * SM8650 (passes, placement, lowering), and look at the lowered partitions.
 *
 *   compile(name, values, inputs, statics, nodes, outputs, n_st, st)
 *                               the graph from the contents of its JSON arrays and its F32
 *                               static tensors st[0..n_st); c.ok when it compiled
 *   release(&c)                 frees it
 *   qg(&c, p)                   partition p's QNN graph (NULL when there is none)
 *   ops_are(g, OPS(...))        the graph's op types, exactly and in order (prints them if not)
 *   param_is(g, k, name, VALS(...))   op k's tensor param holds exactly these values
 *   param, out_of, in_of, dims_are, scalar_const_is, op_named    small lookups
 *   reason_of(&c, node), on_npu(&c, node)   the placement of a node of the compiled graph
 *   execute(&c, p, n, vals, in, out_value, out)   runs partition p on the executor
 *   same_values(a, b, n)        exact equality, NaN equal to NaN
 * The test's main() makes `tmpdir` (mkdtemp) and removes it. */
#ifndef EG_TEST_LOWER_H
#define EG_TEST_LOWER_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backends/htp/executor.h"
#include "backends/htp/qnn_graph.h"
#include "compiler/compile.h"
#include "eg_test_graph.h"
#include "program/program.h"
#include "target/targets.h"
#include "util/error.h"

static char tmpdir[64];

/* ---- building and compiling a graph ---- */

typedef struct stat_tensor {
  const char *name, *shape; /* shape as a JSON list */
  int numel;
  const float *data;
} stat_tensor;

typedef struct compiled {
  eg_graph *g;
  eg_program prog;
  bool ok;
} compiled;

/* Writes NAME.safetensors with F32 tensors `st` (n of them). */
static inline void write_weights(const char *name, int n, const stat_tensor *st) {
  char path[256], header[2048] = "{";
  size_t off = 0;
  for (int i = 0; i < n; i++) {
    size_t len = strlen(header);
    snprintf(header + len, sizeof header - len, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":%s,"
             "\"data_offsets\":[%zu,%zu]}", i ? "," : "", st[i].name, st[i].shape, off,
             off + 4 * (size_t)st[i].numel);
    off += 4 * (size_t)st[i].numel;
  }
  strcat(header, "}");
  size_t hl = strlen(header);
  while (hl % 8) header[hl++] = ' ';
  header[hl] = '\0';
  snprintf(path, sizeof path, "%s/%s.safetensors", tmpdir, name);
  FILE *f = fopen(path, "wb");
  EG_CHECK(f != NULL);
  if (!f) return;
  uint64_t len = hl;
  fwrite(&len, 8, 1, f); /* little-endian host */
  fwrite(header, 1, hl, f);
  for (int i = 0; i < n; i++) fwrite(st[i].data, 4, (size_t)st[i].numel, f);
  fclose(f);
}

/* Writes and compiles for SM8650 a graph from its JSON parts (the contents of the "values",
 * "inputs", "statics", "nodes" and "outputs" arrays) and its static tensors. */
static inline compiled compile(const char *name, const char *values, const char *inputs,
                               const char *statics, const char *nodes, const char *outputs,
                               int n_st, const stat_tensor *st) {
  compiled c = {0};
  char weights[128];
  write_weights(name, n_st, st);
  snprintf(weights, sizeof weights, "%s.safetensors", name);
  c.g = eg_test_graph_json(tmpdir, name, weights, values, inputs, statics, nodes, outputs);
  if (!c.g) return c;
  eg_partition_options opt = {.target = eg_target_find("SM8650")};
  eg_status s = eg_program_build(c.g, &opt, &c.prog);
  EG_CHECK_MSG(s == EG_OK, "%s: %s", name, eg_last_error());
  c.ok = s == EG_OK;
  return c;
}

static inline void release(compiled *c) {
  if (c->ok) eg_program_free(&c->prog);
  eg_graph_destroy(c->g);
}

/* ---- inspecting the lowered partition ---- */

static inline const eg_htp_qnn_graph *qg(const compiled *c, int p) {
  return c->ok && p < c->prog.parts.n_partitions ? c->prog.lowered[p].graph : NULL;
}

/* The partition's op types are exactly `types` (n of them), in order. */
static inline bool ops_are(const eg_htp_qnn_graph *g, int n, const eg_htp_qnn_op *types) {
  if (!g) return false;
  bool ok = eg_htp_qnn_graph_num_ops(g) == n;
  for (int k = 0; ok && k < n; k++) ok = eg_htp_qnn_graph_op(g, k)->type == types[k];
  if (!ok) {
    fprintf(stderr, "  ops:");
    for (int k = 0; k < eg_htp_qnn_graph_num_ops(g); k++)
      fprintf(stderr, " %s", eg_htp_qnn_op_name(eg_htp_qnn_graph_op(g, k)->type));
    fprintf(stderr, "\n");
  }
  return ok;
}
#define OPS(...) (int)(sizeof((eg_htp_qnn_op[]){__VA_ARGS__}) / sizeof(eg_htp_qnn_op)), \
                 (const eg_htp_qnn_op[]){__VA_ARGS__}

/* Op k's tensor param `name` holds exactly the n values `want`. */
static inline bool param_is(const eg_htp_qnn_graph *g, int k, const char *name, int n,
                            const uint32_t *want) {
  const eg_htp_qnn_op_node *op = g ? eg_htp_qnn_graph_op(g, k) : NULL;
  const eg_htp_qnn_param *p = op ? eg_htp_qnn_op_param(op, name) : NULL;
  if (!p || p->n_values != n) return false;
  for (int i = 0; i < n; i++)
    if (p->values.u32[i] != want[i]) return false;
  return true;
}
#define VALS(...) (int)(sizeof((uint32_t[]){__VA_ARGS__}) / sizeof(uint32_t)), \
                  (const uint32_t[]){__VA_ARGS__}

static inline const eg_htp_qnn_param *param(const eg_htp_qnn_graph *g, int k, const char *name) {
  return eg_htp_qnn_op_param(eg_htp_qnn_graph_op(g, k), name);
}

static inline const eg_htp_qnn_tensor *out_of(const eg_htp_qnn_graph *g, int k) {
  return eg_htp_qnn_graph_tensor(g, eg_htp_qnn_graph_op(g, k)->outputs[0]);
}

static inline const eg_htp_qnn_tensor *in_of(const eg_htp_qnn_graph *g, int k, int i) {
  return eg_htp_qnn_graph_tensor(g, eg_htp_qnn_graph_op(g, k)->inputs[i]);
}

static inline bool dims_are(const eg_htp_qnn_tensor *t, int n, const uint32_t *want) {
  if (!t || t->rank != n) return false;
  for (int i = 0; i < n; i++)
    if (t->dims[i] != want[i]) return false;
  return true;
}

/* A STATIC float32 tensor holding the single value v (bitwise). */
static inline bool scalar_const_is(const eg_htp_qnn_tensor *t, float v) {
  return t && t->type == EG_HTP_QNN_TENSOR_STATIC && t->dtype == EG_HTP_QNN_DTYPE_FLOAT_32 &&
         eg_htp_qnn_tensor_numel(t) == 1 && memcmp(t->data, &v, 4) == 0;
}

static inline bool op_named(const eg_htp_qnn_graph *g, int k, const char *name) {
  return g && k < eg_htp_qnn_graph_num_ops(g) && strcmp(eg_htp_qnn_graph_op(g, k)->name, name) == 0;
}

/* The placement indexes the compiled graph (prog.graph, after the passes), not the loaded one. */
static inline const char *reason_of(const compiled *c, const char *node) {
  for (int32_t i = 0; c->ok && i < c->prog.graph->n_nodes; i++)
    if (strcmp(c->prog.graph->nodes[i].name, node) == 0)
      return c->prog.parts.nodes[i].reason ? c->prog.parts.nodes[i].reason : "";
  return "(no such node)";
}

static inline bool on_npu(const compiled *c, const char *node) {
  for (int32_t i = 0; c->ok && i < c->prog.graph->n_nodes; i++)
    if (strcmp(c->prog.graph->nodes[i].name, node) == 0) return c->prog.parts.nodes[i].npu;
  return false;
}

/* Runs partition p of c on the executor: inputs by IR value id (n of them, in `vals`), one
 * output (IR value `out_value`) into `out`. */
static inline bool execute(const compiled *c, int p, int n, const int32_t *vals,
                           float *const *in, int32_t out_value, float *out) {
  const eg_lowered *hp = &c->prog.lowered[p];
  eg_htp_qnn_binding bi[8], bo[1];
  int nb = 0;
  for (int k = 0; k < hp->n_inputs && nb < 8; k++)
    for (int i = 0; i < n; i++)
      if (hp->inputs[k].value == vals[i]) {
        const eg_htp_qnn_tensor *t = eg_htp_qnn_graph_tensor(hp->graph, hp->inputs[k].tensor);
        bi[nb++] = (eg_htp_qnn_binding){t->id, in[i], t->nbytes};
      }
  int no = 0;
  for (int k = 0; k < hp->n_outputs; k++)
    if (hp->outputs[k].value == out_value) {
      const eg_htp_qnn_tensor *t = eg_htp_qnn_graph_tensor(hp->graph, hp->outputs[k].tensor);
      bo[no++] = (eg_htp_qnn_binding){t->id, out, t->nbytes};
      break;
    }
  eg_htp_qnn_executor *ex = NULL;
  eg_status s = nb == hp->n_inputs && no == 1 && hp->n_outputs == 1
                    ? eg_htp_qnn_executor_create_plan(hp->graph, eg_htp_qnn_graph_plan(hp->graph),
                                                      EG_PRECISION_FP32, false, &ex)
                    : EG_ERR_INVALID;
  if (s == EG_OK) s = eg_htp_qnn_executor_execute(ex, bi, nb, bo, no);
  EG_CHECK_MSG(s == EG_OK, "%s", eg_last_error());
  eg_htp_qnn_executor_destroy(ex);
  return s == EG_OK;
}

/* Exact equality, NaN equal to NaN, -0 equal to 0 (ATen's select returns either operand). */
static inline bool same_values(const float *a, const float *b, int n) {
  for (int i = 0; i < n; i++)
    if (!(a[i] == b[i] || (isnan(a[i]) && isnan(b[i])))) {
      fprintf(stderr, "  element %d: %g vs %g\n", i, (double)a[i], (double)b[i]);
      return false;
    }
  return true;
}

#endif
