/* test_prepared_weights.c — what the CPU convolutions derive from a frozen weight (the flipped
 * weights, the Winograd filter transform: eg_op_prepare) is derived once per runtime, at
 * creation, and only from a static of the graph (src/runtime/engine.c):
 *   - a graph whose 3x3 stride-1 convolutions (forward, transposed, and both input gradients:
 *     every prepared path, each by Winograd) read a static weight prepares data at creation,
 *     and gives bit for bit the outputs of the same graph with the weight as an input (which
 *     derives its data in every run), in two runs;
 *   - with the weight an input, a second run with other weight bytes gives bit for bit what a
 *     fresh runtime gives for them (nothing derived from the first bytes is kept), and not the
 *     first run's outputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgegrad.h"
#include "eg_test.h"
#include "eg_test_json.h"
#include "eg_test_lower.h"
#include "runtime/engine.h"

/* 48 channels: below EG_CONV_ROWBAND_OVER_WINO_C (48) a 16x16 plane runs by row bands, not
 * Winograd, and would prepare no filter transforms. */
enum { N = 2, C = 48, H = 16, W = 16, XN = N * C * H * W, WN = C * C * 9, OUTS = 4 };

#define CONV_ARGS(transposed) "[1, 1], [1, 1], [1, 1], " transposed ", [0, 0], 1"
/* x -> conv -> y; x -> transposed conv -> t; the input gradients of both, given y and t */
static const char *values =
    T(0, "[2, 48, 16, 16]") ", " T(1, "[48, 48, 3, 3]") ", " T(2, "[2, 48, 16, 16]") ", "
    T(3, "[2, 48, 16, 16]") ", " TUPLE(4, "[5, null, null]") ", " T(5, "[2, 48, 16, 16]") ", "
    TUPLE(6, "[7, null, null]") ", " T(7, "[2, 48, 16, 16]") ", " T(8, "[2, 48, 16, 16]") ", "
    T(9, "[2, 48, 16, 16]");
static const char *nodes =
    NODE("conv", "aten.convolution.default",
         "[" V(0) ", " V(1) ", null, " CONV_ARGS("false") "]", 2) ", "
    NODE("tconv", "aten.convolution.default",
         "[" V(0) ", " V(1) ", null, " CONV_ARGS("true") "]", 3) ", "
    NODE("conv_bwd", "aten.convolution_backward.default",
         "[" V(2) ", " V(0) ", " V(1) ", null, " CONV_ARGS("false") ", [true, false, false]]",
         4) ", "
    GETITEM("gx", 4, 0, 8) ", "
    NODE("tconv_bwd", "aten.convolution_backward.default",
         "[" V(3) ", " V(0) ", " V(1) ", null, " CONV_ARGS("true") ", [true, false, false]]",
         6) ", "
    GETITEM("gt", 6, 0, 9);
static const char *outputs = IN("y", 2) ", " IN("t", 3) ", " IN("gx", 8) ", " IN("gt", 9);

static float x[XN], w1[WN], w2[WN];

/* Writes and loads the graph with the weight a static (its bytes w1) or an input "w". */
static eg_model *load(bool weight_static) {
  const char *name = weight_static ? "frozen" : "bound";
  const stat_tensor st = {"w", "[48, 48, 3, 3]", WN, w1};
  char weights[64], path[128];
  write_weights(name, weight_static, &st);
  snprintf(weights, sizeof weights, "%s.safetensors", name);
  eg_graph *g = eg_test_graph_json(tmpdir, name, weights, values,
                                   weight_static ? IN("x", 0) : IN("x", 0) ", " IN("w", 1),
                                   weight_static ? IN("w", 1) : "", nodes, outputs);
  if (!g) return NULL;
  eg_graph_destroy(g);
  snprintf(path, sizeof path, "%s/%s.json", tmpdir, name);
  eg_model *m = NULL;
  EG_CHECK_MSG(eg_model_load(path, &m) == EG_OK, "%s", eg_last_error());
  return m;
}

static void set(eg_runtime *rt, const char *name, const float *data, int64_t c_out) {
  const eg_tensor t = {.dtype = EG_DTYPE_FLOAT32, .rank = 4,
                       .shape = {c_out, C, c_out == C ? 3 : H, c_out == C ? 3 : W},
                       .data = (void *)data};
  EG_CHECK_MSG(eg_runtime_set_input(rt, name, &t) == EG_OK, "%s", eg_last_error());
}

/* Runs rt (x set, and w when given) and copies its outputs into out[OUTS][XN]. */
static void run(eg_runtime *rt, const float *w, float (*out)[XN]) {
  set(rt, "x", x, N);
  if (w) set(rt, "w", w, C);
  EG_CHECK_MSG(eg_runtime_run(rt) == EG_OK, "%s", eg_last_error());
  for (int i = 0; i < OUTS; i++) {
    eg_tensor t = {0};
    EG_CHECK(eg_runtime_output(rt, i, &t) == EG_OK);
    if (t.data) memcpy(out[i], t.data, sizeof out[i]);
  }
}

static float got[OUTS][XN], want[OUTS][XN];

static void test_static_prepared_once(void) {
  eg_model *fm = load(true), *bm = load(false);
  eg_runtime *frozen = NULL, *bound = NULL;
  EG_CHECK(fm && eg_runtime_create(fm, &frozen) == EG_OK);
  EG_CHECK(bm && eg_runtime_create(bm, &bound) == EG_OK);
  if (frozen && bound) {
    /* per node, 64-aligned: conv U (16*C*C floats), tconv's and conv_bwd's flipped weights
     * (C*C*9) and their U, tconv_bwd's U */
    const size_t u = 16 * C * C * 4, flip = WN * 4;
    EG_CHECK_MSG(eg_engine_prepared_bytes(frozen) == 4 * u + 2 * flip,
                 "prepared %zu bytes, want %zu", eg_engine_prepared_bytes(frozen),
                 4 * u + 2 * flip);
    EG_CHECK(eg_engine_prepared_bytes(bound) == 0);
    for (int round = 0; round < 2; round++) {
      run(frozen, NULL, got);
      run(bound, w1, want);
      for (int i = 0; i < OUTS; i++)
        EG_CHECK_MSG(memcmp(got[i], want[i], sizeof got[i]) == 0,
                     "round %d output %d: the static weight's prepared run differs", round, i);
    }
  }
  eg_runtime_destroy(frozen);
  eg_runtime_destroy(bound);
  eg_model_destroy(fm);
  eg_model_destroy(bm);
}

static float first[OUTS][XN];

static void test_rebound_weight_seen(void) {
  eg_model *m = load(false);
  eg_runtime *rt = NULL, *fresh = NULL;
  EG_CHECK(m && eg_runtime_create(m, &rt) == EG_OK);
  EG_CHECK(m && eg_runtime_create(m, &fresh) == EG_OK);
  if (rt && fresh) {
    run(rt, w1, first);
    run(rt, w2, got);
    run(fresh, w2, want);
    for (int i = 0; i < OUTS; i++) {
      EG_CHECK_MSG(memcmp(got[i], want[i], sizeof got[i]) == 0,
                   "output %d: the run after the weight changed differs from a fresh runtime's",
                   i);
      EG_CHECK_MSG(memcmp(got[i], first[i], sizeof got[i]) != 0,
                   "output %d: unchanged by the new weight", i);
    }
  }
  eg_runtime_destroy(rt);
  eg_runtime_destroy(fresh);
  eg_model_destroy(m);
}

/* In [-0.5, 0.5), from a fixed stream. */
static float uniform(void) {
  static unsigned s = 12345;
  s = s * 1103515245u + 12345u;
  return (float)(s >> 8) / 16777216.0f - 0.5f;
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/eg_prepared_XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  for (int i = 0; i < XN; i++) x[i] = uniform();
  for (int i = 0; i < WN; i++) {
    w1[i] = uniform();
    w2[i] = w1[i] * -0.75f + 0.01f;
  }
  EG_RUN(test_static_prepared_once);
  EG_RUN(test_rebound_weight_seen);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return eg_test_summary();
}
