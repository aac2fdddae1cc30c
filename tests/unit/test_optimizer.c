/* test_optimizer.c — eg_optimizer_* on the tiny_step fixture: option checks with their
 * messages, the state machine (no step before a run), state tensors by name, and the update
 * rules against properties that hold whatever the gradients: plain SGD is p - lr * grad
 * element for element, in float32; Adam's first step moves every parameter by lr * sign(grad) (bias
 * correction makes m/sqrt(v) = g/|g| at t = 1); AdamW's decoupled decay scales a zero-gradient
 * parameter by exactly (1 - lr*wd); SGD's momentum buffer equals the gradient after one step.
 * The numeric match with torch.optim over 20 steps is tests/conformance/test_train.py; term by
 * term (weight decay under Nesterov, Adam's L2 against AdamW's decay, dampening, momentum, bias
 * correction, eps), weights compared after every step, tests/ops/test_optimizer.py. */
#include "eg_test.h"

static eg_model *load(void) {
  eg_model *m = NULL;
  EG_CHECK_MSG(eg_model_load(EG_TEST_DATA "/tiny_step.json", &m) == EG_OK, "%s", eg_last_error());
  return m;
}

/* A runtime over the tiny step with its inputs set and run once. */
static eg_runtime *ran(const eg_model *m) {
  eg_runtime *rt = NULL;
  if (eg_runtime_create(m, &rt) != EG_OK) return NULL;
  if (eg_test_set_tiny_inputs(m, rt) != EG_OK || eg_runtime_run(rt) != EG_OK) {
    eg_runtime_destroy(rt);
    return NULL;
  }
  return rt;
}

/* A copy of input `name` (malloc'ed floats) and its element count. */
static float *copy_input(const eg_model *m, const eg_runtime *rt, const char *name, int64_t *n) {
  for (int i = 0; i < eg_model_num_inputs(m); i++) {
    eg_tensor_desc d;
    eg_tensor t;
    eg_model_input(m, i, &d);
    if (strcmp(d.name, name) != 0 || eg_runtime_input(rt, i, &t) != EG_OK) continue;
    *n = eg_tensor_numel(&t);
    float *p = malloc(sizeof(float) * (size_t)*n);
    memcpy(p, t.data, sizeof(float) * (size_t)*n);
    return p;
  }
  return NULL;
}

static float *copy_output(const eg_model *m, const eg_runtime *rt, const char *name) {
  for (int i = 0; i < eg_model_num_outputs(m); i++) {
    eg_tensor_desc d;
    eg_tensor t;
    eg_model_output(m, i, &d);
    if (strcmp(d.name, name) != 0 || eg_runtime_output(rt, i, &t) != EG_OK) continue;
    float *p = malloc(sizeof(float) * (size_t)eg_tensor_numel(&t));
    memcpy(p, t.data, sizeof(float) * (size_t)eg_tensor_numel(&t));
    return p;
  }
  return NULL;
}

/* Options as given (every field not named 0), struct_size set. */
#define OPTIONS(...) {.struct_size = sizeof(eg_optimizer_options), __VA_ARGS__}

static void test_options(void) {
  eg_model *m = load();
  eg_runtime *rt = NULL;
  if (!m || eg_runtime_create(m, &rt) != EG_OK) goto out;
  eg_optimizer *opt = NULL;
  struct {
    eg_optimizer_options o;
    const char *msg;
  } bad[] = {
      {OPTIONS(.kind = EG_OPTIMIZER_SGD, .lr = -1), "sgd lr (-1): must be finite and >= 0"},
      {OPTIONS(.kind = EG_OPTIMIZER_SGD, .lr = 0.1, .nesterov = true), "needs momentum > 0"},
      {OPTIONS(.kind = EG_OPTIMIZER_SGD, .lr = 0.1, .momentum = 0.9, .dampening = 0.1,
               .nesterov = true),
       "dampening 0"},
      {OPTIONS(.kind = EG_OPTIMIZER_ADAM, .lr = 0.1, .beta1 = 1.0, .beta2 = 0.9), "beta1 (1)"},
      {OPTIONS(.kind = EG_OPTIMIZER_ADAMW, .lr = 0.1, .beta1 = 0.9, .beta2 = 0.9, .eps = -1),
       "eps (-1)"},
      {OPTIONS(.kind = EG_OPTIMIZER_ADAM, .lr = 0.1, .weight_decay = NAN), "weight_decay"},
      {OPTIONS(.kind = (eg_optimizer_kind)7, .lr = 0.1), "kind (7)"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    EG_CHECK(eg_optimizer_create(rt, &bad[k].o, &opt) == EG_ERR_ARGUMENT && opt == NULL);
    EG_CHECK_MSG(strstr(eg_last_error(), bad[k].msg), "case %zu: %s", k, eg_last_error());
  }
  eg_optimizer_options d;
  eg_optimizer_defaults(EG_OPTIMIZER_ADAMW, &d);
  EG_CHECK(d.lr == 1e-3 && d.beta1 == 0.9 && d.beta2 == 0.999 && d.eps == 1e-8 &&
           d.weight_decay == 1e-2);
  eg_optimizer_options adam;
  EG_CHECK(eg_optimizer_defaults(EG_OPTIMIZER_ADAM, &adam) == EG_OK && adam.weight_decay == 0 &&
           adam.struct_size == sizeof adam);
  EG_CHECK(eg_optimizer_create(rt, &d, &opt) == EG_OK);
  EG_CHECK(eg_optimizer_step(opt) == EG_ERR_STATE); /* no run yet */
  EG_CHECK(strstr(eg_last_error(), "no successful run yet"));
  EG_CHECK(eg_optimizer_set_lr(opt, -2) == EG_ERR_ARGUMENT);
  EG_CHECK(eg_optimizer_set_steps(opt, -1) == EG_ERR_ARGUMENT);
  /* 5 parameters x (exp_avg, exp_avg_sq), in input order */
  EG_CHECK(eg_optimizer_num_states(opt) == 10);
  const char *name = NULL;
  eg_tensor t;
  EG_CHECK(eg_optimizer_state(opt, 3, &name, &t) == EG_OK && name &&
           strcmp(name, "2_weight.exp_avg_sq") == 0 && t.dtype == EG_DTYPE_FLOAT32);
  EG_CHECK(eg_optimizer_state(opt, 10, &name, &t) == EG_ERR_ARGUMENT);
  eg_optimizer_destroy(opt);
  eg_optimizer_options sgd = OPTIONS(.kind = EG_OPTIMIZER_SGD, .lr = 0.1);
  EG_CHECK(eg_optimizer_create(rt, &sgd, &opt) == EG_OK && eg_optimizer_num_states(opt) == 0);
  eg_optimizer_destroy(opt);
out:
  eg_runtime_destroy(rt);
  eg_model_destroy(m);
}

/* Plain SGD is p - lr * grad, each element in float32, bit for bit. */
static void test_sgd_plain(void) {
  eg_model *m = load();
  eg_runtime *a = m ? ran(m) : NULL;
  eg_optimizer *opt = NULL;
  eg_optimizer_options o = OPTIONS(.kind = EG_OPTIMIZER_SGD, .lr = 0.05);
  if (!a || eg_optimizer_create(a, &o, &opt) != EG_OK) goto out;
  int64_t n = 0, n2 = 0;
  float *before = copy_input(m, a, "2_weight", &n), *g = copy_output(m, a, "grad_2_weight");
  EG_CHECK(eg_optimizer_step(opt) == EG_OK);
  EG_CHECK(eg_optimizer_steps(opt) == 1);
  float *after = copy_input(m, a, "2_weight", &n2);
  EG_CHECK(before && g && after && n == n2 && n > 0);
  const float lr = 0.05f;
  for (int64_t k = 0; before && g && after && k < n; k++) {
    const float want = before[k] - lr * g[k];
    EG_CHECK_MSG(memcmp(&want, &after[k], sizeof want) == 0, "element %lld: %.9g, want %.9g",
                 (long long)k, (double)after[k], (double)want);
  }
  free(before);
  free(g);
  free(after);
out:
  eg_optimizer_destroy(opt);
  eg_runtime_destroy(a);
  eg_model_destroy(m);
}

static void test_adam_first_step(void) {
  eg_model *m = load();
  eg_runtime *rt = m ? ran(m) : NULL;
  eg_optimizer *opt = NULL;
  eg_optimizer_options o;
  eg_optimizer_defaults(EG_OPTIMIZER_ADAM, &o);
  o.lr = 0.01;
  o.eps = 0;
  if (!rt || eg_optimizer_create(rt, &o, &opt) != EG_OK) goto out;
  int64_t n = 0;
  float *before = copy_input(m, rt, "4_weight", &n), *g = copy_output(m, rt, "grad_4_weight");
  EG_CHECK(eg_optimizer_step(opt) == EG_OK);
  float *after = copy_input(m, rt, "4_weight", &n);
  int moved = 0;
  for (int64_t k = 0; before && g && after && k < n; k++) {
    const double want = g[k] > 0 ? -0.01 : g[k] < 0 ? 0.01 : NAN; /* 0/0 where g is 0 */
    const double got = (double)after[k] - (double)before[k];
    if (g[k] != 0) {
      EG_CHECK_MSG(fabs(got - want) <= 1e-6 + 1e-6 * fabs(before[k]), "element %lld moved %g, "
                   "want %g (grad %g)", (long long)k, got, want, (double)g[k]);
      moved++;
    }
  }
  EG_CHECK(moved > 0);
  /* the moments: m = (1-beta1) g, v = (1-beta2) g^2 */
  const char *name;
  eg_tensor st;
  EG_CHECK(eg_optimizer_state(opt, 6, &name, &st) == EG_OK && strcmp(name, "4_weight.exp_avg") == 0);
  for (int64_t k = 0; g && k < n && k < eg_tensor_numel(&st); k++)
    EG_CHECK(fabsf(((float *)st.data)[k] - 0.1f * g[k]) <= 1e-7f * (1 + fabsf(g[k])));
  free(before);
  free(after);
  free(g);
out:
  eg_optimizer_destroy(opt);
  eg_runtime_destroy(rt);
  eg_model_destroy(m);
}

/* AdamW's decay is decoupled: beside Adam without weight decay on the same run (same gradient,
 * same moments), each parameter differs by exactly p * lr * wd. */
static void test_adamw_decay(void) {
  eg_model *m = load();
  eg_runtime *a = m ? ran(m) : NULL, *b = m ? ran(m) : NULL;
  eg_optimizer *oa = NULL, *ob = NULL;
  eg_optimizer_options w, p;
  eg_optimizer_defaults(EG_OPTIMIZER_ADAMW, &w);
  w.lr = 0.01;
  w.weight_decay = 0.5;
  p = w;
  p.kind = EG_OPTIMIZER_ADAM;
  p.weight_decay = 0;
  if (!a || !b || eg_optimizer_create(a, &w, &oa) != EG_OK ||
      eg_optimizer_create(b, &p, &ob) != EG_OK)
    goto out;
  int64_t n = 0;
  float *before = copy_input(m, a, "2_bias", &n);
  EG_CHECK(eg_optimizer_step(oa) == EG_OK && eg_optimizer_step(ob) == EG_OK);
  float *wa = copy_input(m, a, "2_bias", &n), *pa = copy_input(m, b, "2_bias", &n);
  for (int64_t k = 0; before && wa && pa && k < n; k++) {
    /* AdamW: p*(1 - lr*wd) - u; Adam: p - u */
    const double want = (double)pa[k] - (double)before[k] * 0.01 * 0.5;
    EG_CHECK_MSG(fabs((double)wa[k] - want) <= 1e-6, "element %lld: %g, want %g", (long long)k,
                 (double)wa[k], want);
  }
  free(before);
  free(wa);
  free(pa);
out:
  eg_optimizer_destroy(oa);
  eg_optimizer_destroy(ob);
  eg_runtime_destroy(a);
  eg_runtime_destroy(b);
  eg_model_destroy(m);
}

static void test_sgd_momentum_state(void) {
  eg_model *m = load();
  eg_runtime *rt = m ? ran(m) : NULL;
  eg_optimizer *opt = NULL;
  eg_optimizer_options o = OPTIONS(.kind = EG_OPTIMIZER_SGD, .lr = 0.1, .momentum = 0.9,
                                   .dampening = 0.5);
  if (!rt || eg_optimizer_create(rt, &o, &opt) != EG_OK) goto out;
  float *g = copy_output(m, rt, "grad_0_bias");
  EG_CHECK(eg_optimizer_step(opt) == EG_OK);
  const char *name;
  eg_tensor st;
  EG_CHECK(eg_optimizer_num_states(opt) == 5);
  EG_CHECK(eg_optimizer_state(opt, 0, &name, &st) == EG_OK &&
           strcmp(name, "0_bias.momentum_buffer") == 0);
  /* the first step takes the gradient as it is (no dampening), as torch.optim.SGD */
  for (int64_t k = 0; g && k < eg_tensor_numel(&st); k++)
    EG_CHECK(((float *)st.data)[k] == g[k]);
  free(g);
out:
  eg_optimizer_destroy(opt);
  eg_runtime_destroy(rt);
  eg_model_destroy(m);
}

int main(void) {
  EG_RUN(test_options);
  EG_RUN(test_sgd_plain);
  EG_RUN(test_adam_first_step);
  EG_RUN(test_adamw_decay);
  EG_RUN(test_sgd_momentum_state);
  return eg_test_summary();
}
