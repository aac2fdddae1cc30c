/* test_loss_scale.c — loss scaling of eg_optimizer (eg_optimizer_options.loss_scale) on the
 * tiny_step fixture, on the CPU (its seed is a node ones_like(loss)) and compiled for SM8650
 * (pass decompose folds the seed into a constant): the run's gradients are the scale times an
 * unscaled runtime's, bit for bit (the scale is a power of two); the step unscales them in
 * place and updates the weights exactly as the unscaled step does; destroying the optimizer
 * makes the seed 1 again; one scaling optimizer per runtime; option checks and a restored
 * scaler state that is no state, with their messages. GradScaler's rules over a run, against
 * PyTorch: tests/ops/test_loss_scale.py; the CLI: tests/cli/test_loss_scale.sh. */
#include "eg_test.h"

static eg_model *load(void) {
  eg_model *m = NULL;
  EG_CHECK_MSG(eg_model_load(EG_TEST_DATA "/tiny_step.json", &m) == EG_OK, "%s", eg_last_error());
  return m;
}

/* A runtime over the tiny step, compiled for SM8650 or not, with its inputs set. Compiled at
 * fp32: a power-of-two scale is then exact on every gradient (fp16 storage would round or
 * flush the unscaled runtime's small ones, which is what loss scaling is for). */
static eg_runtime *runtime(const eg_model *m, bool compiled) {
  eg_runtime *rt = NULL;
  const eg_compile_options co =
      EG_COMPILE_OPTIONS(.soc = "SM8650", .precision = EG_PRECISION_FP32);
  eg_status s = compiled ? eg_runtime_create_compiled(m, &co, &rt) : eg_runtime_create(m, &rt);
  EG_CHECK_MSG(s == EG_OK, "%s", eg_last_error());
  if (s == EG_OK && eg_test_set_tiny_inputs(m, rt) != EG_OK) {
    eg_runtime_destroy(rt);
    return NULL;
  }
  return rt;
}

static void test_scaled_step(bool compiled) {
  eg_model *m = load();
  eg_runtime *rt = m ? runtime(m, compiled) : NULL, *ref = m ? runtime(m, compiled) : NULL;
  eg_optimizer *opt = NULL, *ref_opt = NULL, *second = NULL;
  if (!rt || !ref) goto out;
  eg_optimizer_options o;
  eg_optimizer_defaults(EG_OPTIMIZER_SGD, &o);
  o.lr = 0.1;
  o.momentum = 0.9;
  o.weight_decay = 0.01;
  EG_CHECK(eg_optimizer_create(ref, &o, &ref_opt) == EG_OK);
  o.loss_scale = EG_LOSS_SCALE_STATIC;
  o.init_scale = 1024;
  EG_CHECK_MSG(eg_optimizer_create(rt, &o, &opt) == EG_OK, "%s", eg_last_error());
  if (!opt || !ref_opt) goto out;
  EG_CHECK(eg_optimizer_loss_scale(opt) == 1024 && eg_optimizer_loss_scale(ref_opt) == 1);
  for (int step = 0; step < 3; step++) {
    EG_CHECK(eg_runtime_run(rt) == EG_OK && eg_runtime_run(ref) == EG_OK);
    EG_CHECK_MSG(eg_test_grads_scaled(m, rt, ref, 1024.0f),
                 "step %d: gradients not 1024 times the "
                 "unscaled ones (compiled %d)", step, compiled);
    EG_CHECK(eg_optimizer_step(opt) == EG_OK && eg_optimizer_step(ref_opt) == EG_OK);
    EG_CHECK_MSG(eg_test_grads_scaled(m, rt, ref, 1.0f),
                 "step %d: gradients not unscaled", step);
    EG_CHECK_MSG(eg_test_inputs_equal(m, rt, ref),
                 "step %d: weights differ from the unscaled step's",
                 step);
  }
  EG_CHECK(eg_optimizer_skipped_steps(opt) == 0 && eg_optimizer_steps(opt) == 3);
  /* one scaling optimizer per runtime; the seed is 1 again once the optimizer is gone */
  EG_CHECK(eg_optimizer_create(rt, &o, &second) == EG_ERR_STATE && second == NULL);
  EG_CHECK_MSG(strstr(eg_last_error(), "one optimizer with loss scaling per runtime"), "%s",
               eg_last_error());
  eg_optimizer_destroy(opt);
  opt = NULL;
  EG_CHECK(eg_runtime_run(rt) == EG_OK && eg_runtime_run(ref) == EG_OK);
  EG_CHECK_MSG(eg_test_grads_scaled(m, rt, ref, 1.0f),
               "the seed stays scaled after destroy");
out:
  eg_optimizer_destroy(opt);
  eg_optimizer_destroy(ref_opt);
  eg_runtime_destroy(rt);
  eg_runtime_destroy(ref);
  eg_model_destroy(m);
}

static void test_options_and_state(void) {
  eg_model *m = load();
  eg_runtime *rt = m ? runtime(m, false) : NULL;
  eg_optimizer *opt = NULL;
  if (!rt) goto out;
  struct {
    eg_optimizer_options o;
    const char *msg;
  } bad[] = {
      {{.lr = 0.1, .loss_scale = (eg_loss_scale_mode)5}, "loss_scale (5): not an eg_loss"},
      {{.lr = 0.1, .loss_scale = EG_LOSS_SCALE_STATIC, .init_scale = NAN}, "init_scale (nan)"},
      {{.lr = 0.1, .loss_scale = EG_LOSS_SCALE_DYNAMIC, .init_scale = 1e39}, "init_scale (1e+39)"},
      {{.lr = 0.1, .loss_scale = EG_LOSS_SCALE_DYNAMIC, .growth_factor = 1}, "growth_factor (1)"},
      {{.lr = 0.1, .loss_scale = EG_LOSS_SCALE_DYNAMIC, .backoff_factor = 1}, "backoff_factor (1)"},
      {{.lr = 0.1, .loss_scale = EG_LOSS_SCALE_DYNAMIC, .growth_interval = -2},
       "growth_interval (-2)"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    bad[k].o.struct_size = sizeof bad[k].o;
    EG_CHECK(eg_optimizer_create(rt, &bad[k].o, &opt) == EG_ERR_ARGUMENT && opt == NULL);
    EG_CHECK_MSG(strstr(eg_last_error(), bad[k].msg), "case %zu: %s", k, eg_last_error());
  }
  const eg_optimizer_options o = {.struct_size = sizeof o, .lr = 0.1,
                                  .loss_scale = EG_LOSS_SCALE_DYNAMIC};
  EG_CHECK(eg_optimizer_create(rt, &o, &opt) == EG_OK);
  if (!opt) goto out;
  EG_CHECK(eg_optimizer_loss_scale(opt) == 65536); /* GradScaler's default */
  /* the scaler's state is the last state tensor; a checkpoint that writes no state there is
   * refused by the next step, which changes nothing */
  const char *name = NULL;
  eg_tensor st;
  const int last = eg_optimizer_num_states(opt) - 1;
  EG_CHECK(last == 0 && eg_optimizer_state(opt, last, &name, &st) == EG_OK);
  EG_CHECK(name && strcmp(name, "loss_scaler") == 0 && st.dtype == EG_DTYPE_FLOAT64 &&
           st.rank == 1 && st.shape[0] == 3);
  double *s = st.data;
  EG_CHECK(s[0] == 65536 && s[1] == 0 && s[2] == 0);
  EG_CHECK(eg_runtime_run(rt) == EG_OK);
  s[1] = 2000; /* good steps must stay below growth_interval */
  EG_CHECK(eg_optimizer_step(opt) == EG_ERR_STATE);
  EG_CHECK_MSG(strstr(eg_last_error(), "loss_scaler (scale 65536, good steps 2000, skipped 0)"),
               "%s", eg_last_error());
  s[1] = 0;
  s[2] = NAN;
  EG_CHECK(eg_optimizer_skipped_steps(opt) == -1 && eg_optimizer_step(opt) == EG_ERR_STATE);
  s[2] = 0;
  s[0] = 0.1; /* not a float32 */
  EG_CHECK(eg_optimizer_step(opt) == EG_ERR_STATE && eg_optimizer_steps(opt) == 0);
  s[0] = 4096;
  EG_CHECK(eg_optimizer_step(opt) == EG_OK && eg_optimizer_steps(opt) == 1);
  EG_CHECK(eg_optimizer_loss_scale(opt) == 4096 && s[1] == 1);
out:
  eg_optimizer_destroy(opt);
  eg_runtime_destroy(rt);
  eg_model_destroy(m);
}

static void test_scaled_step_cpu(void) { test_scaled_step(false); }
static void test_scaled_step_compiled(void) { test_scaled_step(true); }

int main(void) {
  EG_RUN(test_scaled_step_cpu);
  EG_RUN(test_scaled_step_compiled);
  EG_RUN(test_options_and_state);
  return eg_test_summary();
}
