/* test_htp_layout_pass.c — the htp layout pass alone (backends/htp/compile/layout_pass.h):
 * hand-built QNN graphs, the plan it makes for them, and the plan's rules (exec_plan.h).
 *
 *   - a frozen conv's input gradient (STATIC HWIO W -> Transpose [0,1,3,2] -> TransposeConv2d):
 *     the Transpose skipped, the TransposeConv2d reading W as OI; folded only when another
 *     reader needs the transposed copy, or the TransposeConv2d has groups, or it reads it as
 *     its input; a Transpose of a folded one folded too; nothing for a trainable W;
 *   - a trainable conv's step (APP_WRITE OIHW W, the lowering's Transposes): the weight's
 *     Transposes skipped, Conv2d and TransposeConv2d reading OIHW, exactly when their pixels are
 *     at most EG_HTP_OIHW_PIXELS_PER_C times their channels (the bound itself and one past it);
 *     the weight gradient's Transpose [3,0,1,2] written by its Conv2d unless the Conv2d's output
 *     has another reader or the Conv2d runs by Winograd;
 *   - a Reshape of a NATIVE tensor or of a graph input is ALIAS (its output is its input's
 *     bytes), one into a graph output runs; the aliased input's bytes live until the output's
 *     last reader (a tensor made after the Reshape does not take them; the executor says how
 *     long a graph input's buffer is read: eg_htp_qnn_executor_input_last_op), and the executor
 *     gives bit for bit what it gives running every op, with the aliases' bytes fewer;
 *   - every plan the pass makes passes eg_htp_exec_plan_check, which refuses hand-broken ones
 *     with the rule, and the executor refuses a plan whose forms its kernel does not take. */
#include <stdint.h>
#include <string.h>

#include "backends/htp/executor.h"
#include "backends/htp/compile/layout_pass.h"
#include "eg_test.h"
#include "eg_test_exec.h"
#include "util/error.h"

#define DIMS(...) ((const uint32_t[]){__VA_ARGS__})
#define PERM(...) eg_htp_qnn_param_u32_tensor("perm", 1, DIMS(4), DIMS(__VA_ARGS__))

static float weights[4096]; /* STATIC bytes (their values do not matter to the pass) */

/* A [d0, d1, d2, d3] tensor; STATIC ones hold `weights`. */
static int32_t tensor(eg_htp_qnn_graph *g, const char *name, eg_htp_qnn_tensor_type type,
                      const uint32_t *dims) {
  EG_CHECK(type != EG_HTP_QNN_TENSOR_STATIC ||
           (size_t)dims[0] * dims[1] * dims[2] * dims[3] <= sizeof weights / sizeof weights[0]);
  return eg_test_f32(g, name, type, 4, dims, type == EG_HTP_QNN_TENSOR_STATIC ? weights : NULL);
}

#define op(...) eg_test_op(__VA_ARGS__)

static eg_htp_qnn_param pair(const char *name, uint32_t a, uint32_t b) {
  return eg_htp_qnn_param_u32_tensor(name, 1, DIMS(2), DIMS(a, b));
}

static eg_htp_qnn_param pads(uint32_t p) {
  return eg_htp_qnn_param_u32_tensor("pad_amount", 2, DIMS(2, 2), DIMS(p, p, p, p));
}

/* The pass's plan of g, checked by the rules (the caller frees it). */
static eg_htp_exec_plan plan_of(const eg_htp_qnn_graph *g) {
  eg_htp_exec_plan p = {0};
  EG_CHECK_MSG(eg_htp_layout_pass(g, &p) == EG_OK, "%s", eg_last_error());
  char why[512] = "";
  EG_CHECK_MSG(p.n_ops == eg_htp_qnn_graph_num_ops(g) &&
                   eg_htp_exec_plan_check(g, &p, why, sizeof why),
               "%s: the pass's own plan breaks a rule: %s", eg_htp_qnn_graph_name(g), why);
  return p;
}

static bool is(const eg_htp_exec_plan *p, int32_t k, eg_htp_exec_how how, eg_htp_filter_read read,
               int32_t filter_src, int32_t y_dst) {
  const eg_htp_exec_op *e = &p->ops[k];
  const bool same = e->how == how && e->filter_read == read && e->filter_src == filter_src &&
                    e->y_dst == y_dst;
  if (!same)
    fprintf(stderr, "  op %d: how %d read %d filter_src %d y_dst %d; expected %d %d %d %d\n",
            (int)k, e->how, e->filter_read, (int)e->filter_src, (int)e->y_dst, (int)how,
            (int)read, (int)filter_src, (int)y_dst);
  return same;
}

#define RUN EG_HTP_EXEC_RUN
#define FOLD EG_HTP_EXEC_FOLD
#define SKIP EG_HTP_EXEC_SKIP
#define ALIAS EG_HTP_EXEC_ALIAS
#define AS_IS EG_HTP_FILTER_READ_AS_IS
#define OI EG_HTP_FILTER_READ_OI
#define OIHW EG_HTP_FILTER_READ_OIHW

/* ---- a frozen conv's input gradient ---- */

typedef enum frozen_variant {
  FROZEN_PLAIN,       /* the lowering's composite */
  FROZEN_TWO_TCONVS,  /* two TransposeConv2d read the transposed weight */
  FROZEN_SECOND_USE,  /* an ElementWiseAdd reads it too */
  FROZEN_GROUPS,      /* the TransposeConv2d has group 2 */
  FROZEN_AS_INPUT,    /* a TransposeConv2d reads it as its input 0 too */
  FROZEN_TRAINABLE,   /* W is APP_WRITE */
  FROZEN_OTHER_PERM,  /* Transpose [1,0,3,2] */
  FROZEN_CHAIN        /* a Transpose of the folded Transpose */
} frozen_variant;

/* W [3,3,4,8] HWIO -> Transpose -> w_t [3,3,8,4] -> TransposeConv2d(gy [1,5,5,8]) -> gx [1,5,5,4]
 * (op 0 the Transpose, op 1 the TransposeConv2d), with the variant's change. */
static void check_frozen(frozen_variant v) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("frozen", &g) == EG_OK);
  const bool groups = v == FROZEN_GROUPS, other = v == FROZEN_OTHER_PERM;
  const int32_t w = tensor(g, "w", v == FROZEN_TRAINABLE ? EG_HTP_QNN_TENSOR_APP_WRITE
                                                          : EG_HTP_QNN_TENSOR_STATIC,
                           DIMS(3, 3, 4, 8));
  const int32_t wt = tensor(g, "w_t", EG_HTP_QNN_TENSOR_NATIVE, DIMS(3, 3, 8, 4));
  const int32_t gy = tensor(g, "gy", EG_HTP_QNN_TENSOR_APP_WRITE, DIMS(1, 5, 5, 8));
  const int32_t gx = tensor(g, "gx", EG_HTP_QNN_TENSOR_APP_READ, DIMS(1, 5, 5, groups ? 8 : 4));
  const eg_htp_qnn_param perm = other ? PERM(1, 0, 3, 2) : PERM(0, 1, 3, 2);
  const eg_htp_qnn_param tp[4] = {pair("stride", 1, 1), pads(1), pair("output_padding", 0, 0),
                              eg_htp_qnn_param_u32("group", groups ? 2 : 1)};
  op(g, "w_t", EG_HTP_QNN_OP_TRANSPOSE, 1, &w, wt, 1, &perm);
  op(g, "dgrad", EG_HTP_QNN_OP_TRANSPOSE_CONV_2D, 2, (const int32_t[]){gy, wt}, gx, 4, tp);
  if (v == FROZEN_TWO_TCONVS) {
    const int32_t gx2 = tensor(g, "gx2", EG_HTP_QNN_TENSOR_APP_READ, DIMS(1, 5, 5, 4));
    op(g, "dgrad2", EG_HTP_QNN_OP_TRANSPOSE_CONV_2D, 2, (const int32_t[]){gy, wt}, gx2, 4, tp);
  } else if (v == FROZEN_SECOND_USE) {
    const int32_t s = tensor(g, "w_twice", EG_HTP_QNN_TENSOR_APP_READ, DIMS(3, 3, 8, 4));
    op(g, "w_twice", EG_HTP_QNN_OP_ELEMENT_WISE_ADD, 2, (const int32_t[]){wt, wt}, s, 0, NULL);
  } else if (v == FROZEN_AS_INPUT) {
    const int32_t f = tensor(g, "f", EG_HTP_QNN_TENSOR_STATIC, DIMS(1, 1, 4, 4));
    const int32_t y = tensor(g, "odd", EG_HTP_QNN_TENSOR_APP_READ, DIMS(3, 3, 8, 4));
    const eg_htp_qnn_param p1[3] = {pair("stride", 1, 1), pads(0), pair("output_padding", 0, 0)};
    op(g, "odd", EG_HTP_QNN_OP_TRANSPOSE_CONV_2D, 2, (const int32_t[]){wt, f}, y, 3, p1);
  } else if (v == FROZEN_CHAIN) {
    const int32_t back = tensor(g, "w_back", EG_HTP_QNN_TENSOR_NATIVE, DIMS(3, 3, 4, 8));
    const int32_t y = tensor(g, "w_back_out", EG_HTP_QNN_TENSOR_APP_READ, DIMS(3, 3, 4, 8));
    op(g, "w_back", EG_HTP_QNN_OP_TRANSPOSE, 1, &wt, back, 1, &perm);
    op(g, "w_back_out", EG_HTP_QNN_OP_ELEMENT_WISE_ADD, 2, (const int32_t[]){back, back}, y, 0,
       NULL);
  }
  eg_htp_exec_plan p = plan_of(g);
  switch (v) {
  case FROZEN_PLAIN:
    EG_CHECK(is(&p, 0, SKIP, AS_IS, -1, -1) && is(&p, 1, RUN, OI, w, -1));
    break;
  case FROZEN_TWO_TCONVS:
    EG_CHECK(is(&p, 0, SKIP, AS_IS, -1, -1) && is(&p, 1, RUN, OI, w, -1) &&
             is(&p, 2, RUN, OI, w, -1));
    break;
  case FROZEN_SECOND_USE:
  case FROZEN_GROUPS:
  case FROZEN_AS_INPUT:
  case FROZEN_OTHER_PERM:
    EG_CHECK(is(&p, 0, FOLD, AS_IS, -1, -1) && is(&p, 1, RUN, AS_IS, -1, -1));
    break;
  case FROZEN_TRAINABLE:
    EG_CHECK(is(&p, 0, RUN, AS_IS, -1, -1) && is(&p, 1, RUN, AS_IS, -1, -1));
    break;
  case FROZEN_CHAIN: /* w_t folded for its two readers, w_back folded from it */
    EG_CHECK(is(&p, 0, FOLD, AS_IS, -1, -1) && is(&p, 1, RUN, AS_IS, -1, -1) &&
             is(&p, 2, FOLD, AS_IS, -1, -1) && is(&p, 3, RUN, AS_IS, -1, -1));
    break;
  }
  eg_htp_exec_plan_free(&p);
  eg_htp_qnn_graph_destroy(g);
}

static void test_frozen_filter(void) {
  for (int v = FROZEN_PLAIN; v <= FROZEN_CHAIN; v++) check_frozen((frozen_variant)v);
}

/* ---- a trainable conv's step ---- */

typedef struct step_case {
  uint32_t n, cin, h, cout, groups;
  bool gw_read_twice; /* the weight gradient's NHWC result has a second reader */
} step_case;

typedef struct step_graph {
  eg_htp_qnn_graph *g;
  int32_t w, gw;
  uint32_t ho;
} step_graph;

/* The lowering's trainable conv step (3x3, stride 1, pad 1), as test_htp_executor's:
 *   op 0 w_to_hwio [2,3,1,0], 1 conv, 2 w_to_hwoi [2,3,0,1], 3 dgrad, 4 x_t, 5 gy_t, 6 wgrad,
 *   7 gw_to_oihw [3,0,1,2] (8: the weight gradient's Conv2d output read again). */
static step_graph build_step(const step_case *c) {
  step_graph s = {.ho = c->h};
  const uint32_t n = c->n, ci = c->cin, h = c->h, co = c->cout, gi = c->cin / c->groups;
  EG_CHECK(eg_htp_qnn_graph_create("step", &s.g) == EG_OK);
  eg_htp_qnn_graph *g = s.g;
  const int32_t x = tensor(g, "x", EG_HTP_QNN_TENSOR_APP_WRITE, DIMS(n, h, h, ci));
  s.w = tensor(g, "w", EG_HTP_QNN_TENSOR_APP_WRITE, DIMS(co, gi, 3, 3));
  const int32_t gy = tensor(g, "gy", EG_HTP_QNN_TENSOR_APP_WRITE, DIMS(n, h, h, co));
  const int32_t y = tensor(g, "y", EG_HTP_QNN_TENSOR_APP_READ, DIMS(n, h, h, co));
  const int32_t gx = tensor(g, "gx", EG_HTP_QNN_TENSOR_APP_READ, DIMS(n, h, h, ci));
  s.gw = tensor(g, "gw", EG_HTP_QNN_TENSOR_APP_READ, DIMS(co, ci, 3, 3));
  const int32_t hwio = tensor(g, "w_hwio", EG_HTP_QNN_TENSOR_NATIVE, DIMS(3, 3, gi, co));
  const int32_t hwoi = tensor(g, "w_hwoi", EG_HTP_QNN_TENSOR_NATIVE, DIMS(3, 3, co, gi));
  const int32_t xt = tensor(g, "x_t", EG_HTP_QNN_TENSOR_NATIVE, DIMS(ci, h, h, n));
  const int32_t gyt = tensor(g, "gy_t", EG_HTP_QNN_TENSOR_NATIVE, DIMS(h, h, n, co));
  const int32_t gwc = tensor(g, "gw_ihwo", EG_HTP_QNN_TENSOR_NATIVE, DIMS(ci, 3, 3, co));
  const eg_htp_qnn_param p_hwio = PERM(2, 3, 1, 0), p_hwoi = PERM(2, 3, 0, 1),
                     p_xt = PERM(3, 1, 2, 0), p_gyt = PERM(1, 2, 0, 3),
                     p_oihw = PERM(3, 0, 1, 2);
  const eg_htp_qnn_param cp[3] = {pair("stride", 1, 1), pads(1),
                                  eg_htp_qnn_param_u32("group", c->groups)};
  const eg_htp_qnn_param tp[4] = {cp[0], cp[1], pair("output_padding", 0, 0), cp[2]};
  const eg_htp_qnn_param wp[3] = {pair("stride", 1, 1), pair("dilation", 1, 1), pads(1)};
  op(g, "w_to_hwio", EG_HTP_QNN_OP_TRANSPOSE, 1, &s.w, hwio, 1, &p_hwio);
  op(g, "conv", EG_HTP_QNN_OP_CONV_2D, 2, (const int32_t[]){x, hwio}, y, 3, cp);
  op(g, "w_to_hwoi", EG_HTP_QNN_OP_TRANSPOSE, 1, &s.w, hwoi, 1, &p_hwoi);
  op(g, "dgrad", EG_HTP_QNN_OP_TRANSPOSE_CONV_2D, 2, (const int32_t[]){gy, hwoi}, gx, 4, tp);
  op(g, "x_t", EG_HTP_QNN_OP_TRANSPOSE, 1, &x, xt, 1, &p_xt);
  op(g, "gy_t", EG_HTP_QNN_OP_TRANSPOSE, 1, &gy, gyt, 1, &p_gyt);
  op(g, "wgrad", EG_HTP_QNN_OP_CONV_2D, 2, (const int32_t[]){xt, gyt}, gwc, 3, wp);
  op(g, "gw_to_oihw", EG_HTP_QNN_OP_TRANSPOSE, 1, &gwc, s.gw, 1, &p_oihw);
  if (c->gw_read_twice) {
    const int32_t again = tensor(g, "gw_again", EG_HTP_QNN_TENSOR_APP_READ, DIMS(ci, 3, 3, co));
    op(g, "gw_again", EG_HTP_QNN_OP_ELEMENT_WISE_ADD, 2, (const int32_t[]){gwc, gwc}, again, 0,
       NULL);
  }
  return s;
}

static void check_step(const step_case *c, bool oihw, bool cnhw) {
  step_graph s = build_step(c);
  eg_htp_exec_plan p = plan_of(s.g);
  char what[128];
  snprintf(what, sizeof what, "step n%u c%u %ux%u ->%u g%u%s", c->n, c->cin, c->h, c->h, c->cout,
           c->groups, c->gw_read_twice ? " gw read twice" : "");
  const eg_htp_exec_how w_how = oihw ? SKIP : RUN;
  EG_CHECK_MSG(is(&p, 0, w_how, AS_IS, -1, -1) && is(&p, 2, w_how, AS_IS, -1, -1), "%s: the "
               "weight's Transposes should %s", what, oihw ? "be skipped" : "run");
  EG_CHECK_MSG(is(&p, 1, RUN, oihw ? OIHW : AS_IS, oihw ? s.w : -1, -1) &&
               is(&p, 3, RUN, oihw ? OIHW : AS_IS, oihw ? s.w : -1, -1),
               "%s: conv and dgrad should read %s", what, oihw ? "the OIHW weight" : "input 1");
  EG_CHECK_MSG(is(&p, 4, RUN, AS_IS, -1, -1) && is(&p, 5, RUN, AS_IS, -1, -1),
               "%s: x_t and gy_t run", what);
  EG_CHECK_MSG(is(&p, 6, RUN, AS_IS, -1, cnhw ? s.gw : -1) &&
               is(&p, 7, cnhw ? SKIP : RUN, AS_IS, -1, -1), "%s: the weight gradient's "
               "Transpose should %s", what, cnhw ? "be written by its Conv2d" : "run");
  eg_htp_exec_plan_free(&p);
  eg_htp_qnn_graph_destroy(s.g);
}

static void test_trainable_weight(void) {
  /* pixels n*h*w against 4 x c_out (the Conv2d's output channels, the TransposeConv2d's input
   * ones): 2*4*4 = 32 <= 4*8, the bound itself */
  check_step(&(step_case){2, 8, 4, 8, 1, false}, true, true);
  /* 32 > 4*7: one channel fewer and the weight's Transposes run */
  check_step(&(step_case){2, 8, 4, 7, 1, false}, false, true);
  /* c_in plays no part: 1*4*4 = 16 <= 4*8 whatever it is; 16 > 4*3 */
  check_step(&(step_case){1, 3, 4, 8, 1, false}, true, true);
  check_step(&(step_case){1, 8, 4, 3, 1, false}, false, true);
  /* the weight gradient's Conv2d output read twice: its Transpose runs */
  check_step(&(step_case){2, 8, 4, 8, 1, true}, true, false);
  /* groups: no OIHW reads (the weight gradient's Conv2d has none: it still writes gw) */
  check_step(&(step_case){1, 8, 2, 8, 2, false}, false, true);
}

/* A Conv2d run by Winograd (3x3, stride 1, c >= 32, >= 256 output tiles) takes neither form:
 * its weight gradient's Transpose [3,0,1,2] runs. */
static void test_winograd_conv_writes_its_own(void) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("wino", &g) == EG_OK);
  const int32_t x = tensor(g, "x", EG_HTP_QNN_TENSOR_APP_WRITE, DIMS(1, 32, 32, 32));
  const int32_t w = tensor(g, "w", EG_HTP_QNN_TENSOR_APP_WRITE, DIMS(3, 3, 32, 32));
  const int32_t y = tensor(g, "y", EG_HTP_QNN_TENSOR_NATIVE, DIMS(1, 32, 32, 32));
  const int32_t yt = tensor(g, "y_t", EG_HTP_QNN_TENSOR_APP_READ, DIMS(32, 1, 32, 32));
  const eg_htp_qnn_param cp[2] = {pair("stride", 1, 1), pads(1)};
  const eg_htp_qnn_param to = PERM(3, 0, 1, 2);
  op(g, "conv", EG_HTP_QNN_OP_CONV_2D, 2, (const int32_t[]){x, w}, y, 2, cp);
  op(g, "y_t", EG_HTP_QNN_OP_TRANSPOSE, 1, &y, yt, 1, &to);
  eg_htp_exec_plan p = plan_of(g);
  EG_CHECK(is(&p, 0, RUN, AS_IS, -1, -1) && is(&p, 1, RUN, AS_IS, -1, -1));
  eg_htp_exec_plan_free(&p);
  eg_htp_qnn_graph_destroy(g);
}

/* ---- Reshapes ---- */

/* Runs g (input x [1,4,4,8], outputs a_out, y, y2) with the pass's plan (planned) or none,
 * into out[3][128]; *native: the NATIVE bytes without sharing. */
static void run_reshapes(const eg_htp_qnn_graph *g, bool planned, const float *x,
                         float (*out)[128], size_t *native, int32_t *x_read_until) {
  eg_htp_qnn_executor *ex = NULL;
  EG_CHECK_MSG((planned ? eg_test_executor(g, EG_PRECISION_FP32, false, &ex)
                        : eg_htp_qnn_executor_create(g, &ex)) == EG_OK, "%s", eg_last_error());
  if (!ex) return;
  const eg_htp_qnn_binding in = {.tensor = 0, .data = (void *)x, .nbytes = 512};
  const eg_htp_qnn_binding outs[3] = {{.tensor = 2, .data = out[0], .nbytes = 512},
                                      {.tensor = 7, .data = out[1], .nbytes = 512},
                                      {.tensor = 8, .data = out[2], .nbytes = 512}};
  EG_CHECK_MSG(eg_htp_qnn_executor_execute(ex, &in, 1, outs, 3) == EG_OK, "%s", eg_last_error());
  eg_htp_qnn_executor_stats st;
  eg_htp_qnn_executor_get_stats(ex, &st);
  *native = st.native_sum_bytes;
  *x_read_until = eg_htp_qnn_executor_input_last_op(ex, 0);
  eg_htp_qnn_executor_destroy(ex);
}

/* a = x + x; a_out = Reshape(a) (a graph output); r = Reshape(a); xr = Reshape(x) (a graph
 * input's); b = x * x; b2 = Reshape(b); y = r + b2; y2 = xr - r. Without r's readers keeping a
 * alive, b (made after a's last direct reader) could take a's bytes. */
static void test_reshape_aliases(void) {
  eg_htp_qnn_graph *g;
  EG_CHECK(eg_htp_qnn_graph_create("reshapes", &g) == EG_OK);
  const eg_htp_qnn_tensor_type in = EG_HTP_QNN_TENSOR_APP_WRITE, nat = EG_HTP_QNN_TENSOR_NATIVE,
                               out = EG_HTP_QNN_TENSOR_APP_READ;
  const int32_t x = tensor(g, "x", in, DIMS(1, 4, 4, 8)), a = tensor(g, "a", nat, DIMS(1, 4, 4, 8));
  const int32_t a_out = tensor(g, "a_out", out, DIMS(1, 8, 8, 2));
  const int32_t r = tensor(g, "r", nat, DIMS(1, 8, 8, 2)), xr = tensor(g, "xr", nat, DIMS(1, 8, 8, 2));
  const int32_t b = tensor(g, "b", nat, DIMS(1, 4, 4, 8)), b2 = tensor(g, "b2", nat, DIMS(1, 8, 8, 2));
  const int32_t y = tensor(g, "y", out, DIMS(1, 8, 8, 2)), y2 = tensor(g, "y2", out, DIMS(1, 8, 8, 2));
  EG_CHECK(a_out == 2 && y == 7 && y2 == 8);
  op(g, "a", EG_HTP_QNN_OP_ELEMENT_WISE_ADD, 2, (const int32_t[]){x, x}, a, 0, NULL);
  op(g, "a_out", EG_HTP_QNN_OP_RESHAPE, 1, &a, a_out, 0, NULL);
  op(g, "r", EG_HTP_QNN_OP_RESHAPE, 1, &a, r, 0, NULL);
  op(g, "xr", EG_HTP_QNN_OP_RESHAPE, 1, &x, xr, 0, NULL);
  op(g, "b", EG_HTP_QNN_OP_ELEMENT_WISE_MULTIPLY, 2, (const int32_t[]){x, x}, b, 0, NULL);
  op(g, "b2", EG_HTP_QNN_OP_RESHAPE, 1, &b, b2, 0, NULL);
  op(g, "y", EG_HTP_QNN_OP_ELEMENT_WISE_ADD, 2, (const int32_t[]){r, b2}, y, 0, NULL);
  op(g, "y2", EG_HTP_QNN_OP_ELEMENT_WISE_SUBTRACT, 2, (const int32_t[]){xr, r}, y2, 0, NULL);
  eg_htp_exec_plan p = plan_of(g);
  EG_CHECK(is(&p, 1, RUN, AS_IS, -1, -1) && is(&p, 2, ALIAS, AS_IS, -1, -1) &&
           is(&p, 3, ALIAS, AS_IS, -1, -1) && is(&p, 5, ALIAS, AS_IS, -1, -1));
  eg_htp_exec_plan_free(&p);
  float xs[128], got[3][128], want[3][128];
  for (int i = 0; i < 128; i++) xs[i] = (float)(i % 17) * 0.25f - 2.0f;
  size_t native_planned = 0, native_all = 0;
  int32_t x_planned = -2, x_all = -2;
  run_reshapes(g, true, xs, got, &native_planned, &x_planned);
  run_reshapes(g, false, xs, want, &native_all, &x_all);
  EG_CHECK_MSG(native_planned + 3 * 512 == native_all, "NATIVE bytes %zu with aliases, %zu "
               "without: the three aliased outputs have none", native_planned, native_all);
  /* x's bound buffer: read by op 4 (b) last, through xr's alias by op 7 (y2) */
  EG_CHECK_MSG(x_planned == 7 && x_all == 4, "x read until op %d (planned), %d (not): want 7, 4",
               (int)x_planned, (int)x_all);
  for (int i = 0; i < 128; i++) {
    const float a_i = xs[i] + xs[i];
    EG_CHECK_MSG(got[0][i] == a_i && got[1][i] == a_i + xs[i] * xs[i] &&
                     got[2][i] == xs[i] - a_i,
                 "element %d: a_out %g y %g y2 %g, want %g %g %g", i, got[0][i], got[1][i],
                 got[2][i], a_i, a_i + xs[i] * xs[i], xs[i] - a_i);
  }
  EG_CHECK(memcmp(got, want, sizeof got) == 0);
  eg_htp_qnn_graph_destroy(g);
}

/* ---- the rules, and the executor's refusal ---- */

static void refused(const eg_htp_qnn_graph *g, const eg_htp_exec_plan *p, const char *needle) {
  char why[512] = "";
  EG_CHECK_MSG(!eg_htp_exec_plan_check(g, p, why, sizeof why) && strstr(why, needle) &&
               !strchr(why, '\n'), "expected a refusal with '%s', got '%s'", needle, why);
  eg_htp_qnn_executor *ex = NULL;
  EG_CHECK(eg_htp_qnn_executor_create_plan(g, p, EG_PRECISION_FP32, false, &ex) == EG_ERR_INVALID &&
           !ex && strstr(eg_last_error(), needle));
}

static void test_plan_rules(void) {
  step_graph s = build_step(&(step_case){2, 8, 4, 8, 1, false});
  eg_htp_exec_plan good = plan_of(s.g), p = {0};
  EG_CHECK(eg_htp_exec_plan_init(&p, good.n_ops) == EG_OK);
#define BROKEN(change, needle)                                                         \
  do {                                                                                 \
    memcpy(p.ops, good.ops, sizeof *p.ops * (size_t)good.n_ops);                       \
    change;                                                                            \
    refused(s.g, &p, needle);                                                          \
  } while (0)
  BROKEN(p.ops[1].how = FOLD, "only a Transpose is folded or skipped");
  BROKEN(p.ops[4].how = FOLD, "reads a FLOAT_32 STATIC tensor or a folded op's output");
  BROKEN(p.ops[4].how = SKIP, "must read it as a filter redirected to its input");
  BROKEN(p.ops[1].filter_src = -1, "must read it as a filter redirected to its input");
  BROKEN(p.ops[1].filter_read = AS_IS, "a source needs a form");
  BROKEN(p.ops[1].filter_read = OI, "input 1 must be the output of a SKIP Transpose");
  BROKEN(p.ops[3].filter_read = OI, "input 1 must be the output of a SKIP Transpose");
  BROKEN(p.ops[0].how = RUN, "input 1 must be the output of a SKIP Transpose");
  BROKEN(p.ops[1].filter_src = 9999, "tensor ids -1 or below");
  BROKEN(p.ops[0].how = EG_HTP_EXEC_HOW_COUNT, "codes below 5");
  BROKEN(p.ops[0].how = ALIAS, "ALIAS: only a Reshape");
  BROKEN(p.ops[5].filter_src = s.w, "only a Conv2d or TransposeConv2d");
  BROKEN(p.ops[6].y_dst = -1, "written by the Conv2d before it");
  BROKEN(p.ops[1].y_dst = s.gw, "writes tensor");
  BROKEN(p.n_ops = good.n_ops - 1, "entries for");
#undef BROKEN
  eg_htp_exec_plan_free(&p);
  eg_htp_exec_plan_free(&good);
  eg_htp_qnn_graph_destroy(s.g);
}

/* A plan by every rule that gives a kernel a form it does not take (a grouped Conv2d reading
 * OIHW): the executor refuses it at create, naming the op, rather than run it. */
static void test_executor_refuses_what_kernels_cannot(void) {
  step_graph s = build_step(&(step_case){1, 8, 2, 8, 2, false});
  eg_htp_exec_plan p = plan_of(s.g);
  p.ops[0].how = SKIP;
  p.ops[1].filter_src = s.w;
  p.ops[1].filter_read = OIHW;
  char why[512] = "";
  EG_CHECK_MSG(eg_htp_exec_plan_check(s.g, &p, why, sizeof why), "%s", why);
  eg_htp_qnn_executor *ex = NULL;
  EG_CHECK(eg_htp_qnn_executor_create_plan(s.g, &p, EG_PRECISION_FP32, false, &ex) ==
               EG_ERR_INVALID &&
           !ex && strstr(eg_last_error(), "op conv (Conv2d)") &&
           strstr(eg_last_error(), "read its filter OIHW") &&
           strstr(eg_last_error(), "compile the graph again"));
  eg_htp_exec_plan_free(&p);
  eg_htp_qnn_graph_destroy(s.g);
}

int main(void) {
  EG_RUN(test_frozen_filter);
  EG_RUN(test_trainable_weight);
  EG_RUN(test_winograd_conv_writes_its_own);
  EG_RUN(test_reshape_aliases);
  EG_RUN(test_plan_rules);
  EG_RUN(test_executor_refuses_what_kernels_cannot);
  return eg_test_summary();
}
