/* optimizer.c — the optimizer (optimizer.h) behind eg_optimizer_* of the public API, whose
 * facade (api/optimizer.c) reads and checks the options and arguments: SGD (momentum,
 * dampening, Nesterov, weight decay), Adam and AdamW with torch.optim's update rules, over a
 * runtime's trainable parameters (inputs of role parameter, each paired with its gradient
 * output) and state buffers (inputs of role buffer, each paired with the output of its new
 * value), as the exporter
 * records them (ir/io_role.h). Parameters are updated in place in the runtime's input
 * buffers, so the next eg_runtime_run trains on; state is one float32 tensor per parameter and
 * kind (momentum_buffer; exp_avg, exp_avg_sq), allocated at creation. Scalars are double, the
 * element arithmetic float, in torch.optim's order of operations (its single-tensor path).
 *
 * Loss scaling follows torch.amp.GradScaler (torch/amp/grad_scaler.py and ATen's CPU kernels
 * _amp_foreach_non_finite_check_and_unscale_ and _amp_update_scale_): S is a float32 value, its
 * inverse (float)(1/(double)S), each gradient element checked for inf/NaN and multiplied by it
 * in float32; S *= backoff and S *= growth in double, stored as float. The runtime's seed
 * reads S from this optimizer's state (eg_runtime_bind_loss_seed), so a checkpoint restored
 * into the state view scales the next run. */
#include "runtime/optimizer.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/graph.h"
#include "runtime/engine.h"
#include "util/error.h"

typedef struct opt_param {
  int32_t input, grad_output; /* graph input index, output index of its gradient */
  int64_t numel;
  float *state[2];            /* momentum_buffer | exp_avg, exp_avg_sq (NULL when unused) */
  char *state_name[2];
} opt_param;

struct eg_optimizer {
  eg_runtime *rt;
  eg_optimizer_options o;
  int64_t steps;
  int n_params;
  opt_param *p;
  int n_states_per_param; /* 0 (plain SGD), 1 (SGD with momentum), 2 (Adam/AdamW) */
  /* loss scaling (o.loss_scale != NONE): S, good steps in a row, skipped steps; the state
   * tensor "loss_scaler" */
  double scaler[3];
  float overflow_at;      /* a scaled gradient of this magnitude overflowed (inf; fp16's max
                             on a runtime with fp16 NPU partitions) */
};

enum { SCALER_SCALE, SCALER_GOOD, SCALER_SKIPPED };
static const char scaler_name[] = "loss_scaler";

eg_status eg_opt_create(eg_runtime *rt, const eg_optimizer_options *options, eg_optimizer **out) {
  *out = NULL;
  const eg_optimizer_options o = *options;
  const eg_graph *g = eg_runtime_graph(rt);
  eg_optimizer *opt = calloc(1, sizeof *opt);
  if (!opt || !(opt->p = calloc((size_t)g->n_inputs + 1, sizeof *opt->p))) {
    free(opt);
    return eg_error(EG_ERR_NOMEM, "eg_optimizer_create: out of memory");
  }
  opt->rt = rt;
  opt->o = o;
  if (opt->o.loss_scale == EG_LOSS_SCALE_AUTO)
    opt->o.loss_scale = eg_runtime_npu_fp16(rt) ? EG_LOSS_SCALE_DYNAMIC : EG_LOSS_SCALE_NONE;
  if (!opt->o.init_scale) opt->o.init_scale = 65536.0; /* GradScaler's defaults */
  if (!opt->o.growth_factor) opt->o.growth_factor = 2.0;
  if (!opt->o.backoff_factor) opt->o.backoff_factor = 0.5;
  if (!opt->o.growth_interval) opt->o.growth_interval = 2000;
  opt->scaler[SCALER_SCALE] = (float)opt->o.init_scale;
  opt->overflow_at = eg_runtime_npu_fp16(rt) ? 65504.0f : INFINITY;
  opt->n_states_per_param = o.kind != EG_OPTIMIZER_SGD ? 2 : o.momentum > 0;
  static const char *const suffix[2][2] = {{".momentum_buffer", ""}, {".exp_avg", ".exp_avg_sq"}};
  const int family = o.kind != EG_OPTIMIZER_SGD;
  int n_buffers = 0;
  for (int32_t i = 0; i < g->n_inputs; i++) {
    const eg_named *in = &g->inputs[i];
    const eg_value *v = &g->values[in->value];
    n_buffers += in->role == EG_ROLE_BUFFER && in->pair >= 0;
    if (in->role != EG_ROLE_PARAMETER || in->pair < 0) continue; /* float32 (ir/io_role.h) */
    opt_param *p = &opt->p[opt->n_params++];
    p->input = i;
    p->grad_output = in->pair;
    p->numel = eg_value_numel(v);
    for (int k = 0; k < opt->n_states_per_param; k++) {
      const char *name = g->inputs[i].name;
      size_t len = strlen(name) + strlen(suffix[family][k]) + 1;
      p->state[k] = calloc((size_t)(p->numel ? p->numel : 1), sizeof(float));
      p->state_name[k] = malloc(len);
      if (!p->state[k] || !p->state_name[k]) {
        eg_opt_destroy(opt);
        return eg_error(EG_ERR_NOMEM, "eg_optimizer_create: out of memory for the state of %s",
                        name);
      }
      snprintf(p->state_name[k], len, "%s%s", name, suffix[family][k]);
    }
  }
  if (opt->n_params == 0 && n_buffers == 0) {
    eg_opt_destroy(opt);
    return eg_error(EG_ERR_ARGUMENT, "eg_optimizer_create: the model has no parameter with "
                    "a gradient output and no buffer with an update (no inputs of role "
                    "\"parameter\" or \"buffer\"): nothing to train; a graph exported before "
                    "edgegrad recorded roles has none: export the training step again with this "
                    "edgegrad's exporter");
  }
  eg_status s = opt->o.loss_scale != EG_LOSS_SCALE_NONE
                    ? eg_runtime_bind_loss_seed(rt, &opt->scaler[SCALER_SCALE])
                    : EG_OK;
  if (s != EG_OK) {
    opt->o.loss_scale = EG_LOSS_SCALE_NONE; /* nothing bound: nothing to undo */
    eg_opt_destroy(opt);
    return s;
  }
  *out = opt;
  return EG_OK;
}

void eg_opt_destroy(eg_optimizer *opt) {
  if (!opt) return;
  if (opt->o.loss_scale != EG_LOSS_SCALE_NONE) eg_runtime_bind_loss_seed(opt->rt, NULL);
  for (int i = 0; i < opt->n_params; i++)
    for (int k = 0; k < 2; k++) {
      free(opt->p[i].state[k]);
      free(opt->p[i].state_name[k]);
    }
  free(opt->p);
  free(opt);
}

static void sgd(const eg_optimizer *opt, const opt_param *p, float *w, const float *grad) {
  const float lr = (float)opt->o.lr, wd = (float)opt->o.weight_decay;
  const float mom = (float)opt->o.momentum, keep = (float)(1.0 - opt->o.dampening);
  float *buf = p->state[0];
  const bool first = opt->steps == 0, nesterov = opt->o.nesterov;
  for (int64_t k = 0; k < p->numel; k++) {
    float d = wd != 0.0f ? grad[k] + wd * w[k] : grad[k];
    if (buf) {
      buf[k] = first ? d : mom * buf[k] + keep * d;
      d = nesterov ? d + mom * buf[k] : buf[k];
    }
    w[k] -= lr * d;
  }
}

static void adam(const eg_optimizer *opt, const opt_param *p, float *w, const float *grad) {
  const double t = (double)(opt->steps + 1), b1 = opt->o.beta1, b2 = opt->o.beta2;
  const float wd = (float)opt->o.weight_decay;
  const bool decoupled = opt->o.kind == EG_OPTIMIZER_ADAMW;
  const float decay = (float)(1.0 - opt->o.lr * opt->o.weight_decay);
  const float w1 = (float)(1.0 - b1), fb2 = (float)b2, w2 = (float)(1.0 - b2);
  const float step_size = (float)(opt->o.lr / (1.0 - pow(b1, t)));
  const float bc2_sqrt = (float)sqrt(1.0 - pow(b2, t)), eps = (float)opt->o.eps;
  float *m = p->state[0], *v = p->state[1];
  for (int64_t k = 0; k < p->numel; k++) {
    float g = grad[k];
    if (decoupled) w[k] *= decay;
    else if (wd != 0.0f) g += wd * w[k];
    m[k] += w1 * (g - m[k]);
    v[k] = fb2 * v[k] + w2 * g * g;
    w[k] -= step_size * (m[k] / (sqrtf(v[k]) / bc2_sqrt + eps));
  }
}

/* Parameter p's gradient output of the last successful run. */
static eg_status grad_of(const eg_optimizer *opt, const opt_param *p, eg_tensor *grad) {
  eg_status s = eg_runtime_output(opt->rt, p->grad_output, grad);
  if (s == EG_ERR_STATE)
    return eg_error(EG_ERR_STATE, "eg_optimizer_step: no successful run yet: the step reads "
                    "the gradients of the last eg_runtime_run that returned EG_OK");
  return s;
}

/* The loss scaler's state, which a checkpoint may have written: S a positive float32, the
 * counts whole numbers, the good steps fewer than growth_interval. */
static eg_status check_scaler(const eg_optimizer *opt) {
  const double *st = opt->scaler, scale = st[SCALER_SCALE];
  const bool ok = scale > 0 && scale <= FLT_MAX && (double)(float)scale == scale &&
                  st[SCALER_GOOD] >= 0 && st[SCALER_GOOD] < (double)opt->o.growth_interval &&
                  st[SCALER_GOOD] == floor(st[SCALER_GOOD]) && st[SCALER_SKIPPED] >= 0 &&
                  st[SCALER_SKIPPED] < 0x1p53 && st[SCALER_SKIPPED] == floor(st[SCALER_SKIPPED]);
  if (ok) return EG_OK;
  return eg_error(EG_ERR_STATE, "eg_optimizer_step: %s (scale %g, good steps %g, skipped %g): "
                  "the scale must be a positive float32, the counts whole numbers >= 0, the "
                  "good steps below growth_interval %lld", scaler_name, scale, st[SCALER_GOOD],
                  st[SCALER_SKIPPED], (long long)opt->o.growth_interval);
}

/* Loss scaling, before the update: every gradient element checked (inf, NaN, or a magnitude
 * of at least overflow_at) and unscaled in place; *overflowed when one failed the check. A
 * gradient buffer two parameters share is unscaled once. */
static eg_status unscale(const eg_optimizer *opt, bool *overflowed) {
  /* the seed held S as its readers store it (fp16 on an NPU partition: 65536 is 65504) */
  const double held = eg_runtime_loss_seed_value(opt->rt, opt->scaler[SCALER_SCALE]);
  const float inv = (float)(1.0 / held), limit = opt->overflow_at;
  bool found = false;
  for (int i = 0; i < opt->n_params; i++) {
    eg_tensor grad, other;
    EG_TRY(grad_of(opt, &opt->p[i], &grad));
    bool seen = false;
    for (int j = 0; j < i && !seen; j++)
      seen = grad_of(opt, &opt->p[j], &other) == EG_OK && other.data == grad.data;
    float *g = grad.data;
    for (int64_t k = 0; !seen && k < opt->p[i].numel; k++) {
      found = found || !(fabsf(g[k]) < limit); /* NaN fails the comparison too */
      if (inv != 1.0f) g[k] *= inv;
    }
  }
  *overflowed = found;
  return EG_OK;
}

/* GradScaler's update of S after a step (DYNAMIC; STATIC keeps S, counting skips only). */
static void update_scale(eg_optimizer *opt, bool overflowed) {
  double *st = opt->scaler;
  if (overflowed) st[SCALER_SKIPPED] += 1;
  if (opt->o.loss_scale != EG_LOSS_SCALE_DYNAMIC) return;
  if (overflowed) {
    st[SCALER_SCALE] = (float)(st[SCALER_SCALE] * opt->o.backoff_factor);
    st[SCALER_GOOD] = 0;
  } else if (st[SCALER_GOOD] + 1 == (double)opt->o.growth_interval) {
    const float grown = (float)(st[SCALER_SCALE] * opt->o.growth_factor);
    if (isfinite(grown)) st[SCALER_SCALE] = grown; /* never past float32's range */
    st[SCALER_GOOD] = 0;
  } else {
    st[SCALER_GOOD] += 1;
  }
}

/* Every state buffer takes its new value. */
static void take_buffers(const eg_optimizer *opt) {
  const eg_graph *g = eg_runtime_graph(opt->rt);
  for (int32_t i = 0; i < g->n_inputs; i++) {
    const int32_t o = g->inputs[i].role == EG_ROLE_BUFFER ? g->inputs[i].pair : -1;
    eg_tensor b, nb;
    if (o < 0 || eg_runtime_input(opt->rt, i, &b) != EG_OK ||
        eg_runtime_output(opt->rt, o, &nb) != EG_OK)
      continue;
    const size_t bytes = (size_t)eg_tensor_numel(&b) * eg_dtype_size(b.dtype);
    if (bytes && b.data != nb.data) memcpy(b.data, nb.data, bytes);
  }
}

eg_status eg_opt_step(eg_optimizer *opt) {
  /* Adam's t is steps + 1 and the count goes up by one: both must stay an int64. Checked
   * before any parameter moves, so a refused step changes nothing. */
  if (opt->steps == INT64_MAX)
    return eg_error(EG_ERR_STATE, "eg_optimizer_step: step count (%lld): at its maximum, no "
                    "further step can be counted (eg_optimizer_set_steps sets it lower)",
                    (long long)opt->steps);
  const bool scaling = opt->o.loss_scale != EG_LOSS_SCALE_NONE;
  bool overflowed = false;
  if (scaling) {
    EG_TRY(check_scaler(opt));
    EG_TRY(unscale(opt, &overflowed));
  }
  for (int i = 0; i < opt->n_params && !overflowed; i++) {
    const opt_param *p = &opt->p[i];
    eg_tensor w, grad;
    eg_status s = grad_of(opt, p, &grad);
    if (s == EG_OK) s = eg_runtime_input(opt->rt, p->input, &w);
    if (s != EG_OK) return s;
    if (opt->o.kind == EG_OPTIMIZER_SGD) sgd(opt, p, w.data, grad.data);
    else adam(opt, p, w.data, grad.data);
  }
  take_buffers(opt);
  if (scaling) update_scale(opt, overflowed);
  if (!overflowed) opt->steps++;
  return EG_OK;
}

void eg_opt_set_lr(eg_optimizer *opt, double lr) { opt->o.lr = lr; }

int64_t eg_opt_steps(const eg_optimizer *opt) { return opt->steps; }

void eg_opt_set_steps(eg_optimizer *opt, int64_t steps) { opt->steps = steps; }

int eg_opt_num_states(const eg_optimizer *opt) {
  return opt->n_params * opt->n_states_per_param + (opt->o.loss_scale != EG_LOSS_SCALE_NONE);
}

void eg_opt_state(eg_optimizer *opt, int index, const char **name, eg_tensor *out) {
  memset(out, 0, sizeof *out);
  if (index == opt->n_params * opt->n_states_per_param) { /* the loss scaler's, last */
    out->dtype = EG_DTYPE_FLOAT64;
    out->rank = 1;
    out->shape[0] = 3;
    out->data = opt->scaler;
    *name = scaler_name;
    return;
  }
  const opt_param *p = &opt->p[index / opt->n_states_per_param];
  const int k = index % opt->n_states_per_param;
  const eg_graph *g = eg_runtime_graph(opt->rt);
  const eg_value *v = &g->values[g->inputs[p->input].value];
  out->dtype = EG_DTYPE_FLOAT32;
  out->rank = v->rank;
  memcpy(out->shape, v->shape, sizeof out->shape);
  out->data = p->state[k];
  *name = p->state_name[k];
}

eg_loss_scale_mode eg_opt_loss_scaling(const eg_optimizer *opt) { return opt->o.loss_scale; }

double eg_opt_loss_scale(const eg_optimizer *opt) {
  return opt->o.loss_scale != EG_LOSS_SCALE_NONE ? opt->scaler[SCALER_SCALE] : 1.0;
}

int64_t eg_opt_skipped_steps(const eg_optimizer *opt) {
  const double k = opt->scaler[SCALER_SKIPPED]; /* a checkpoint may have written it */
  return k >= 0 && k < 0x1p53 ? (int64_t)k : -1;
}
