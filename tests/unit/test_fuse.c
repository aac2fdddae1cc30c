/* test_fuse.c — fused batch-norm chains on the CPU path (src/runtime/fuse.h): a runtime with
 * fusion on gives bit for bit the outputs of one with fusion off (each node its own kernel),
 * and fuses exactly the chains it may:
 *   - tests/data/fuse_step (make_fixtures.py: conv -> BatchNorm -> ReLU -> conv ->
 *     BatchNorm -> ReLU6 -> linear, cross-entropy, every parameter trained): six chains
 *     (BatchNorm -> ReLU and -> ReLU6; threshold_backward and hardtanh_backward into the
 *     batch-norm backwards, hardtanh_backward's mask read from ReLU6's output so that the
 *     batch norm's output has no other reader; each batch norm's variance statistic
 *     sub -> mul -> sum); loss and gradients within the project's tolerance of PyTorch's,
 *     and equal to the unfused run's;
 *   - hand-made graphs: a batch norm (native_batch_norm, and _legit_functional) followed by a
 *     relu or hardtanh(0, 6) alone fuses; one whose output another node also reads (a neg), or
 *     which is a graph output, does not (those readers see the batch norm's own values, which
 *     have negatives: a fusion that ignored them would hand them the activation's); a
 *     threshold_backward or hardtanh_backward read by the batch-norm backward alone fuses, one
 *     also read by a neg does not;
 *   - a residual block's end, batch norm -> add of z -> relu: fuses, but not when the sum is a
 *     graph output too, nor when z is computed after the batch norm;
 *   - ReLU6 training (hardtanh_backward reads a clone of the batch norm's output): both chains
 *     fuse, the mask read from the hardtanh's output; with the clone a graph output, or other
 *     bounds in the backward than the forward's, only the backward fuses;
 *   - the variance statistic sum((x - m) * (x - m), [0, 2, 3]), m [1, C, 1, 1] or one value:
 *     fuses (planes longer and shorter than a 512-element stretch, and not a multiple of 32),
 *     its sub and mul results get no bytes, and its sums are within float rounding of a
 *     double sum of every image and channel; not where the difference or the square is read
 *     by another node or is a graph output, m broadcasts along W, or H * W is 1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgegrad.h"
#include "eg_test.h"
#include "eg_test_graph.h"
#include "eg_test_json.h"
#include "runtime/engine.h"
#include "runtime/model.h"

static char tmpdir[64];

static eg_runtime *create(const eg_graph *g, bool fuse) {
  eg_runtime *rt = NULL;
  const eg_runtime_options opt = EG_RUNTIME_OPTIONS();
  EG_CHECK_MSG(eg_engine_create_fused(g, NULL, false, &opt, fuse, &rt) == EG_OK, "%s",
               eg_last_error());
  return rt;
}

/* Sets every input of the graph to values[i] (each numel floats, or int64 for the target). */
static void set_inputs(const eg_graph *g, eg_runtime *rt, eg_tensor *in) {
  for (int32_t i = 0; i < g->n_inputs; i++)
    EG_CHECK_MSG(eg_runtime_set_input(rt, g->inputs[i].name, &in[i]) == EG_OK, "%s",
                 eg_last_error());
}

/* Runs fused and unfused runtimes of g on the inputs `in`: every output bit for bit equal;
 * the fused runtime's chain count is `chains`. Returns the fused runtime (run) for more
 * checks; *unfused gets the other. */
static eg_runtime *run_both(const eg_graph *g, eg_tensor *in, int32_t chains,
                            eg_runtime **unfused) {
  eg_runtime *a = create(g, true), *b = create(g, false);
  *unfused = b;
  if (!a || !b) return a;
  EG_CHECK_MSG(eg_engine_fused_chains(a) == chains, "%d fused chains, expected %d",
               eg_engine_fused_chains(a), chains);
  EG_CHECK(eg_engine_fused_chains(b) == 0);
  for (int round = 0; round < 2; round++) { /* the second run reuses the plan's buffers */
    set_inputs(g, a, in);
    set_inputs(g, b, in);
    EG_CHECK_MSG(eg_runtime_run(a) == EG_OK, "%s", eg_last_error());
    EG_CHECK_MSG(eg_runtime_run(b) == EG_OK, "%s", eg_last_error());
    for (int32_t o = 0; o < g->n_outputs; o++) {
      eg_tensor ta, tb;
      EG_CHECK(eg_runtime_output(a, o, &ta) == EG_OK && eg_runtime_output(b, o, &tb) == EG_OK);
      const size_t bytes = eg_value_nbytes(&g->values[g->outputs[o].value]);
      EG_CHECK_MSG(memcmp(ta.data, tb.data, bytes) == 0,
                   "round %d output %s: fused and unfused runs differ", round,
                   g->outputs[o].name);
    }
  }
  return a;
}

/* ---- the PyTorch fixture ---- */

static void test_fixture_step(void) {
  eg_model *m = NULL;
  EG_CHECK_MSG(eg_model_load(EG_TEST_DATA "/fuse_step.json", &m) == EG_OK, "%s",
               eg_last_error());
  if (!m) return;
  const eg_graph *g = m->graph;
  eg_tensor in[32] = {0};
  EG_CHECK(g->n_inputs <= 32);
  for (int32_t i = 0; i < g->n_inputs && i < 32; i++) {
    char path[512];
    snprintf(path, sizeof path, EG_TEST_DATA "/fuse_step_inputs/%s.npy", g->inputs[i].name);
    EG_CHECK_MSG(eg_npy_load(path, &in[i]) == EG_OK, "%s", eg_last_error());
  }
  eg_runtime *unfused = NULL, *fused = run_both(g, in, 6, &unfused);
  int compared = 0;
  for (int32_t o = 0; fused && o < g->n_outputs; o++) {
    char path[512];
    snprintf(path, sizeof path, EG_TEST_DATA "/fuse_step_reference/%s.npy", g->outputs[o].name);
    if (access(path, R_OK) != 0) continue; /* the new running statistics */
    eg_tensor want, got;
    eg_compare_result r;
    EG_CHECK_MSG(eg_npy_load(path, &want) == EG_OK, "%s", eg_last_error());
    EG_CHECK(eg_runtime_output(fused, o, &got) == EG_OK);
    EG_CHECK(eg_tensor_compare(&got, &want, EG_COMPARE_RTOL, EG_COMPARE_ATOL, &r) == EG_OK);
    EG_CHECK_MSG(r.num_bad == 0, "%s: %lld elements out of tolerance (worst %g, PyTorch %g)",
                 g->outputs[o].name, (long long)r.num_bad, r.got, r.want);
    eg_tensor_free(&want);
    compared++;
  }
  EG_CHECK_MSG(compared == 11, "%d outputs compared with PyTorch, expected 11", compared);
  eg_runtime_destroy(fused);
  eg_runtime_destroy(unfused);
  for (int32_t i = 0; i < g->n_inputs && i < 32; i++) eg_tensor_free(&in[i]);
  eg_model_destroy(m);
}

/* ---- hand-made forward graphs: x [2, 3, 2, 2] -> batch norm -> activation ---- */

enum { N = 24 };

/* Values of mixed sign, some far from the mean (so the batch norm's output has negatives and
 * values above 6 after its weight of 4). */
static void fill(float *x, int n, unsigned seed) {
  for (int i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    x[i] = (float)((seed >> 8) % 2001) / 1000.0f - 1.0f + (i % 7 == 0 ? 2.5f : 0.0f);
  }
}

#define XS "[2, 3, 2, 2]"
#define BN_VALUES T(0, XS) ", " T(1, "[3]") ", " T(2, "[3]") ", "
#define BN_NATIVE NODE("bn", "aten.native_batch_norm.default", \
                       "[" V(0) ", " V(1) ", " V(2) ", null, null, true, " F(0.1) ", " F(1e-05) "]", 3)
#define BN_INPUTS IN("x", 0) ", " IN("w", 1) ", " IN("b", 2)

/* The graph's inputs are x, w, b and, where it has them, running_mean and running_var, or z
 * (x's shape); negative_output >= 0: that output must hold negatives and non-negatives. */
static void forward_case(const char *name, const char *values, const char *inputs,
                         const char *nodes, const char *outputs, int32_t chains,
                         int negative_output) {
  eg_graph *g = eg_test_graph_json(tmpdir, name, "none.safetensors", values, inputs, "", nodes,
                                   outputs);
  if (!g) return;
  float x[N], z[N], w[3] = {4.0f, -1.5f, 2.0f}, b[3] = {0.5f, 0.25f, -0.5f},
                    rm[3] = {0.5f, 0, -1}, rv[3] = {1, 2, 0.5f};
  fill(x, N, 7);
  fill(z, N, 13);
  const eg_tensor x_t = {.dtype = EG_DTYPE_FLOAT32, .rank = 4, .shape = {2, 3, 2, 2}, .data = x};
  eg_tensor in[5];
  for (int32_t i = 0; i < g->n_inputs && i < 5; i++) {
    const char *in_name = g->inputs[i].name;
    float *v = !strcmp(in_name, "w") ? w : !strcmp(in_name, "b") ? b : !strcmp(in_name, "z") ? z
               : !strcmp(in_name, "running_mean") ? rm : rv;
    in[i] = (eg_tensor){.dtype = EG_DTYPE_FLOAT32, .rank = 1, .shape = {3}, .data = v};
    if (!strcmp(in_name, "x") || !strcmp(in_name, "z")) {
      in[i] = x_t;
      in[i].data = v == z ? z : x;
    }
  }
  eg_runtime *unfused = NULL, *fused = run_both(g, in, chains, &unfused);
  if (fused && negative_output >= 0) { /* that reader must see the batch norm's negatives */
    eg_tensor t;
    EG_CHECK(eg_runtime_output(fused, negative_output, &t) == EG_OK);
    int negatives = 0;
    for (int i = 0; i < N; i++) negatives += ((const float *)t.data)[i] < 0.0f;
    EG_CHECK_MSG(negatives > 0 && negatives < N, "%s: output %d has %d negatives of %d", name,
                 negative_output, negatives, N);
  }
  eg_runtime_destroy(fused);
  eg_runtime_destroy(unfused);
  eg_graph_destroy(g);
}

/* native_batch_norm's three results and the getitem of its output */
#define BN3_VALUES BN_VALUES TUPLE(3, "[4, 5, 6]") ", " T(4, XS) ", " T(5, "[3]") ", " \
                   T(6, "[3]") ", " T(7, XS) ", " T(8, XS)
#define BN3_NODES BN_NATIVE ", " GETITEM("y", 3, 0, 7)
#define RELU NODE("relu", "aten.relu.default", "[" V(7) "]", 8)

static void test_forward_fuses(void) {
  forward_case("relu_alone", BN3_VALUES, BN_INPUTS, BN3_NODES ", " RELU, IN("r", 8), 1, -1);
  /* _legit_functional's five results (training, with running statistics) and ReLU6 */
  forward_case("relu6_functional",
               BN_VALUES TUPLE(3, "[4, 5, 6, 11, 12]") ", " T(4, XS) ", " T(5, "[3]") ", "
               T(6, "[3]") ", " T(7, XS) ", " T(8, XS) ", " T(9, "[3]") ", " T(10, "[3]") ", "
               T(11, "[3]") ", " T(12, "[3]") ", " T(13, "[3]"),
               BN_INPUTS ", " IN("running_mean", 9) ", " IN("running_var", 10),
               NODE("bn", "aten._native_batch_norm_legit_functional.default",
                    "[" V(0) ", " V(1) ", " V(2) ", " V(9) ", " V(10) ", true, " F(0.1) ", " F(1e-05) "]", 3)
               ", " GETITEM("y", 3, 0, 7) ", " GETITEM("rm", 3, 3, 13) ", "
               NODE("relu6", "aten.hardtanh.default", "[" V(7) ", " F(0.0) ", " F(6.0) "]", 8),
               IN("r", 8) ", " IN("rm", 13), 1, -1);
}

/* a residual block's end: y + z -> relu */
#define ADD_RELU(first, second) NODE("add", "aten.add.Tensor", "[" V(first) ", " V(second) "]", \
                                     10) ", " NODE("relu", "aten.relu.default", "[" V(10) "]", 8)

static void test_residual(void) {
  /* z exists before the batch norm runs: fused, the add's operands either way round */
  forward_case("residual", BN3_VALUES ", " T(9, XS) ", " T(10, XS), BN_INPUTS ", " IN("z", 9),
               BN3_NODES ", " ADD_RELU(9, 7), IN("r", 8), 1, -1);
  forward_case("residual_swapped", BN3_VALUES ", " T(9, XS) ", " T(10, XS),
               BN_INPUTS ", " IN("z", 9), BN3_NODES ", " ADD_RELU(7, 9), IN("r", 8), 1, -1);
  /* the sum a graph output too */
  forward_case("residual_sum_output", BN3_VALUES ", " T(9, XS) ", " T(10, XS),
               BN_INPUTS ", " IN("z", 9), BN3_NODES ", " ADD_RELU(9, 7),
               IN("r", 8) ", " IN("s", 10), 0, 1);
  /* z computed after the batch norm: it cannot be added in the batch norm's pass */
  forward_case("residual_later", BN3_VALUES ", " T(9, XS) ", " T(10, XS), BN_INPUTS,
               BN3_NODES ", " NODE("z", "aten.neg.default", "[" V(0) "]", 9) ", "
               ADD_RELU(9, 7), IN("r", 8), 0, -1);
}

static void test_forward_not_fused(void) {
  /* the batch norm's output read by a neg too */
  forward_case("other_reader", BN3_VALUES ", " T(9, XS), BN_INPUTS,
               BN3_NODES ", " NODE("neg", "aten.neg.default", "[" V(7) "]", 9) ", " RELU,
               IN("r", 8) ", " IN("n", 9), 0, 1);
  /* the batch norm's output a graph output */
  forward_case("graph_output", BN3_VALUES, BN_INPUTS, BN3_NODES ", " RELU,
               IN("r", 8) ", " IN("y", 7), 0, 1);
}

/* ---- hand-made backward graphs: mask -> native_batch_norm_backward ---- */

#define BWD_VALUES T(0, XS) ", " T(1, XS) ", " T(2, XS) ", " T(3, "[3]") ", " T(4, "[3]") ", " \
                   T(5, "[3]") ", " T(6, XS) ", " TUPLE(7, "[8, 9, 10]") ", " T(8, XS) ", "    \
                   T(9, "[3]") ", " T(10, "[3]") ", " T(11, XS) ", " T(12, "[3]") ", "         \
                   T(13, "[3]")
#define BWD_NODES NODE("bnb", "aten.native_batch_norm_backward.default",                       \
                       "[" V(6) ", " V(1) ", " V(3) ", null, null, " V(4) ", " V(5)            \
                       ", true, " F(1e-05) ", [true, true, true]]", 7) ", "                            \
                  GETITEM("gx", 7, 0, 11) ", " GETITEM("gw", 7, 1, 12) ", "                   \
                  GETITEM("gb", 7, 2, 13)
#define BWD_INPUTS IN("gy", 0) ", " IN("x", 1) ", " IN("a", 2) ", " IN("w", 3) ", "            \
                   IN("mean", 4) ", " IN("invstd", 5)
#define BWD_OUTPUTS IN("gx", 11) ", " IN("gw", 12) ", " IN("gb", 13)

static void backward_case(const char *name, const char *values, const char *mask_node,
                          const char *outputs, int32_t chains) {
  char nodes[2048];
  snprintf(nodes, sizeof nodes, "%s, %s", mask_node, BWD_NODES);
  eg_graph *g = eg_test_graph_json(tmpdir, name, "none.safetensors", values, BWD_INPUTS, "",
                                   nodes, outputs);
  if (!g) return;
  /* a: the activation's output (relu: >= 0, some exactly 0) or input (ReLU6: some exactly 0
   * and 6, the bounds hardtanh_backward excludes) */
  float gy[N], x[N], a[N], w[3] = {1.5f, -0.5f, 2.0f}, mean[3] = {0.1f, -0.2f, 0.3f},
                           invstd[3] = {1.25f, 0.75f, 2.0f};
  fill(gy, N, 3);
  fill(x, N, 5);
  fill(a, N, 9);
  for (int i = 0; i < N; i++) a[i] = i % 5 == 0 ? 0.0f : i % 5 == 1 ? 6.0f : a[i] * 4.0f;
  eg_tensor in[6] = {{.dtype = EG_DTYPE_FLOAT32, .rank = 4, .shape = {2, 3, 2, 2}, .data = gy},
                     {.dtype = EG_DTYPE_FLOAT32, .rank = 4, .shape = {2, 3, 2, 2}, .data = x},
                     {.dtype = EG_DTYPE_FLOAT32, .rank = 4, .shape = {2, 3, 2, 2}, .data = a},
                     {.dtype = EG_DTYPE_FLOAT32, .rank = 1, .shape = {3}, .data = w},
                     {.dtype = EG_DTYPE_FLOAT32, .rank = 1, .shape = {3}, .data = mean},
                     {.dtype = EG_DTYPE_FLOAT32, .rank = 1, .shape = {3}, .data = invstd}};
  eg_runtime *unfused = NULL, *fused = run_both(g, in, chains, &unfused);
  eg_runtime_destroy(fused);
  eg_runtime_destroy(unfused);
  eg_graph_destroy(g);
}

#define THRESHOLD NODE("tb", "aten.threshold_backward.default", "[" V(0) ", " V(2) ", 0]", 6)
#define HARDTANH_BWD NODE("hb", "aten.hardtanh_backward.default", \
                          "[" V(0) ", " V(2) ", " F(0.0) ", " F(6.0) "]", 6)

static void test_backward_fuses(void) {
  backward_case("threshold_alone", BWD_VALUES, THRESHOLD, BWD_OUTPUTS, 1);
  backward_case("hardtanh_alone", BWD_VALUES, HARDTANH_BWD, BWD_OUTPUTS, 1);
}

static void test_backward_not_fused(void) {
  /* the masked gradient read by a neg too: it must be written */
  backward_case("threshold_other_reader", BWD_VALUES ", " T(14, XS),
                THRESHOLD ", " NODE("neg", "aten.neg.default", "[" V(6) "]", 14),
                BWD_OUTPUTS ", " IN("n", 14), 0);
  /* the masked gradient a graph output */
  backward_case("hardtanh_output", BWD_VALUES, HARDTANH_BWD, BWD_OUTPUTS ", " IN("m", 6), 0);
}

/* ---- ReLU6 training: x -> batch norm -> y -> hardtanh(0, 6) -> r; the backward's
 * hardtanh_backward(gy, clone(y), 0, 6) -> native_batch_norm_backward ---- */

#define R6_VALUES BN3_VALUES ", " T(9, XS) ", " T(10, XS) ", " T(11, XS) ", "              \
                  TUPLE(12, "[13, 14, 15]") ", " T(13, XS) ", " T(14, "[3]") ", " T(15, "[3]") \
                  ", " T(16, "[3]") ", " T(17, "[3]") ", " T(18, XS)
#define R6_NODES BN3_NODES ", " NODE("save", "aten.clone.default", "[" V(7) "]", 8) ", "        \
                 NODE("relu6", "aten.hardtanh.default", "[" V(7) ", " F(0.0) ", " F(6.0) "]", 9) \
                 ", " GETITEM("mean", 3, 1, 16) ", " GETITEM("invstd", 3, 2, 17) ", "             \
                 NODE("hb", "aten.hardtanh_backward.default",                                   \
                      "[{\"value\": %s}, " V(8) ", " F(0.0) ", " F(%s) "]", 11) ", "          \
                 NODE("bnb", "aten.native_batch_norm_backward.default",                          \
                      "[" V(11) ", " V(0) ", " V(1) ", null, null, " V(16) ", " V(17)            \
                      ", true, " F(1e-05) ", [true, true, true]]", 12) ", "                      \
                 GETITEM("gx", 12, 0, 18)
#define R6_OUTPUTS IN("r", 9) ", " IN("gx", 18)

/* hb_gy, hb_hi: hardtanh_backward's gradient (a value id) and upper bound; extra_outputs
 * after r and gx. */
static void relu6_case(const char *name, const char *hb_gy, const char *hb_hi,
                       const char *extra_outputs, int32_t chains) {
  char nodes[4096], outputs[256];
  snprintf(nodes, sizeof nodes, R6_NODES, hb_gy, hb_hi);
  snprintf(outputs, sizeof outputs, "%s%s", R6_OUTPUTS, extra_outputs);
  eg_graph *g = eg_test_graph_json(tmpdir, name, "none.safetensors", R6_VALUES,
                                   BN_INPUTS ", " IN("gy", 10), "", nodes, outputs);
  if (!g) return;
  float x[N], w[3] = {4.0f, -1.5f, 8.0f}, b[3] = {0.5f, 0.25f, 3.0f}, gy[N];
  fill(x, N, 7);
  fill(gy, N, 3);
  eg_tensor in[4] = {{.dtype = EG_DTYPE_FLOAT32, .rank = 4, .shape = {2, 3, 2, 2}, .data = x},
                     {.dtype = EG_DTYPE_FLOAT32, .rank = 1, .shape = {3}, .data = w},
                     {.dtype = EG_DTYPE_FLOAT32, .rank = 1, .shape = {3}, .data = b},
                     {.dtype = EG_DTYPE_FLOAT32, .rank = 4, .shape = {2, 3, 2, 2}, .data = gy}};
  eg_runtime *unfused = NULL, *fused = run_both(g, in, chains, &unfused);
  if (fused) { /* the clamp has work at both ends */
    eg_tensor t;
    EG_CHECK(eg_runtime_output(fused, 0, &t) == EG_OK);
    int at_lo = 0, at_hi = 0;
    for (int i = 0; i < N; i++) {
      at_lo += ((const float *)t.data)[i] == 0.0f;
      at_hi += ((const float *)t.data)[i] == 6.0f;
    }
    EG_CHECK_MSG(at_lo > 0 && at_hi > 0, "%s: %d outputs at 0, %d at 6", name, at_lo, at_hi);
  }
  eg_runtime_destroy(fused);
  eg_runtime_destroy(unfused);
  eg_graph_destroy(g);
}

static void test_relu6_training(void) {
  /* the mask reads r: the batch norm's output has no reader left but the hardtanh */
  relu6_case("relu6_step", "10", "6.0", "", 2);
  /* the saved clone a graph output: the batch norm's output must be stored */
  relu6_case("relu6_saved_output", "10", "6.0", ", " IN("saved", 8), 1);
  /* other bounds in the backward: its mask cannot read r, so y is kept */
  relu6_case("relu6_other_bounds", "10", "5.0", "", 1);
  /* the batch norm's output the backward's gradient as well: still read, kept */
  relu6_case("relu6_grad_is_y", "7", "6.0", "", 1);
}

/* ---- the variance statistic: d = x - m, sq = d * d, s = sum(sq, [0, 2, 3]) ---- */

/* x [n, c, h, w] and m of shape `m_shape` (numel c or 1); `extra_values`, `extra_nodes` and
 * `extra_outputs` after s's. fused: the chain must fuse (else it must not). */
static void sq_dev_case(const char *name, int n, int c, int h, int w, const char *m_shape,
                        const char *extra_values, const char *extra_nodes,
                        const char *extra_outputs, bool fused) {
  char values[1024], nodes[2048], outputs[256];
  snprintf(values, sizeof values,
           "{\"id\": 0, \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": "
           "[%d, %d, %d, %d]}, {\"id\": 1, \"kind\": \"tensor\", \"dtype\": \"float32\", "
           "\"shape\": %s}, {\"id\": 2, \"kind\": \"tensor\", \"dtype\": \"float32\", "
           "\"shape\": [%d, %d, %d, %d]}, {\"id\": 3, \"kind\": \"tensor\", \"dtype\": "
           "\"float32\", \"shape\": [%d, %d, %d, %d]}, " T(4, "[%d]") "%s",
           n, c, h, w, m_shape, n, c, h, w, n, c, h, w, c, extra_values);
  snprintf(nodes, sizeof nodes, "%s%s",
           NODE("centered", "aten.sub.Tensor", "[" V(0) ", " V(1) "]", 2) ", "
           NODE("centered_sq", "aten.mul.Tensor", "[" V(2) ", " V(2) "]", 3) ", "
           NODE("var_sum", "aten.sum.dim_IntList", "[" V(3) ", [0, 2, 3]]", 4),
           extra_nodes);
  snprintf(outputs, sizeof outputs, IN("s", 4) "%s", extra_outputs);
  eg_graph *g = eg_test_graph_json(tmpdir, name, "none.safetensors", values,
                                   IN("x", 0) ", " IN("m", 1), "", nodes, outputs);
  if (!g) return;
  const int hw = h * w, numel = n * c * hw, m_numel = (int)eg_value_numel(&g->values[1]);
  const bool along_w = g->values[1].rank == 1 && m_numel > 1; /* else one or one per channel */
  float *x = malloc((size_t)numel * sizeof(float)), *m = malloc((size_t)c * sizeof(float));
  if (!x || !m) abort();
  fill(x, numel, 11);
  for (int k = 0; k < numel; k++) x[k] += (float)(k / hw % c); /* a mean per channel */
  for (int k = 0; k < m_numel; k++) m[k] = (float)k + 0.125f;
  eg_tensor in[2] = {{.dtype = EG_DTYPE_FLOAT32, .rank = 4, .shape = {n, c, h, w}, .data = x},
                     {.dtype = EG_DTYPE_FLOAT32, .rank = g->values[1].rank, .data = m}};
  for (int d = 0; d < g->values[1].rank; d++) in[1].shape[d] = g->values[1].shape[d];
  eg_runtime *unfused = NULL, *rt = run_both(g, in, fused ? 1 : 0, &unfused);
  if (rt && unfused) {
    /* the difference and the square: no bytes where fused */
    for (int32_t v = 2; v <= 3; v++)
      EG_CHECK_MSG((eg_engine_value(rt, v) == NULL) == fused && eg_engine_value(unfused, v),
                   "%s: value %d has %s bytes", name, v, eg_engine_value(rt, v) ? "" : "no");
    /* every image and channel summed: each sum within float rounding of a double sum */
    eg_tensor t;
    EG_CHECK(eg_runtime_output(rt, 0, &t) == EG_OK);
    for (int ch = 0; ch < c; ch++) {
      double want = 0;
      for (int i = 0; i < n; i++)
        for (int k = 0; k < hw; k++) {
          const float d = x[(i * c + ch) * hw + k] - m[m_numel == 1 ? 0 : along_w ? k % w : ch];
          want += (double)(d * d);
        }
      const float got = ((const float *)t.data)[ch];
      EG_CHECK_MSG(fabs(got - want) <= 1e-6 * want + 1e-30, "%s: channel %d sum %.9g, "
                   "expected %.9g", name, ch, got, want);
    }
  }
  eg_runtime_destroy(rt);
  eg_runtime_destroy(unfused);
  eg_graph_destroy(g);
  free(x);
  free(m);
}

static void test_sq_dev(void) {
  /* planes of 49 (one 32-element stretch and a tail), 1280 (two full stretches and a third),
   * 4 (a tail alone) */
  sq_dev_case("sq_dev", 3, 5, 7, 7, "[1, 5, 1, 1]", "", "", "", true);
  sq_dev_case("sq_dev_long", 2, 3, 32, 40, "[1, 3, 1, 1]", "", "", "", true);
  sq_dev_case("sq_dev_short", 4, 6, 2, 2, "[6, 1, 1]", "", "", "", true);
  sq_dev_case("sq_dev_one_mean", 2, 1, 9, 9, "[1]", "", "", "", true);
  /* the difference read by a neg too, or a graph output; the square a graph output */
  sq_dev_case("sq_dev_d_read", 2, 3, 4, 4, "[1, 3, 1, 1]", ", " T(5, "[2, 3, 4, 4]"),
              ", " NODE("neg", "aten.neg.default", "[" V(2) "]", 5), ", " IN("n", 5), false);
  sq_dev_case("sq_dev_d_output", 2, 3, 4, 4, "[1, 3, 1, 1]", "", "", ", " IN("d", 2), false);
  sq_dev_case("sq_dev_sq_output", 2, 3, 4, 4, "[1, 3, 1, 1]", "", "", ", " IN("sq", 3), false);
  /* m along W (x's last dim), not per channel; planes of one element */
  sq_dev_case("sq_dev_along_w", 2, 3, 4, 3, "[3]", "", "", "", false);
  sq_dev_case("sq_dev_hw_one", 2, 3, 1, 1, "[1, 3, 1, 1]", "", "", "", false);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/eg_fuse_XXXXXX");
  if (!mkdtemp(tmpdir)) return 1;
  EG_RUN(test_fixture_step);
  EG_RUN(test_forward_fuses);
  EG_RUN(test_forward_not_fused);
  EG_RUN(test_backward_fuses);
  EG_RUN(test_backward_not_fused);
  EG_RUN(test_relu6_training);
  EG_RUN(test_residual);
  EG_RUN(test_sq_dev);
  char cmd[96];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return eg_test_summary();
}
