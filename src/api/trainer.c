/* trainer.c — eg_trainer_* of the public API, a facade over the trainer (runtime/trainer.h):
 * it reads the caller's options and arrays by the struct size rules (edgegrad.h, "binary
 * compatibility"), checks NULLs and ranges, and calls the trainer, which does the rest. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "api/runtime.h"
#include "api/struct_size.h"
#include "runtime/trainer.h"
#include "util/error.h"

static eg_trainer_options defaults(void) {
  return (eg_trainer_options){.struct_size = sizeof(eg_trainer_options), .optimizer = NULL,
                              .schedule = EG_LR_CONSTANT, .lr_step = 1, .lr_gamma = 0.1,
                              .shuffle = true, .std = 1};
}

eg_status(eg_trainer_defaults)(eg_trainer_options *out, size_t out_size) {
  if (!out) return eg_error(EG_ERR_ARGUMENT, "eg_trainer_defaults: out is NULL");
  eg_trainer_options o = defaults();
  o.struct_size = out_size; /* the caller passes it back as its options */
  return EG_STRUCT_WRITE(eg_trainer_options, out, out_size, &o, "eg_trainer_defaults");
}

/* The caller's options (and the optimizer's they point to) in the library's layout: *o, with
 * o->optimizer pointing at *opt. */
static eg_status read_options(const eg_trainer_options *in, eg_trainer_options *o,
                              eg_optimizer_options *opt) {
  *o = defaults();
  EG_TRY(EG_STRUCT_READ(eg_trainer_options, o, in, "eg_trainer_create"));
  if (o->optimizer) {
    EG_TRY(eg_api_optimizer_options(o->optimizer, "eg_trainer_create: optimizer", opt));
  } else {
    EG_TRY((eg_optimizer_defaults)(EG_OPTIMIZER_SGD, opt, sizeof *opt));
    opt->loss_scale = EG_LOSS_SCALE_AUTO;
  }
  o->optimizer = opt;
  return EG_OK;
}

static eg_status check_options(const eg_trainer_options *o) {
  if (o->schedule < EG_LR_CONSTANT || o->schedule > EG_LR_COSINE)
    return eg_error(EG_ERR_ARGUMENT, "eg_trainer_create: schedule (%d): not an eg_lr_schedule",
                    (int)o->schedule);
  if (o->schedule == EG_LR_STEP && (o->lr_step < 1 || !isfinite(o->lr_gamma) || o->lr_gamma < 0))
    return eg_error(EG_ERR_ARGUMENT, "eg_trainer_create: step schedule (lr_step %lld, lr_gamma "
                    "%g): lr_step >= 1 and a finite lr_gamma >= 0", (long long)o->lr_step,
                    o->lr_gamma);
  if (o->schedule == EG_LR_COSINE && o->epochs < 1)
    return eg_error(EG_ERR_ARGUMENT, "eg_trainer_create: cosine schedule (epochs %lld): the "
                    "epochs it spans must be >= 1", (long long)o->epochs);
  if (o->normalize && !(isfinite(o->mean) && isfinite(o->std) && o->std > 0))
    return eg_error(EG_ERR_ARGUMENT, "eg_trainer_create: normalize (mean %g, std %g): finite, "
                    "std > 0", o->mean, o->std);
  return EG_OK;
}

/* The caller's `n` arrays at `a` in the library's layout, malloc'ed in *out (NULL when there
 * are none or `a` is NULL: the caller's checks report it): walked with the first one's
 * struct_size as the stride, each read by the struct size rules (edgegrad.h; `input` and `t`
 * are required), every one giving the same struct_size. */
static eg_status read_arrays(const eg_trainer_array *a, int n, const char *where,
                             eg_trainer_array **out) {
  *out = NULL;
  if (n <= 0 || !a) return EG_OK;
  if (!(*out = calloc((size_t)n, sizeof **out)))
    return eg_error(EG_ERR_NOMEM, "%s: out of memory", where);
  const size_t stride = a->struct_size; /* read as element 0, checked there before any other */
  eg_status s = EG_OK;
  for (int k = 0; s == EG_OK && k < n; k++) {
    const eg_trainer_array *ak = (const void *)((const char *)a + (size_t)k * stride);
    if (k > 0 && ak->struct_size != stride)
      s = eg_error(EG_ERR_ARGUMENT, "%s: arrays[%d].struct_size (%zu; arrays[0]'s %zu): every "
                   "element of an array gives the same size, its stride", where, k,
                   ak->struct_size, stride);
    else
      s = eg_struct_read(&(*out)[k], sizeof **out, _Alignof(eg_trainer_array),
                         offsetof(eg_trainer_array, origin), ak, where, "eg_trainer_array");
  }
  if (s != EG_OK) {
    free(*out);
    *out = NULL;
  }
  return s;
}

eg_status eg_trainer_create(eg_runtime *rt, const eg_trainer_options *options, eg_trainer **out) {
  if (!out) return eg_error(EG_ERR_ARGUMENT, "eg_trainer_create: out is NULL");
  *out = NULL;
  if (!rt || !options)
    return eg_error(EG_ERR_ARGUMENT, "eg_trainer_create: %s is NULL", !rt ? "runtime" : "options");
  eg_trainer_options o;
  eg_optimizer_options opt_o;
  EG_TRY(read_options(options, &o, &opt_o));
  EG_TRY(check_options(&o));
  return eg_train_create(rt, &o, out);
}

void eg_trainer_destroy(eg_trainer *tr) { eg_train_destroy(tr); }

eg_status eg_trainer_set_data(eg_trainer *tr, const eg_trainer_array *arrays, int n) {
  if (!tr) return eg_error(EG_ERR_ARGUMENT, "eg_trainer_set_data: trainer is NULL");
  eg_trainer_array *copy = NULL;
  EG_TRY(read_arrays(arrays, n, "eg_trainer_set_data", &copy));
  const eg_status s = eg_train_set_data(tr, copy, n);
  free(copy);
  return s;
}

eg_status eg_trainer_set_eval(eg_trainer *tr, eg_runtime *eval_rt, const eg_trainer_array *arrays,
                              int n) {
  if (!tr) return eg_error(EG_ERR_ARGUMENT, "eg_trainer_set_eval: trainer is NULL");
  eg_trainer_array *copy = NULL;
  if (eval_rt) EG_TRY(read_arrays(arrays, n, "eg_trainer_set_eval", &copy));
  const eg_status s = eg_train_set_eval(tr, eval_rt, copy, n);
  free(copy);
  return s;
}

eg_status eg_trainer_hold_out(eg_trainer *tr, eg_runtime *eval_rt, double fraction) {
  if (!tr || !eval_rt)
    return eg_error(EG_ERR_ARGUMENT, "eg_trainer_hold_out: %s is NULL",
                    !tr ? "trainer" : "eval_rt");
  return eg_train_hold_out(tr, eval_rt, fraction);
}

void eg_trainer_set_callback(eg_trainer *tr, eg_trainer_callback callback, void *user) {
  if (tr) eg_train_set_callback(tr, callback, user);
}

eg_optimizer *eg_trainer_optimizer(eg_trainer *tr) { return tr ? eg_train_optimizer(tr) : NULL; }

eg_status eg_trainer_set_log(eg_trainer *tr, const char *path, bool append) {
  if (!tr) return eg_error(EG_ERR_ARGUMENT, "eg_trainer_set_log: trainer is NULL");
  return eg_train_set_log(tr, path, append);
}

eg_status eg_trainer_set_checkpoints(eg_trainer *tr, const char *path, int64_t every_steps) {
  if (!tr) return eg_error(EG_ERR_ARGUMENT, "eg_trainer_set_checkpoints: trainer is NULL");
  if (every_steps < 0)
    return eg_error(EG_ERR_ARGUMENT, "eg_trainer_set_checkpoints: every_steps (%lld): >= 0",
                    (long long)every_steps);
  return eg_train_set_checkpoints(tr, path, every_steps);
}

void eg_trainer_position(const eg_trainer *tr, int64_t *epoch, int64_t *step,
                         int64_t *steps_per_epoch) {
  int64_t at[3] = {0, 0, 0};
  if (tr) eg_train_position(tr, at);
  if (epoch) *epoch = at[0];
  if (step) *step = at[1];
  if (steps_per_epoch) *steps_per_epoch = at[2];
}

void eg_trainer_sizes(const eg_trainer *tr, int64_t *examples, int64_t *batch,
                      int64_t *val_examples, int64_t *val_batch) {
  int64_t n[4] = {0, 0, 0, 0};
  if (tr) eg_train_sizes(tr, n);
  if (examples) *examples = n[0];
  if (batch) *batch = n[1];
  if (val_examples) *val_examples = n[2];
  if (val_batch) *val_batch = n[3];
}

eg_status eg_trainer_evaluate(eg_trainer *tr, double *loss, double *accuracy) {
  if (!tr) return eg_error(EG_ERR_ARGUMENT, "eg_trainer_evaluate: trainer is NULL");
  return eg_train_evaluate(tr, loss, accuracy);
}

eg_status eg_trainer_step(eg_trainer *tr, double *loss) {
  if (!tr) return eg_error(EG_ERR_ARGUMENT, "eg_trainer_step: trainer is NULL");
  return eg_train_step(tr, loss);
}

eg_status eg_trainer_fit(eg_trainer *tr, int64_t epochs) {
  if (!tr) return eg_error(EG_ERR_ARGUMENT, "eg_trainer_fit: trainer is NULL");
  return eg_train_fit(tr, epochs);
}

eg_status eg_trainer_step_batch(eg_trainer *tr, const eg_trainer_array *batch, int n,
                                double *loss) {
  if (!tr) return eg_error(EG_ERR_ARGUMENT, "eg_trainer_step_batch: trainer is NULL");
  if (n < 0 || (n > 0 && !batch))
    return eg_error(EG_ERR_ARGUMENT, "eg_trainer_step_batch: %d arrays%s", n,
                    n > 0 ? " at NULL" : "");
  eg_trainer_array *copy = NULL;
  EG_TRY(read_arrays(batch, n, "eg_trainer_step_batch", &copy));
  const eg_status s = eg_train_step_batch(tr, copy, n, loss);
  free(copy);
  return s;
}

eg_status eg_trainer_save_checkpoint(eg_trainer *tr, const char *path) {
  if (!tr || !path)
    return eg_error(EG_ERR_ARGUMENT, "eg_trainer_save_checkpoint: %s is NULL",
                    !tr ? "trainer" : "path");
  return eg_train_save_checkpoint(tr, path);
}

/* The checkpoint file is read here (safetensors: api/weights.c), its content restored by the
 * trainer. */
eg_status eg_trainer_load_checkpoint(eg_trainer *tr, const char *path) {
  if (!tr || !path)
    return eg_error(EG_ERR_ARGUMENT, "eg_trainer_load_checkpoint: %s is NULL",
                    !tr ? "trainer" : "path");
  if (!eg_train_has_data(tr))
    return eg_error(EG_ERR_STATE, "eg_trainer_load_checkpoint: no training data: set the data "
                    "the checkpoint's run trained on first");
  eg_safetensors *f;
  EG_TRY(eg_safetensors_load_for(path, &f));
  const eg_status s = eg_train_load_checkpoint(tr, f, path);
  eg_safetensors_destroy(f);
  return s;
}

eg_status eg_trainer_save_weights(eg_trainer *tr, const char *path, const char *producer) {
  if (!tr || !path)
    return eg_error(EG_ERR_ARGUMENT, "eg_trainer_save_weights: %s is NULL",
                    !tr ? "trainer" : "path");
  return eg_train_save_weights(tr, path, producer);
}
