/* test_htp_fusion.c — the htp executor plan's fused elementwise groups (exec_plan.h FUSED,
 * layout_pass.h) on hand-built QNN graphs:
 *   - batch norm's apply (x * scale + shift, per-channel operands) and its backward's input
 *     gradient ((g * k - c_mean) - x * c_xc): every op but the last FUSED, no NATIVE bytes,
 *     outputs bit for bit those of the ops run one by one (NaN, infinities, -0, subnormals),
 *     with channels fewer and more than the kernel's block (rows tiled, rows in pieces);
 *   - ReLU6's backward (two comparisons into masks, two Selects): one group, bit for bit;
 *   - no fusion where it must not happen: an intermediate read twice, one that is a graph
 *     output, one the reader broadcasts, a group whose tail writes a mask, a group longer than
 *     the kernel takes, an operand neither dense, per channel nor one element;
 *   - a group's operands are read at its tail: a tensor (and a graph input) read last by a
 *     FUSED op lives until the tail (a tensor made between does not take its bytes), the
 *     executor says so of the input (eg_htp_qnn_executor_input_last_op);
 *   - the rules refuse hand-broken plans (FUSED with two readers, a non-elementwise op, a
 *     group over the kernel's bounds), and the executor with them. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backends/htp/compile/layout_pass.h"
#include "backends/htp/executor.h"
#include "eg_test.h"
#include "eg_test_exec.h"
#include "util/error.h"

#define DIMS(...) ((const uint32_t[]){__VA_ARGS__})
#define RUN EG_HTP_EXEC_RUN
#define FUSED EG_HTP_EXEC_FUSED
#define IN EG_HTP_QNN_TENSOR_APP_WRITE
#define NAT EG_HTP_QNN_TENSOR_NATIVE
#define OUT EG_HTP_QNN_TENSOR_APP_READ

enum { MAX_EL = 2 * 4 * 4 * 1500 };

static float consts[4] = {6.0f, 0.0f, 0.0f, 0.0f}; /* STATIC: max, min, zero */

static int32_t f32(eg_htp_qnn_graph *g, const char *name, eg_htp_qnn_tensor_type type, int rank,
                   const uint32_t *dims) {
  return eg_test_f32(g, name, type, rank, dims, NULL);
}

static int32_t constant(eg_htp_qnn_graph *g, const char *name, int at) {
  return eg_test_f32(g, name, EG_HTP_QNN_TENSOR_STATIC, 1, DIMS(1), &consts[at]);
}

static int32_t mask(eg_htp_qnn_graph *g, const char *name, eg_htp_qnn_tensor_type type, int rank,
                    const uint32_t *dims) {
  const eg_htp_qnn_tensor_desc d = {.name = name, .type = type, .dtype = EG_HTP_QNN_DTYPE_BOOL_8,
                                    .rank = rank, .dims = dims, .key = EG_HTP_QNN_KEY_NONE};
  int32_t id = -1;
  EG_CHECK_MSG(eg_htp_qnn_graph_add_tensor(g, &d, &id) == EG_OK, "%s", eg_last_error());
  return id;
}

/* Op `type` named `name` writing `out` from the tensors after it. */
#define OP(g, name, type, out, ...)                                                          \
  eg_test_op(g, name, type, (int)(sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t)), \
             (const int32_t[]){__VA_ARGS__}, out, 0, NULL)

/* The pass's plan of g, which its rules pass (the caller frees it). */
static eg_htp_exec_plan plan_of(const eg_htp_qnn_graph *g) {
  eg_htp_exec_plan p = {0};
  EG_CHECK_MSG(eg_htp_layout_pass(g, &p) == EG_OK, "%s", eg_last_error());
  char why[512] = "";
  EG_CHECK_MSG(eg_htp_exec_plan_check(g, &p, why, sizeof why), "%s", why);
  return p;
}

/* Whether op k's how in the pass's plan of g is each of hows[0 .. n). */
static bool hows_are(const eg_htp_qnn_graph *g, const int *hows, int n) {
  eg_htp_exec_plan p = plan_of(g);
  bool same = p.n_ops == n;
  for (int k = 0; same && k < n; k++) {
    if (p.ops[k].how != hows[k])
      fprintf(stderr, "  %s op %d: how %d, expected %d\n", eg_htp_qnn_graph_name(g), k,
              p.ops[k].how, hows[k]);
    same = p.ops[k].how == hows[k];
  }
  eg_htp_exec_plan_free(&p);
  return same;
}

#define HOWS(g, ...) hows_are(g, (const int[]){__VA_ARGS__}, \
                              (int)(sizeof((const int[]){__VA_ARGS__}) / sizeof(int)))

/* Floats with the awkward values among them: NaN, +-inf, -0, subnormals, large and small. */
static void fill(float *x, int64_t n, uint32_t seed) {
  static const float odd[] = {NAN, INFINITY, -INFINITY, -0.0f, 1e-40f, -3e-39f, 6.0f, 0.0f,
                              3e38f, -7.5f};
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    x[i] = i % 13 == 5 ? odd[(seed >> 9) % 10] : (float)(seed >> 8) / (float)(1u << 22) - 2.0f;
  }
}

/* Runs g with the pass's plan (planned) or none: inputs ins[i] (tensor in_ids[i], filled),
 * outputs into outs; *native: NATIVE bytes without sharing. */
static void run(const eg_htp_qnn_graph *g, bool planned, int n_in, const int32_t *in_ids,
                float (*ins)[MAX_EL], int n_out, const int32_t *out_ids, float (*outs)[MAX_EL],
                size_t *native) {
  eg_htp_qnn_executor *ex = NULL;
  EG_CHECK_MSG((planned ? eg_test_executor(g, EG_PRECISION_FP32, false, &ex)
                        : eg_htp_qnn_executor_create(g, &ex)) == EG_OK, "%s", eg_last_error());
  if (!ex) return;
  eg_htp_qnn_binding bi[8], bo[8];
  for (int i = 0; i < n_in; i++)
    bi[i] = (eg_htp_qnn_binding){in_ids[i], ins[i], eg_htp_qnn_graph_tensor(g, in_ids[i])->nbytes};
  for (int i = 0; i < n_out; i++)
    bo[i] = (eg_htp_qnn_binding){out_ids[i], outs[i],
                                 eg_htp_qnn_graph_tensor(g, out_ids[i])->nbytes};
  EG_CHECK_MSG(eg_htp_qnn_executor_execute(ex, bi, n_in, bo, n_out) == EG_OK, "%s",
               eg_last_error());
  eg_htp_qnn_executor_stats st;
  eg_htp_qnn_executor_get_stats(ex, &st);
  *native = st.native_sum_bytes;
  eg_htp_qnn_executor_destroy(ex);
}

static float ins[8][MAX_EL], got[4][MAX_EL], want[4][MAX_EL];

/* Whether n floats are the same bits, a NaN matching any NaN: which NaN an operation on NaN
 * operands (or inf - inf) yields depends on the order the compiler gives a commutative op's
 * operands (x86 returns the first NaN operand's payload and sign), so a fused kernel and the
 * ops one by one may differ there between an optimised and a -O0 build. */
static bool same_bits(const float *a, const float *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!(isnan(a[i]) && isnan(b[i])) && memcmp(&a[i], &b[i], sizeof(float)) != 0) return false;
  return true;
}

/* Both ways, the same bytes out; the plan's NATIVE bytes `native`. */
static void alike(const eg_htp_qnn_graph *g, int n_in, const int32_t *in_ids, int n_out,
                  const int32_t *out_ids, size_t native) {
  for (int i = 0; i < n_in; i++) fill(ins[i], MAX_EL, 17u * (uint32_t)i + 3u);
  size_t planned = 1, unplanned = 0;
  memset(got, 0x5a, sizeof got);
  memset(want, 0xa5, sizeof want);
  run(g, true, n_in, in_ids, ins, n_out, out_ids, got, &planned);
  run(g, false, n_in, in_ids, ins, n_out, out_ids, want, &unplanned);
  EG_CHECK_MSG(planned == native && unplanned > planned, "%s: NATIVE bytes %zu planned, %zu "
               "not: want %zu planned", eg_htp_qnn_graph_name(g), planned, unplanned, native);
  for (int o = 0; o < n_out; o++) {
    const size_t nb = eg_htp_qnn_graph_tensor(g, out_ids[o])->nbytes;
    EG_CHECK_MSG(same_bits(got[o], want[o], nb / sizeof(float)), "%s: output %d differs",
                 eg_htp_qnn_graph_name(g), o);
  }
}

/* y = x * scale + shift; dx = (g * k - c_mean) - x * c_xc ([2, 4, 4, c], per-channel vectors). */
static void test_batch_norm(uint32_t c) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create(c > 1024 ? "bn_wide" : "bn", &g) == EG_OK);
  const uint32_t *d = DIMS(2, 4, 4, c), *v = DIMS(c);
  const int32_t x = f32(g, "x", IN, 4, d), gr = f32(g, "g", IN, 4, d);
  const int32_t scale = f32(g, "scale", IN, 1, v), shift = f32(g, "shift", IN, 1, v),
                k = f32(g, "k", IN, 1, v), cm = f32(g, "c_mean", IN, 1, v),
                cxc = f32(g, "c_xc", IN, 4, DIMS(1, 1, 1, c));
  const int32_t s = f32(g, "s", NAT, 4, d), y = f32(g, "y", OUT, 4, d);
  const int32_t gk = f32(g, "gk", NAT, 4, d), xc = f32(g, "xc", NAT, 4, d),
                gkc = f32(g, "gkc", NAT, 4, d), dx = f32(g, "dx", OUT, 4, d);
  OP(g, "s", EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, s, x, scale);
  OP(g, "y", EG_HTP_QNN_OP_ELEMENT_WISE_ADD, y, s, shift);
  OP(g, "gk", EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, gk, gr, k);
  OP(g, "xc", EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, xc, x, cxc);
  OP(g, "gkc", EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, gkc, gk, cm);
  OP(g, "dx", EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, dx, gkc, xc);
  EG_CHECK(HOWS(g, FUSED, RUN, FUSED, FUSED, FUSED, RUN));
  alike(g, 7, (const int32_t[]){x, gr, scale, shift, k, cm, cxc}, 2, (const int32_t[]){y, dx}, 0);
  eg_htp_qnn_graph_destroy(g);
}

static void test_batch_norm_narrow(void) { test_batch_norm(16); }
static void test_batch_norm_wide(void) { test_batch_norm(1500); }

/* ReLU6 backward: dx = x <= 0 ? 0 : (x >= 6 ? 0 : g), masks BOOL_8. */
static void test_relu6_backward(void) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("relu6_bwd", &g) == EG_OK);
  const uint32_t *d = DIMS(2, 3, 5, 40);
  const int32_t x = f32(g, "x", IN, 4, d), gr = f32(g, "g", IN, 4, d);
  const int32_t hi = constant(g, "max", 0), lo = constant(g, "min", 1),
                zero = constant(g, "zero", 2);
  const int32_t ge = mask(g, "ge", NAT, 4, d), le = mask(g, "le", NAT, 4, d);
  const int32_t below = f32(g, "below", NAT, 4, d), dx = f32(g, "dx", OUT, 4, d);
  OP(g, "ge", EG_HTP_QNN_OP_ELEMENT_WISE_GREATER_EQUAL, ge, x, hi);
  OP(g, "below", EG_HTP_QNN_OP_ELEMENT_WISE_SELECT, below, ge, zero, gr);
  OP(g, "le", EG_HTP_QNN_OP_ELEMENT_WISE_LESS_EQUAL, le, x, lo);
  OP(g, "dx", EG_HTP_QNN_OP_ELEMENT_WISE_SELECT, dx, le, zero, below);
  EG_CHECK(HOWS(g, FUSED, FUSED, FUSED, RUN));
  alike(g, 2, (const int32_t[]){x, gr}, 1, (const int32_t[]){dx}, 0);
  eg_htp_qnn_graph_destroy(g);
}

/* s = x * w (s of type s_type), y = s + w ([2, 4, 4, 16], w [16]); with `neg`, z = -s too. */
static eg_htp_qnn_graph *mul_add(const char *name, eg_htp_qnn_tensor_type s_type, bool neg) {
  const uint32_t *d = DIMS(2, 4, 4, 16);
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create(name, &g) == EG_OK);
  const int32_t x = f32(g, "x", IN, 4, d), w = f32(g, "w", IN, 1, DIMS(16)),
                s = f32(g, "s", s_type, 4, d), y = f32(g, "y", OUT, 4, d);
  OP(g, "s", EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, s, x, w);
  OP(g, "y", EG_HTP_QNN_OP_ELEMENT_WISE_ADD, y, s, w);
  if (neg) OP(g, "z", EG_HTP_QNN_OP_ELEMENT_WISE_NEG, f32(g, "z", OUT, 4, d), s);
  return g;
}

/* Intermediates that must stay tensors, and groups the kernel does not take. */
static void test_not_fused(void) {
  const uint32_t *d = DIMS(2, 4, 4, 16), *v = DIMS(16);
  eg_htp_qnn_graph *g = mul_add("fused", NAT, false); /* the control: s fused */
  EG_CHECK(HOWS(g, FUSED, RUN));
  eg_htp_qnn_graph_destroy(g);
  g = mul_add("two_readers", NAT, true); /* s read twice */
  EG_CHECK(HOWS(g, RUN, RUN, RUN));
  eg_htp_qnn_graph_destroy(g);
  g = mul_add("output", OUT, false); /* s a graph output */
  EG_CHECK(HOWS(g, RUN, RUN));
  eg_htp_qnn_graph_destroy(g);
  int32_t x, w, s, y;
  /* s [16], broadcast by its reader over [2, 4, 4, 16] */
  EG_CHECK(eg_htp_qnn_graph_create("broadcast", &g) == EG_OK);
  x = f32(g, "x", IN, 4, d), w = f32(g, "w", IN, 1, v), s = f32(g, "s", NAT, 1, v);
  y = f32(g, "y", OUT, 4, d);
  OP(g, "s", EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, s, w, w);
  OP(g, "y", EG_HTP_QNN_OP_ELEMENT_WISE_ADD, y, x, s);
  EG_CHECK(HOWS(g, RUN, RUN));
  eg_htp_qnn_graph_destroy(g);
  /* the group's last op writes a mask */
  EG_CHECK(eg_htp_qnn_graph_create("mask_tail", &g) == EG_OK);
  x = f32(g, "x", IN, 4, d), s = f32(g, "s", NAT, 4, d);
  const int32_t zero = constant(g, "zero", 2), m = mask(g, "m", OUT, 4, d);
  OP(g, "s", EG_HTP_QNN_OP_ELEMENT_WISE_NEG, s, x);
  OP(g, "m", EG_HTP_QNN_OP_ELEMENT_WISE_GREATER_EQUAL, m, s, zero);
  EG_CHECK(HOWS(g, RUN, RUN));
  eg_htp_qnn_graph_destroy(g);
  /* an operand [2, 1, 1, 16]: neither dense, per channel nor one element */
  EG_CHECK(eg_htp_qnn_graph_create("odd_operand", &g) == EG_OK);
  x = f32(g, "x", IN, 4, d), w = f32(g, "w", IN, 4, DIMS(2, 1, 1, 16)), s = f32(g, "s", NAT, 4, d);
  y = f32(g, "y", OUT, 4, d);
  OP(g, "s", EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, s, x, w);
  OP(g, "y", EG_HTP_QNN_OP_RELU, y, s);
  EG_CHECK(HOWS(g, RUN, RUN));
  eg_htp_qnn_graph_destroy(g);
}

/* A chain of n Negs and Relus: longer than the kernel's steps, it runs op by op. */
static eg_htp_qnn_graph *chain_graph(int n, int32_t *x, int32_t *y) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("long_chain", &g) == EG_OK);
  static const char *const names[] = {"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"};
  int32_t at = *x = f32(g, "x", IN, 2, DIMS(8, 100));
  for (int k = 0; k < n; k++) {
    const int32_t next = f32(g, names[k], k == n - 1 ? OUT : NAT, 2, DIMS(8, 100));
    OP(g, names[k], k % 2 ? EG_HTP_QNN_OP_RELU : EG_HTP_QNN_OP_ELEMENT_WISE_NEG, next, at);
    at = next;
  }
  *y = at;
  return g;
}

static void test_group_bounds(void) {
  int32_t x, y;
  eg_htp_qnn_graph *g = chain_graph(EG_EW_CHAIN_MAX_STEPS, &x, &y);
  EG_CHECK(HOWS(g, FUSED, FUSED, FUSED, FUSED, FUSED, FUSED, FUSED, RUN));
  alike(g, 1, &x, 1, &y, 0);
  eg_htp_qnn_graph_destroy(g);
  g = chain_graph(EG_EW_CHAIN_MAX_STEPS + 1, &x, &y);
  EG_CHECK(HOWS(g, RUN, RUN, RUN, RUN, RUN, RUN, RUN, RUN, RUN));
  eg_htp_exec_plan p = plan_of(g);
  for (int k = 0; k < EG_EW_CHAIN_MAX_STEPS; k++) p.ops[k].how = FUSED;
  char why[512] = "";
  EG_CHECK_MSG(!eg_htp_exec_plan_check(g, &p, why, sizeof why) &&
               strstr(why, "the tail of a group of elementwise ops"), "%s", why);
  eg_htp_exec_plan_free(&p);
  eg_htp_qnn_graph_destroy(g);
}

/* a = Sigmoid(x); s = Mul(a, x2) (FUSED: a and the input x2 read last here); b = Tanh(x),
 * c = Sigmoid(b) (made after s, before the tail); y = Add(s, c): a and x2 must live until y. */
static void test_leaves_live_to_the_tail(void) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("late_leaves", &g) == EG_OK);
  const uint32_t *d = DIMS(4, 250);
  const int32_t x = f32(g, "x", IN, 2, d), x2 = f32(g, "x2", IN, 2, d);
  const int32_t a = f32(g, "a", NAT, 2, d), s = f32(g, "s", NAT, 2, d), b = f32(g, "b", NAT, 2, d),
                c = f32(g, "c", NAT, 2, d), y = f32(g, "y", OUT, 2, d);
  OP(g, "a", EG_HTP_QNN_OP_SIGMOID, a, x);
  OP(g, "s", EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, s, a, x2);
  OP(g, "b", EG_HTP_QNN_OP_TANH, b, x);
  OP(g, "c", EG_HTP_QNN_OP_SIGMOID, c, b);
  OP(g, "y", EG_HTP_QNN_OP_ELEMENT_WISE_ADD, y, s, c);
  EG_CHECK(HOWS(g, RUN, FUSED, RUN, RUN, RUN));
  alike(g, 2, (const int32_t[]){x, x2}, 1, &y, 3 * 4032); /* 4000 bytes, 64-aligned */
  eg_htp_qnn_executor *ex = NULL;
  EG_CHECK(eg_test_executor(g, EG_PRECISION_FP32, false, &ex) == EG_OK);
  EG_CHECK(ex && eg_htp_qnn_executor_input_last_op(ex, x2) == 4 &&
           eg_htp_qnn_executor_input_last_op(ex, x) == 2);
  eg_htp_qnn_executor_destroy(ex);
  eg_htp_qnn_graph_destroy(g);
}

/* Reduce op `type` of x over dims `mask` (bit d: dim d) into y. */
static void reduce(eg_htp_qnn_graph *g, const char *name, eg_htp_qnn_op type, int32_t x,
                   uint32_t mask, int32_t y) {
  uint32_t axes[4], n = 0;
  for (uint32_t d = 0; d < 4; d++)
    if (mask >> d & 1u) axes[n++] = d;
  const eg_htp_qnn_param p = eg_htp_qnn_param_u32_tensor("axes", 1, (const uint32_t[]){n}, axes);
  eg_test_op(g, name, type, 1, &x, y, 1, &p);
}

/* Batch norm's statistics, as the lowering writes them: xc = x - mean (read twice), the
 * variance ReduceMean(xc * xc), and the running variance's ReduceSum((x - mean) * (x - mean))
 * ([2, 4, 4, c], mean [c]): the Mul (and Sub) FUSED into the reductions, no NATIVE bytes,
 * the sums bit for bit those of the ops run one by one (channels fewer and more than the
 * kernel's block). */
static void test_reduce_tail(uint32_t c) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create(c > 1024 ? "bn_stats_wide" : "bn_stats", &g) == EG_OK);
  const uint32_t *d = DIMS(2, 4, 4, c), *v = DIMS(c);
  const int32_t x = f32(g, "x", IN, 4, d), mean = f32(g, "mean", IN, 1, v);
  const int32_t xc = f32(g, "xc", OUT, 4, d), sq = f32(g, "sq", NAT, 4, d),
                var = f32(g, "var", OUT, 1, v), ce = f32(g, "ce", NAT, 4, d),
                ce_sq = f32(g, "ce_sq", NAT, 4, d), var_sum = f32(g, "var_sum", OUT, 1, v);
  OP(g, "xc", EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, xc, x, mean);
  OP(g, "sq", EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, sq, xc, xc);
  reduce(g, "var", EG_HTP_QNN_OP_REDUCE_MEAN, sq, 7u, var);
  OP(g, "ce", EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, ce, x, mean);
  OP(g, "ce_sq", EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, ce_sq, ce, ce);
  reduce(g, "var_sum", EG_HTP_QNN_OP_REDUCE_SUM, ce_sq, 7u, var_sum);
  EG_CHECK(HOWS(g, RUN, FUSED, RUN, RUN, FUSED, RUN)); /* ce read twice by its Mul */
  alike(g, 2, (const int32_t[]){x, mean}, 3, (const int32_t[]){xc, var, var_sum}, 64 * ((c * 128 + 63) / 64));
  eg_htp_qnn_graph_destroy(g);
}

static void test_reduce_tail_narrow(void) { test_reduce_tail(16); }
static void test_reduce_tail_wide(void) { test_reduce_tail(1500); }

/* s = x * x reduced otherwise: over dims [1, 2] (per image and channel), by ReduceMax, or with
 * s read by a second op: s stays a tensor. */
static void test_reduce_not_fused(void) {
  const uint32_t *d = DIMS(2, 4, 4, 16);
  for (int k = 0; k < 3; k++) {
    eg_htp_qnn_graph *g;
    EG_CHECK(eg_htp_qnn_graph_create("reduce_not_fused", &g) == EG_OK);
    const int32_t x = f32(g, "x", IN, 4, d), s = f32(g, "s", NAT, 4, d);
    const int32_t y = f32(g, "y", OUT, k == 0 ? 2 : 1, k == 0 ? DIMS(2, 16) : DIMS(16));
    OP(g, "s", EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, s, x, x);
    reduce(g, "y", k == 1 ? EG_HTP_QNN_OP_REDUCE_MAX : EG_HTP_QNN_OP_REDUCE_SUM, s,
           k == 0 ? 6u : 7u, y);
    if (k == 2) {
      OP(g, "z", EG_HTP_QNN_OP_RELU, f32(g, "z", OUT, 4, d), s);
      EG_CHECK(HOWS(g, RUN, RUN, RUN));
    } else {
      EG_CHECK(HOWS(g, RUN, RUN));
    }
    eg_htp_qnn_graph_destroy(g);
  }
}

/* Hand-broken plans: refused by the rules and by the executor. */
static void test_rules(void) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("rules", &g) == EG_OK);
  const uint32_t *d = DIMS(2, 4, 4, 16);
  const int32_t x = f32(g, "x", IN, 4, d), s = f32(g, "s", NAT, 4, d), t = f32(g, "t", NAT, 4, d);
  const int32_t y = f32(g, "y", OUT, 4, d), z = f32(g, "z", OUT, 4, d);
  OP(g, "s", EG_HTP_QNN_OP_SIGMOID, s, x);
  OP(g, "t", EG_HTP_QNN_OP_ELEMENT_WISE_NEG, t, s);
  OP(g, "y", EG_HTP_QNN_OP_ELEMENT_WISE_ADD, y, t, s);
  OP(g, "z", EG_HTP_QNN_OP_RELU, z, s);
  EG_CHECK(HOWS(g, RUN, FUSED, RUN, RUN));
  eg_htp_exec_plan p = plan_of(g);
  for (int c = 0; c < 2; c++) {
    p.ops[1].how = RUN;
    p.ops[c ? 0 : 2].how = FUSED; /* a Sigmoid; an Add whose output is a graph output */
    char why[512] = "";
    EG_CHECK_MSG(!eg_htp_exec_plan_check(g, &p, why, sizeof why) && strstr(why, "FUSED:"),
                 "%s", why);
    eg_htp_qnn_executor *ex = NULL;
    EG_CHECK(eg_htp_qnn_executor_create_plan(g, &p, EG_PRECISION_FP32, false, &ex) ==
                 EG_ERR_INVALID && !ex && strstr(eg_last_error(), "FUSED:"));
    p.ops[c ? 0 : 2].how = RUN;
  }
  eg_htp_exec_plan_free(&p);
  eg_htp_qnn_graph_destroy(g);
}

int main(void) {
  EG_RUN(test_batch_norm_narrow);
  EG_RUN(test_batch_norm_wide);
  EG_RUN(test_relu6_backward);
  EG_RUN(test_not_fused);
  EG_RUN(test_group_bounds);
  EG_RUN(test_leaves_live_to_the_tail);
  EG_RUN(test_rules);
  EG_RUN(test_reduce_tail_narrow);
  EG_RUN(test_reduce_tail_wide);
  EG_RUN(test_reduce_not_fused);
  return eg_test_summary();
}
