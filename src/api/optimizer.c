/* optimizer.c — eg_optimizer_* of the public API, a facade over the optimizer
 * (runtime/optimizer.h): the options read by the struct size rules (edgegrad.h) and their
 * ranges checked, NULLs and indices checked; the optimizer updates. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "api/runtime.h"
#include "api/struct_size.h"
#include "runtime/optimizer.h"
#include "util/error.h"

static eg_optimizer_options defaults(eg_optimizer_kind kind) {
  eg_optimizer_options o = {.struct_size = sizeof o, .kind = kind, .lr = 1e-3, .beta1 = 0.9,
                            .beta2 = 0.999, .eps = 1e-8};
  if (kind == EG_OPTIMIZER_ADAMW) o.weight_decay = 1e-2;
  return o;
}

eg_status(eg_optimizer_defaults)(eg_optimizer_kind kind, eg_optimizer_options *out,
                                 size_t out_size) {
  if (!out) return eg_error(EG_ERR_ARGUMENT, "eg_optimizer_defaults: out is NULL");
  eg_optimizer_options o = defaults(kind);
  o.struct_size = out_size; /* the caller passes it back as its options */
  return EG_STRUCT_WRITE(eg_optimizer_options, out, out_size, &o, "eg_optimizer_defaults");
}

eg_status eg_api_optimizer_options(const eg_optimizer_options *in, const char *where,
                                   eg_optimizer_options *out) {
  /* the caller's kind first (SGD's 0 when its size stops before it): its fields' defaults */
  eg_optimizer_options given = {0};
  EG_TRY(EG_STRUCT_READ(eg_optimizer_options, &given, in, where));
  *out = defaults(given.kind);
  return EG_STRUCT_READ(eg_optimizer_options, out, in, where);
}

static eg_status check_options(const eg_optimizer_options *o) {
  const char *kind = o->kind == EG_OPTIMIZER_SGD ? "sgd" : o->kind == EG_OPTIMIZER_ADAM ? "adam"
                                                                                        : "adamw";
  if (o->kind < EG_OPTIMIZER_SGD || o->kind > EG_OPTIMIZER_ADAMW)
    return eg_error(EG_ERR_ARGUMENT, "eg_optimizer_create: kind (%d): not an eg_optimizer_kind",
                    (int)o->kind);
#define RANGE(ok, what, v, rule)                                                                \
  if (!(ok))                                                                                    \
    return eg_error(EG_ERR_ARGUMENT, "eg_optimizer_create: %s %s (%g): %s", kind, what, v, rule)
  RANGE(isfinite(o->lr) && o->lr >= 0, "lr", o->lr, "must be finite and >= 0");
  RANGE(isfinite(o->weight_decay) && o->weight_decay >= 0, "weight_decay", o->weight_decay,
        "must be finite and >= 0");
  RANGE(o->loss_scale >= EG_LOSS_SCALE_NONE && o->loss_scale <= EG_LOSS_SCALE_AUTO,
        "loss_scale", (double)o->loss_scale, "not an eg_loss_scale_mode");
  RANGE(o->init_scale >= 0 && o->init_scale <= FLT_MAX, "init_scale", o->init_scale,
        "must be in (0, FLT_MAX] (0: GradScaler's 65536)");
  RANGE(o->growth_factor == 0 || (isfinite(o->growth_factor) && o->growth_factor > 1),
        "growth_factor", o->growth_factor, "must be finite and > 1 (0: GradScaler's 2)");
  RANGE(o->backoff_factor >= 0 && o->backoff_factor < 1, "backoff_factor", o->backoff_factor,
        "must be in (0, 1) (0: GradScaler's 0.5)");
  RANGE(o->growth_interval >= 0 && o->growth_interval <= INT32_MAX, "growth_interval",
        (double)o->growth_interval, "must be in [1, 2147483647] (0: GradScaler's 2000)");
  if (o->kind == EG_OPTIMIZER_SGD) {
    RANGE(isfinite(o->momentum) && o->momentum >= 0, "momentum", o->momentum,
          "must be finite and >= 0");
    RANGE(isfinite(o->dampening), "dampening", o->dampening, "must be finite");
    RANGE(!o->nesterov || (o->momentum > 0 && o->dampening == 0), "nesterov with momentum",
          o->momentum, "Nesterov momentum needs momentum > 0 and dampening 0");
  } else {
    RANGE(o->beta1 >= 0 && o->beta1 < 1, "beta1", o->beta1, "must be in [0, 1)");
    RANGE(o->beta2 >= 0 && o->beta2 < 1, "beta2", o->beta2, "must be in [0, 1)");
    RANGE(isfinite(o->eps) && o->eps >= 0, "eps", o->eps, "must be finite and >= 0");
  }
#undef RANGE
  return EG_OK;
}

eg_status eg_optimizer_create(eg_runtime *rt, const eg_optimizer_options *options,
                              eg_optimizer **out) {
  if (!rt || !options || !out) return eg_error(EG_ERR_ARGUMENT, "eg_optimizer_create: NULL argument");
  *out = NULL;
  eg_optimizer_options o;
  EG_TRY(eg_api_optimizer_options(options, "eg_optimizer_create", &o));
  EG_TRY(check_options(&o));
  return eg_opt_create(rt, &o, out);
}

void eg_optimizer_destroy(eg_optimizer *opt) { eg_opt_destroy(opt); }

eg_status eg_optimizer_step(eg_optimizer *opt) {
  if (!opt) return eg_error(EG_ERR_ARGUMENT, "eg_optimizer_step: NULL argument");
  return eg_opt_step(opt);
}

eg_status eg_optimizer_set_lr(eg_optimizer *opt, double lr) {
  if (!opt) return eg_error(EG_ERR_ARGUMENT, "eg_optimizer_set_lr: NULL argument");
  if (!isfinite(lr) || lr < 0)
    return eg_error(EG_ERR_ARGUMENT, "eg_optimizer_set_lr: lr (%g): must be finite and >= 0", lr);
  eg_opt_set_lr(opt, lr);
  return EG_OK;
}

int64_t eg_optimizer_steps(const eg_optimizer *opt) { return opt ? eg_opt_steps(opt) : 0; }

eg_status eg_optimizer_set_steps(eg_optimizer *opt, int64_t steps) {
  if (!opt) return eg_error(EG_ERR_ARGUMENT, "eg_optimizer_set_steps: NULL argument");
  if (steps < 0)
    return eg_error(EG_ERR_ARGUMENT, "eg_optimizer_set_steps: steps (%lld): must be >= 0",
                    (long long)steps);
  eg_opt_set_steps(opt, steps);
  return EG_OK;
}

int eg_optimizer_num_states(const eg_optimizer *opt) { return opt ? eg_opt_num_states(opt) : 0; }

eg_status eg_optimizer_state(eg_optimizer *opt, int index, const char **name, eg_tensor *out) {
  if (!opt || !name || !out) return eg_error(EG_ERR_ARGUMENT, "eg_optimizer_state: NULL argument");
  const int n = eg_opt_num_states(opt);
  if (index < 0 || index >= n)
    return eg_error(EG_ERR_ARGUMENT, "eg_optimizer_state: index (%d) out of range [0, %d)", index,
                    n);
  eg_opt_state(opt, index, name, out);
  return EG_OK;
}

eg_loss_scale_mode eg_optimizer_loss_scaling(const eg_optimizer *opt) {
  return opt ? eg_opt_loss_scaling(opt) : EG_LOSS_SCALE_NONE;
}

double eg_optimizer_loss_scale(const eg_optimizer *opt) { return opt ? eg_opt_loss_scale(opt) : 0; }

int64_t eg_optimizer_skipped_steps(const eg_optimizer *opt) {
  return opt ? eg_opt_skipped_steps(opt) : 0;
}
