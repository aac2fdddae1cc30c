/* test_loss_seed_npu.c — the backward's seed read on the NPU. The tiny_step fixture (a conv
 * classifier's training step) compiled for SM8650 runs whole on the NPU: nll_loss_backward,
 * which reads the seed, shares the loss forward's partition, and the seed (the constant pass
 * decompose folds ones_like(loss) into) is that partition's boundary input, which loss scaling
 * writes at run time:
 *   - placement: nll_loss_forward and nll_loss_backward in one partition, no node on the CPU;
 *     the seed rule of ir/seed.h names that constant;
 *   - fp32, compiled in memory and saved as a .egp and loaded: a static scale of 1024 gives
 *     gradients exactly 1024 times an unscaled runtime's (a power of two), the optimizer's step
 *     matches the unscaled step's weights bit for bit, and the seed is 1 again once the
 *     optimizer is destroyed;
 *   - fp16: the seed is stored as fp16 on the NPU, where GradScaler's 65536 saturates to 65504
 *     as the HTP's inputs do: a scale of 65536 gives exactly the gradients of a scale of 65504,
 *     and the step divides by the 65504 the seed held, so the weights are those of the 65504
 *     run bit for bit (dividing by 65536 would leave every gradient 0.05 % small). */
#include <stdio.h>
#include <unistd.h>

#include "eg_test.h"
#include "compiler/frontend/frontend.h"
#include "ir/seed.h"

#define TINY EG_TEST_DATA "/tiny_step.json"

static eg_model *load(const char *path) {
  eg_model *m = NULL;
  EG_CHECK_MSG(eg_model_load(path, &m) == EG_OK, "%s", eg_last_error());
  return m;
}

static void test_placement(void) {
  eg_model *m = load(TINY);
  eg_compile_report *rep = NULL;
  const eg_compile_options co = EG_COMPILE_OPTIONS(.soc = "SM8650");
  if (!m || eg_compile_report_create(m, &co, &rep) != EG_OK) {
    EG_CHECK_MSG(0, "%s", eg_last_error());
    goto out;
  }
  int fwd = -2, bwd = -3, cpu = 0;
  for (int i = 0; i < eg_compile_report_num_nodes(rep); i++) {
    eg_placement_info p;
    EG_CHECK(eg_compile_report_node(rep, i, &p) == EG_OK);
    cpu += p.placement != EG_PLACEMENT_NPU;
    if (strcmp(p.target, "aten.nll_loss_forward.default") == 0) fwd = p.partition;
    if (strcmp(p.target, "aten.nll_loss_backward.default") == 0) {
      bwd = p.partition;
      EG_CHECK_MSG(p.placement == EG_PLACEMENT_NPU, "nll_loss_backward on the CPU: %s",
                   p.reason ? p.reason : "");
    }
  }
  EG_CHECK_MSG(fwd == bwd && fwd >= 0, "nll_loss_forward in partition %d, backward in %d", fwd,
               bwd);
  EG_CHECK_MSG(cpu == 0, "%d nodes on the CPU", cpu);
  /* the rule on the loaded step: its seed is a node ones_like(loss), no constant */
  eg_graph *g = NULL;
  EG_CHECK(eg_graph_load_json(TINY, &g) == EG_OK);
  int32_t seeds[2];
  int rule;
  EG_CHECK(g && eg_graph_seed_matches(g, seeds, &rule) == 1 && rule == 1);
  EG_CHECK(g && eg_graph_seed_constant(g) == -1);
  eg_graph_destroy(g);
out:
  eg_compile_report_destroy(rep);
  eg_model_destroy(m);
}

/* A runtime over `m` (a .egp when `program`, else compiled for SM8650 at `precision`) with the
 * tiny inputs set. */
static eg_runtime *runtime(const eg_model *m, bool program, eg_precision precision) {
  eg_runtime *rt = NULL;
  const eg_compile_options co = EG_COMPILE_OPTIONS(.soc = "SM8650", .precision = precision);
  eg_status s = program ? eg_runtime_create(m, &rt) : eg_runtime_create_compiled(m, &co, &rt);
  EG_CHECK_MSG(s == EG_OK, "%s", eg_last_error());
  if (s == EG_OK && eg_test_set_tiny_inputs(m, rt) != EG_OK) {
    eg_runtime_destroy(rt);
    return NULL;
  }
  return rt;
}

static eg_optimizer *sgd(eg_runtime *rt, double scale) {
  eg_optimizer_options o;
  eg_optimizer_defaults(EG_OPTIMIZER_SGD, &o);
  o.lr = 0.1;
  o.momentum = 0.9;
  if (scale > 0) {
    o.loss_scale = EG_LOSS_SCALE_STATIC;
    o.init_scale = scale;
  }
  eg_optimizer *opt = NULL;
  EG_CHECK_MSG(eg_optimizer_create(rt, &o, &opt) == EG_OK, "%s", eg_last_error());
  return opt;
}

/* fp32: scale 1024 against no scale, on a runtime of `m` (compiled in memory or a .egp). */
static void check_fp32_scaled(const eg_model *m, bool program) {
  eg_runtime *rt = runtime(m, program, EG_PRECISION_FP32);
  eg_runtime *ref = runtime(m, program, EG_PRECISION_FP32);
  eg_optimizer *opt = rt ? sgd(rt, 1024) : NULL, *ref_opt = ref ? sgd(ref, 0) : NULL;
  for (int step = 0; opt && ref_opt && step < 3; step++) {
    EG_CHECK(eg_runtime_run(rt) == EG_OK && eg_runtime_run(ref) == EG_OK);
    EG_CHECK_MSG(eg_test_grads_scaled(m, rt, ref, 1024.0f),
                 "step %d (program %d): gradients not 1024 "
                 "times the unscaled ones", step, program);
    EG_CHECK(eg_optimizer_step(opt) == EG_OK && eg_optimizer_step(ref_opt) == EG_OK);
    EG_CHECK_MSG(eg_test_inputs_equal(m, rt, ref),
                 "step %d (program %d): weights differ", step, program);
  }
  eg_optimizer_destroy(opt);
  if (opt && ref_opt) { /* the seed is 1 again */
    EG_CHECK(eg_runtime_run(rt) == EG_OK && eg_runtime_run(ref) == EG_OK);
    EG_CHECK_MSG(eg_test_grads_scaled(m, rt, ref, 1.0f),
                 "the seed stays scaled after destroy");
  }
  eg_optimizer_destroy(ref_opt);
  eg_runtime_destroy(rt);
  eg_runtime_destroy(ref);
}

static void test_fp32_scaled(void) {
  eg_model *m = load(TINY);
  if (m) check_fp32_scaled(m, false);
  char path[64];
  snprintf(path, sizeof path, "loss_seed_npu_%d.egp", (int)getpid());
  const eg_compile_options co =
      EG_COMPILE_OPTIONS(.soc = "SM8650", .precision = EG_PRECISION_FP32);
  EG_CHECK_MSG(m && eg_model_save_compiled(m, &co, path) == EG_OK, "%s", eg_last_error());
  eg_model *prog = m ? load(path) : NULL;
  if (prog) check_fp32_scaled(prog, true);
  remove(path);
  eg_model_destroy(prog);
  eg_model_destroy(m);
}

static void test_fp16_saturated_scale(void) {
  eg_model *m = load(TINY);
  eg_runtime *a = m ? runtime(m, false, EG_PRECISION_FP16) : NULL;
  eg_runtime *b = m ? runtime(m, false, EG_PRECISION_FP16) : NULL;
  eg_optimizer *oa = a ? sgd(a, 65536) : NULL, *ob = b ? sgd(b, 65504) : NULL;
  for (int step = 0; oa && ob && step < 2; step++) {
    EG_CHECK(eg_runtime_run(a) == EG_OK && eg_runtime_run(b) == EG_OK);
    EG_CHECK_MSG(eg_test_grads_scaled(m, a, b, 1.0f),
                 "step %d: scale 65536 does not give the gradients "
                 "of 65504, the fp16 seed's value", step);
    EG_CHECK(eg_optimizer_step(oa) == EG_OK && eg_optimizer_step(ob) == EG_OK);
    EG_CHECK_MSG(eg_optimizer_skipped_steps(oa) == 0, "step %d skipped", step);
    EG_CHECK_MSG(eg_test_inputs_equal(m, a, b),
                 "step %d: weights differ from the 65504 run's: the "
                 "gradients were not divided by the seed's value", step);
  }
  eg_optimizer_destroy(oa);
  eg_optimizer_destroy(ob);
  eg_runtime_destroy(a);
  eg_runtime_destroy(b);
  eg_model_destroy(m);
}

int main(void) {
  EG_RUN(test_placement);
  EG_RUN(test_fp32_scaled);
  EG_RUN(test_fp16_saturated_scale);
  return eg_test_summary();
}
