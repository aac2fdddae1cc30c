/* trainer.c — the trainer (trainer.h): fine-tuning as a library. A training loop over a
 * runtime of a training step: an optimizer (eg_optimizer, runtime/optimizer.c) over its
 * parameters, mini-batches of the graph's batch size fed from arrays the caller owns, a
 * permutation per epoch, the step's random inputs drawn from one stream, a learning-rate
 * schedule, an evaluation graph, events to a callback, and checkpoints that resume bit for bit
 * (their content: the run's position, its random stream, the parameters and the optimizer's
 * state, a checksum; the file is safetensors, the public format's codec in api/). eg_trainer_*
 * of the public API
 * (api/trainer.c) check their arguments and call these; `edgegrad train`, `edgegrad run
 * --steps`, the C example and the Python Trainer are shells over it.
 *
 * The order of examples in epoch e is a permutation drawn from (seed, e) alone; the random
 * inputs come from a splitmix64 stream whose state a checkpoint keeps: so a run resumed at any
 * step feeds what an uninterrupted one would. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "runtime/trainer.h"

#include "ir/graph.h"
#include "runtime/engine.h"
#include "runtime/graph_io.h"
#include "util/error.h"

/* One data or label input of a model, its caller's array [N, ...] and the batch buffer. */
typedef struct feed_in {
  int input;          /* the model's input index */
  eg_tensor_desc d;   /* the input */
  eg_tensor src;      /* the caller's examples (a view) */
  char *origin;       /* for messages */
  size_t row_src, row_batch; /* bytes per example */
  eg_tensor batch;    /* malloc'ed */
  void *owned;        /* src's bytes when the trainer copied them (eg_trainer_hold_out) */
} feed_in;

typedef struct data_set {
  feed_in *in;
  int n_in, cap; /* inputs fed; entries of `in` (each zeroed or owning what it holds) */
  int64_t n_examples, batch, steps;
  int64_t *perm; /* the order fed */
} data_set;

typedef struct random_in {
  const char *name;
  double p;
  eg_tensor mask;
} random_in;

struct eg_trainer {
  eg_runtime *rt;
  const eg_graph *g;
  eg_trainer_options o;       /* the options read; o.optimizer points at opt_o */
  eg_optimizer_options opt_o; /* the optimizer's, loss scaling AUTO resolved */
  eg_optimizer *opt;
  int loss_at;
  data_set train, val;
  uint64_t data_hash;
  double held_out; /* eg_trainer_hold_out's fraction; 0: none */
  eg_runtime *eval_rt;
  const eg_graph *eval_g;
  int eval_loss_at, eval_out_at;
  random_in *rnd;
  int n_rnd;
  uint64_t rng;
  /* position: epochs done, steps done in the next epoch, its loss sum so far */
  int64_t epoch, step;
  double loss_sum;
  /* the epoch under way in this process: started (order drawn, lr set), when, from which step */
  bool started;
  double t0;
  int64_t first;
  int64_t grad_elems, zero_grads;
  eg_trainer_callback cb;
  void *user;
  FILE *log;
  char *log_path, *ckpt_path;
  int64_t ckpt_every;
  int64_t ckpt_written; /* global step of the last checkpoint written or read; -1 none */
  char note[1200];
};

/* ---- the data ---- */

static bool is_int(eg_dtype t) {
  return t == EG_DTYPE_INT64 || t == EG_DTYPE_INT32 || t == EG_DTYPE_INT8 || t == EG_DTYPE_UINT8;
}

static int64_t int_at(const eg_tensor *t, int64_t k) {
  switch (t->dtype) {
  case EG_DTYPE_INT64: return ((const int64_t *)t->data)[k];
  case EG_DTYPE_INT32: return ((const int32_t *)t->data)[k];
  case EG_DTYPE_INT8: return ((const int8_t *)t->data)[k];
  default: return ((const uint8_t *)t->data)[k];
  }
}

static const char *shape_text(char *buf, size_t size, const int64_t *shape, int rank) {
  return eg_fmt_ints(buf, size, shape, rank);
}

/* Whether input `i` of `g` is fed from arrays: a data or label input of the step. For an
 * evaluation graph (`step` the training step's graph), every input that is no parameter or
 * buffer of the step and no random draw. */
static bool is_fed(const eg_graph *g, int i, const eg_graph *step) {
  eg_tensor_desc d;
  eg_graph_describe(g, true, i, &d);
  if (d.role == EG_ROLE_RANDOM) return false;
  for (int j = 0; j < step->n_inputs; j++) {
    eg_tensor_desc s;
    eg_graph_describe(step, true, j, &s);
    if ((s.role == EG_ROLE_PARAMETER || s.role == EG_ROLE_BUFFER) && strcmp(s.name, d.name) == 0)
      return false;
  }
  return true;
}

/* One array against its input: shape, dtype, values (finite floats, labels >= 0 and below the
 * classes of the loss reading them, or its ignore_index). */
static eg_status check_array(const eg_trainer *tr, const eg_graph *g, const feed_in *x,
                             const char *set) {
  const eg_tensor *f = &x->src, *want = &x->d.tensor;
  char got_s[256], want_s[256];
  shape_text(got_s, sizeof got_s, f->shape, f->rank);
  shape_text(want_s, sizeof want_s, want->shape + 1, want->rank - 1);
  bool same = f->rank == want->rank;
  for (int d = 1; same && d < f->rank; d++) same = f->shape[d] == want->shape[d];
  if (!same)
    return eg_error(EG_ERR_ARGUMENT, "data %s: shape %s: each example must be %s (input %s "
                    "without its batch axis of %lld), after a first axis of examples", x->origin,
                    got_s, want_s, x->d.name, (long long)want->shape[0]);
  const eg_dtype fd = f->dtype, md = want->dtype;
  const bool ok = fd == md || (md == EG_DTYPE_INT64 && is_int(fd)) ||
                  (md == EG_DTYPE_FLOAT32 && fd == EG_DTYPE_UINT8 && tr->o.normalize);
  if (!ok && md == EG_DTYPE_FLOAT32 && fd == EG_DTYPE_UINT8)
    return eg_error(EG_ERR_ARGUMENT, "data %s: dtype uint8 for float32 input %s: normalize it "
                    "(x/255 - MEAN) / STD (--normalize MEAN,STD)", x->origin, x->d.name);
  if (!ok)
    return eg_error(EG_ERR_ARGUMENT, "data %s: dtype %s for input %s of dtype %s: give %s%s",
                    x->origin, eg_dtype_name(fd), x->d.name, eg_dtype_name(md),
                    eg_dtype_name(md),
                    md == EG_DTYPE_INT64 ? " (or another integer dtype)"
                    : md == EG_DTYPE_FLOAT32 ? " (or uint8 with --normalize)" : "");
  const int64_t n = eg_tensor_numel(f), per = f->shape[0] ? n / f->shape[0] : 1;
  int64_t classes = 0, ignore = 0;
  if (md == EG_DTYPE_INT64) eg_graph_input_classes(g, x->input, &classes, &ignore);
  for (int64_t k = 0; k < n; k++) {
    const double v = fd == EG_DTYPE_FLOAT32 ? ((const float *)f->data)[k]
                     : fd == EG_DTYPE_FLOAT64 ? ((const double *)f->data)[k] : 0.0;
    if (!isfinite(v))
      return eg_error(EG_ERR_ARGUMENT, "data %s: element %lld (example %lld) is %g: data must be "
                      "finite", x->origin, (long long)k, (long long)(k / per), v);
    if (md != EG_DTYPE_INT64) continue;
    const int64_t label = int_at(f, k);
    if (label < 0)
      return eg_error(EG_ERR_ARGUMENT, "data %s: label %lld at example %lld: class labels are "
                      ">= 0", x->origin, (long long)label, (long long)(k / per));
    if (classes > 0 && label >= classes && label != ignore)
      return eg_error(EG_ERR_ARGUMENT, "data %s: label %lld at example %lld%s: the model has "
                      "%lld classes (input %s is the target of its nll_loss): labels are in "
                      "[0, %lld)", x->origin, (long long)label, (long long)(k / per),
                      strcmp(set, "validation") == 0 ? " of the validation set" : "",
                      (long long)classes, x->d.name, (long long)classes);
  }
  return EG_OK;
}

static void free_set(data_set *ds) {
  for (int k = 0; ds->in && k < ds->cap; k++) {
    free(ds->in[k].batch.data);
    free(ds->in[k].origin);
    free(ds->in[k].owned);
  }
  free(ds->in);
  free(ds->perm);
  memset(ds, 0, sizeof *ds);
}

/* The arrays (in the library's layout) for every fed input of `g` into `ds` (checked; batch
 * buffers made). */
static eg_status make_set(const eg_trainer *tr, const eg_graph *g, const eg_trainer_array *a,
                             int n, const char *set, data_set *ds) {
  if (n < 0 || (n > 0 && !a))
    return eg_error(EG_ERR_ARGUMENT, "eg_trainer: %s arrays: %d given%s", set, n,
                    n > 0 ? " at NULL" : "");
  for (int k = 0; k < n; k++) {
    int i = 0;
    while (i < g->n_inputs && (!a[k].input || strcmp(g->inputs[i].name, a[k].input) != 0)) i++;
    if (i == g->n_inputs || !is_fed(g, i, tr->g))
      return eg_error(EG_ERR_ARGUMENT, "%s array %s: %s", set, a[k].input ? a[k].input : "(NULL)",
                      i == g->n_inputs ? "no input of the model has that name"
                                       : "not a data input (a parameter, buffer or random draw)");
  }
  if (!(ds->in = calloc((size_t)g->n_inputs + 1, sizeof *ds->in)))
    return eg_error(EG_ERR_NOMEM, "eg_trainer: out of memory");
  ds->cap = g->n_inputs + 1;
  eg_status s = EG_OK;
  for (int i = 0; s == EG_OK && i < g->n_inputs; i++) {
    if (!is_fed(g, i, tr->g)) continue;
    feed_in *x = &ds->in[ds->n_in];
    x->input = i;
    eg_graph_describe(g, true, i, &x->d);
    const eg_trainer_array *arr = NULL;
    for (int k = 0; k < n && !arr; k++)
      if (strcmp(a[k].input, x->d.name) == 0) arr = &a[k];
    if (!arr)
      return eg_error(EG_ERR_ARGUMENT, "%s data: input %s (%s) has no array: every data input "
                      "needs its examples", set, x->d.name, eg_dtype_name(x->d.tensor.dtype));
    if (x->d.tensor.rank < 1)
      return eg_error(EG_ERR_ARGUMENT, "input %s: a data input needs a batch axis", x->d.name);
    x->src = arr->t;
    char fallback[300];
    snprintf(fallback, sizeof fallback, "array %s", x->d.name);
    if (!(x->origin = strdup(arr->origin ? arr->origin : fallback)))
      return eg_error(EG_ERR_NOMEM, "eg_trainer: out of memory");
    if (x->src.rank < 1 || (!x->src.data && eg_tensor_numel(&x->src) > 0))
      return eg_error(EG_ERR_ARGUMENT, "data %s: rank %d%s: an array of examples has a first "
                      "axis and data", x->origin, x->src.rank, x->src.data ? "" : ", no data");
    s = check_array(tr, g, x, set);
    const char *first = ds->n_in ? ds->in[0].d.name : NULL;
    if (s == EG_OK && first && x->src.shape[0] != ds->n_examples)
      s = eg_error(EG_ERR_ARGUMENT, "data %s: %lld examples, %s has %lld: every array holds the "
                   "same examples", x->origin, (long long)x->src.shape[0], first,
                   (long long)ds->n_examples);
    if (s == EG_OK && first && x->d.tensor.shape[0] != ds->batch)
      s = eg_error(EG_ERR_ARGUMENT, "input %s: batch axis %lld, input %s's is %lld: data inputs "
                   "share their first axis", x->d.name, (long long)x->d.tensor.shape[0], first,
                   (long long)ds->batch);
    if (s != EG_OK) break;
    ds->n_in++;
    ds->n_examples = x->src.shape[0];
    ds->batch = x->d.tensor.shape[0];
    const int64_t per = ds->n_examples ? eg_tensor_numel(&x->src) / ds->n_examples : 0;
    x->row_src = (size_t)per * eg_dtype_size(x->src.dtype);
    x->row_batch = (size_t)per * eg_dtype_size(x->d.tensor.dtype);
    x->batch = x->d.tensor;
    if (!(x->batch.data = malloc(x->row_batch * (size_t)ds->batch + 1)))
      s = eg_error(EG_ERR_NOMEM, "eg_trainer: out of memory");
  }
  if (s != EG_OK) return s;
  if (ds->n_in == 0)
    return eg_error(EG_ERR_ARGUMENT, "%s data: every input is a parameter, buffer or random "
                    "draw: no data input to feed", set);
  ds->steps = ds->batch ? ds->n_examples / ds->batch : 0;
  if (ds->steps == 0)
    return eg_error(EG_ERR_ARGUMENT, "%s data: %lld examples, fewer than the graph's batch size "
                    "%lld: not one batch", set, (long long)ds->n_examples, (long long)ds->batch);
  if (!(ds->perm = malloc(sizeof(int64_t) * (size_t)ds->n_examples)))
    return eg_error(EG_ERR_NOMEM, "eg_trainer: out of memory");
  for (int64_t i = 0; i < ds->n_examples; i++) ds->perm[i] = i;
  return EG_OK;
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
  return h;
}

eg_status eg_train_set_data(eg_trainer *tr, const eg_trainer_array *arrays, int n) {
  data_set ds = {0};
  eg_status s = make_set(tr, tr->g, arrays, n, "training", &ds);
  if (s != EG_OK) {
    free_set(&ds);
    return s;
  }
  free_set(&tr->train);
  tr->train = ds;
  tr->data_hash = 0xcbf29ce484222325ULL;
  for (int k = 0; k < ds.n_in; k++) {
    const feed_in *x = &ds.in[k];
    tr->data_hash = fnv1a(tr->data_hash, x->d.name, strlen(x->d.name) + 1);
    tr->data_hash = fnv1a(tr->data_hash, x->src.data, x->row_src * (size_t)ds.n_examples);
  }
  tr->held_out = 0;
  tr->epoch = tr->step = 0;
  tr->loss_sum = 0;
  tr->started = false;
  return EG_OK;
}

static int output_at(const eg_graph *g, const char *name) {
  for (int i = 0; i < g->n_outputs; i++)
    if (strcmp(g->outputs[i].name, name) == 0) return i;
  return -1;
}

eg_status eg_train_set_eval(eg_trainer *tr, eg_runtime *eval_rt, const eg_trainer_array *arrays,
                            int n) {
  free_set(&tr->val);
  tr->eval_rt = NULL;
  tr->eval_g = NULL;
  if (!eval_rt) return EG_OK;
  const eg_graph *g = eg_runtime_graph(eval_rt);
  const int loss_at = output_at(g, "loss");
  eg_tensor_desc d;
  if (loss_at >= 0) eg_graph_describe(g, false, loss_at, &d);
  if (loss_at < 0 || eg_tensor_numel(&d.tensor) != 1 ||
      (d.tensor.dtype != EG_DTYPE_FLOAT32 && d.tensor.dtype != EG_DTYPE_FLOAT64))
    return eg_error(EG_ERR_ARGUMENT, "evaluation graph: no scalar float output \"loss\": an "
                    "evaluation graph outputs loss and output (export_training_step writes "
                    "STEM.eval.json)");
  for (int i = 0; i < g->n_inputs; i++) {
    eg_graph_describe(g, true, i, &d);
    if (d.role == EG_ROLE_RANDOM)
      return eg_error(EG_ERR_ARGUMENT, "evaluation graph: input %s is a random draw (a Dropout "
                      "mask): an evaluation graph runs the model in eval mode, drawing nothing",
                      d.name);
    if (is_fed(g, i, tr->g)) continue;
    bool same = false;
    for (int j = 0; j < tr->g->n_inputs && !same; j++) {
      eg_tensor_desc s;
      eg_graph_describe(tr->g, true, j, &s);
      same = strcmp(s.name, d.name) == 0 && s.tensor.dtype == d.tensor.dtype &&
             s.tensor.rank == d.tensor.rank &&
             memcmp(s.tensor.shape, d.tensor.shape, sizeof(int64_t) * (size_t)d.tensor.rank) == 0;
    }
    if (!same) {
      char sh[256];
      return eg_error(EG_ERR_ARGUMENT, "evaluation graph: input %s (%s %s) differs from the "
                      "training step's: the evaluation graph of another model", d.name,
                      eg_dtype_name(d.tensor.dtype),
                      shape_text(sh, sizeof sh, d.tensor.shape, d.tensor.rank));
    }
  }
  data_set ds = {0};
  eg_status s = make_set(tr, g, arrays, n, "validation", &ds);
  if (s != EG_OK) {
    free_set(&ds);
    return s;
  }
  tr->val = ds;
  tr->eval_rt = eval_rt;
  tr->eval_g = g;
  tr->eval_loss_at = loss_at;
  tr->eval_out_at = output_at(g, "output");
  return EG_OK;
}

/* ---- order, random draws, feeding ---- */

/* splitmix64: the example order of epoch `e` from (seed, e) alone, and the random inputs. */
static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Fisher-Yates over 0..n-1, driven by splitmix64 seeded with seed ^ e * a constant. */
static void permute(int64_t *perm, int64_t n, bool shuffle, uint64_t seed, uint64_t e) {
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  if (!shuffle) return;
  uint64_t s = seed ^ (e * 0xd1b54a32d192ed03ULL);
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)(((unsigned __int128)splitmix(&s) * (uint64_t)(i + 1)) >> 64);
    int64_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}

/* The step's random inputs, drawn afresh: element after element (C order), input after input
 * (in the model's order), each takes the next number z of the stream and is 1 where
 * (z >> 40) < p * 2^24 (a 24-bit uniform below p), else 0. The stream starts at
 * seed ^ RNG_SALT and goes on across steps and epochs; a checkpoint saves it. */
#define RNG_SALT 0x6a09e667f3bcc909ULL
static eg_status draw_masks(eg_trainer *tr) {
  for (int k = 0; k < tr->n_rnd; k++) {
    random_in *r = &tr->rnd[k];
    const double bound = r->p * 16777216.0;
    const int64_t n = eg_tensor_numel(&r->mask);
    for (int64_t i = 0; i < n; i++) {
      const bool one = (double)(splitmix(&tr->rng) >> 40) < bound;
      switch (r->mask.dtype) {
      case EG_DTYPE_FLOAT32: ((float *)r->mask.data)[i] = one ? 1.0f : 0.0f; break;
      case EG_DTYPE_FLOAT64: ((double *)r->mask.data)[i] = one ? 1.0 : 0.0; break;
      default: ((unsigned char *)r->mask.data)[i] = one; break; /* uint8, bool */
      }
    }
    EG_TRY(eg_runtime_set_input(tr->rt, r->name, &r->mask));
  }
  return EG_OK;
}

static eg_status setup_random(eg_trainer *tr) {
  const eg_graph *g = tr->g;
  if (!(tr->rnd = calloc((size_t)g->n_inputs + 1, sizeof *tr->rnd)))
    return eg_error(EG_ERR_NOMEM, "eg_trainer_create: out of memory");
  for (int i = 0; i < g->n_inputs; i++) {
    eg_tensor_desc d;
    eg_graph_describe(g, true, i, &d);
    if (d.role != EG_ROLE_RANDOM) continue;
    if (isnan(d.random_p))
      return eg_error(EG_ERR_UNSUPPORTED, "input %s: a Bernoulli mask whose probability the "
                      "traced step took from a tensor: the trainer draws masks of a known p "
                      "(nn.Dropout's)", d.name);
    random_in *r = &tr->rnd[tr->n_rnd];
    r->name = d.name;
    r->p = d.random_p;
    r->mask = d.tensor;
    const size_t bytes = (size_t)eg_tensor_numel(&d.tensor) * eg_dtype_size(d.tensor.dtype);
    if (!(r->mask.data = malloc(bytes + 1)))
      return eg_error(EG_ERR_NOMEM, "eg_trainer_create: out of memory");
    tr->n_rnd++;
  }
  return EG_OK;
}

/* Fills every data input's batch `step` of `ds`'s order and sets it in `rt`. */
static eg_status feed(const eg_trainer *tr, const data_set *ds, eg_runtime *rt, int64_t step) {
  for (int k = 0; k < ds->n_in; k++) {
    const feed_in *x = &ds->in[k];
    const eg_dtype fd = x->src.dtype, md = x->d.tensor.dtype;
    const size_t per = x->row_batch / eg_dtype_size(md);
    for (int64_t b = 0; b < ds->batch; b++) {
      const int64_t ex = ds->perm[step * ds->batch + b];
      const unsigned char *src = (const unsigned char *)x->src.data + (size_t)ex * x->row_src;
      unsigned char *dst = (unsigned char *)x->batch.data + (size_t)b * x->row_batch;
      if (fd == md) {
        memcpy(dst, src, x->row_batch);
      } else if (md == EG_DTYPE_FLOAT32) { /* uint8, normalized */
        const float mean = (float)tr->o.mean, inv = (float)(1.0 / tr->o.std);
        for (size_t q = 0; q < per; q++) ((float *)dst)[q] = ((float)src[q] / 255.0f - mean) * inv;
      } else { /* integer labels into int64 */
        const eg_tensor row = {.dtype = fd, .rank = 1, .shape = {(int64_t)per},
                               .data = (void *)src};
        for (size_t q = 0; q < per; q++) ((int64_t *)dst)[q] = int_at(&row, (int64_t)q);
      }
    }
    EG_TRY(eg_runtime_set_input(rt, x->d.name, &x->batch));
  }
  return EG_OK;
}

/* ---- creation ---- */

eg_status eg_train_create(eg_runtime *rt, const eg_trainer_options *o, eg_trainer **out) {
  *out = NULL;
  eg_trainer *tr = calloc(1, sizeof *tr);
  if (!tr) return eg_error(EG_ERR_NOMEM, "eg_trainer_create: out of memory");
  tr->rt = rt;
  tr->g = eg_runtime_graph(rt);
  tr->o = *o;
  tr->opt_o = *o->optimizer;
  tr->o.optimizer = &tr->opt_o;
  tr->loss_at = -1;
  tr->rng = o->seed ^ RNG_SALT;
  tr->ckpt_written = -1;
  int n_params = 0;
  for (int i = 0; i < tr->g->n_outputs; i++) {
    eg_tensor_desc d;
    eg_graph_describe(tr->g, false, i, &d);
    if (d.role == EG_ROLE_LOSS) tr->loss_at = i;
    n_params += d.role == EG_ROLE_GRADIENT;
  }
  eg_status s = EG_OK;
  if (tr->loss_at < 0 || n_params == 0)
    s = eg_error(EG_ERR_ARGUMENT, "eg_trainer_create: %s: a training step has a loss output "
                 "and parameter inputs with gradient outputs (their roles: edgegrad info); a "
                 "graph exported before edgegrad recorded roles has none: export the training "
                 "step again with this edgegrad's exporter",
                 tr->loss_at < 0 ? "no output of role loss" : "no input of role parameter");
  if (s == EG_OK) s = setup_random(tr);
  if (s == EG_OK) s = eg_optimizer_create(rt, &tr->opt_o, &tr->opt);
  if (s == EG_OK) tr->opt_o.loss_scale = eg_optimizer_loss_scaling(tr->opt); /* AUTO */
  if (s != EG_OK) {
    eg_train_destroy(tr);
    return s;
  }
  *out = tr;
  return EG_OK;
}

void eg_train_destroy(eg_trainer *tr) {
  if (!tr) return;
  free_set(&tr->train);
  free_set(&tr->val);
  for (int k = 0; k < tr->n_rnd; k++) free(tr->rnd[k].mask.data);
  free(tr->rnd);
  eg_optimizer_destroy(tr->opt);
  if (tr->log) fclose(tr->log);
  free(tr->log_path);
  free(tr->ckpt_path);
  free(tr);
}

void eg_train_set_callback(eg_trainer *tr, eg_trainer_callback callback, void *user) {
  tr->cb = callback;
  tr->user = user;
}

eg_optimizer *eg_train_optimizer(eg_trainer *tr) { return tr->opt; }

eg_status eg_train_set_log(eg_trainer *tr, const char *path, bool append) {
  if (tr->log) fclose(tr->log);
  free(tr->log_path);
  tr->log = NULL;
  tr->log_path = NULL;
  if (!path) return EG_OK;
  if (!(tr->log_path = strdup(path))) return eg_error(EG_ERR_NOMEM, "eg_trainer_set_log: out of memory");
  if (!(tr->log = fopen(path, append ? "a" : "w")))
    return eg_error(EG_ERR_IO, "%s: cannot open (%s)", path, strerror(errno));
  return EG_OK;
}

/* A writer killed mid-way leaves "<path>.tmp.XXXXXX" (eg_file_write_atomic) beside `path`. */
static void remove_stale_temporaries(const char *path) {
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  char dir[4096];
  snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
  DIR *d = opendir(dir);
  if (!d) return;
  const size_t n = strlen(base);
  for (struct dirent *e; (e = readdir(d));) {
    if (strncmp(e->d_name, base, n) != 0 || strncmp(e->d_name + n, ".tmp.", 5) != 0 ||
        strlen(e->d_name) != n + 5 + 6)
      continue;
    char file[8192];
    snprintf(file, sizeof file, "%s/%s", dir, e->d_name);
    unlink(file);
  }
  closedir(d);
}

eg_status eg_train_set_checkpoints(eg_trainer *tr, const char *path, int64_t every_steps) {
  free(tr->ckpt_path);
  tr->ckpt_path = NULL;
  tr->ckpt_every = every_steps;
  if (!path) return EG_OK;
  if (!(tr->ckpt_path = strdup(path)))
    return eg_error(EG_ERR_NOMEM, "eg_trainer_set_checkpoints: out of memory");
  remove_stale_temporaries(path);
  return EG_OK;
}

void eg_train_position(const eg_trainer *tr, int64_t out[3]) {
  out[0] = tr->epoch;
  out[1] = tr->step;
  out[2] = tr->train.steps;
}

void eg_train_sizes(const eg_trainer *tr, int64_t out[4]) {
  out[0] = tr->train.n_examples;
  out[1] = tr->train.batch;
  out[2] = tr->val.n_examples;
  out[3] = tr->val.batch;
}

/* ---- evaluation ---- */

static double scalar(const eg_tensor *t) {
  return t->dtype == EG_DTYPE_FLOAT32 ? *(const float *)t->data
         : t->dtype == EG_DTYPE_FLOAT64 ? *(const double *)t->data : NAN;
}

eg_status eg_train_evaluate(eg_trainer *tr, double *loss, double *accuracy) {
  if (!tr->eval_rt)
    return eg_error(EG_ERR_STATE, "eg_trainer_evaluate: no evaluation graph (eg_trainer_set_eval)");
  const eg_graph *g = tr->eval_g;
  for (int i = 0; i < g->n_inputs; i++) {
    if (is_fed(g, i, tr->g)) continue;
    int j = 0;
    while (j < tr->g->n_inputs && strcmp(tr->g->inputs[j].name, g->inputs[i].name) != 0) j++;
    eg_tensor t;
    EG_TRY(eg_runtime_input(tr->rt, j, &t));
    EG_TRY(eg_runtime_set_input(tr->eval_rt, g->inputs[i].name, &t));
  }
  /* the labels: the set's rank-1 int64 input */
  const int64_t *labels = NULL;
  for (int k = 0; k < tr->val.n_in && !labels; k++)
    if (tr->val.in[k].batch.dtype == EG_DTYPE_INT64 && tr->val.in[k].batch.rank == 1)
      labels = tr->val.in[k].batch.data;
  double sum = 0;
  int64_t right = 0, seen = 0;
  for (int64_t step = 0; step < tr->val.steps; step++) {
    EG_TRY(feed(tr, &tr->val, tr->eval_rt, step));
    EG_TRY(eg_runtime_run(tr->eval_rt));
    eg_tensor lt, out;
    EG_TRY(eg_runtime_output(tr->eval_rt, tr->eval_loss_at, &lt));
    sum += scalar(&lt);
    if (tr->eval_out_at < 0 || !labels ||
        eg_runtime_output(tr->eval_rt, tr->eval_out_at, &out) != EG_OK ||
        out.dtype != EG_DTYPE_FLOAT32 || out.rank != 2 || out.shape[0] != tr->val.batch)
      continue;
    for (int64_t b = 0; b < out.shape[0]; b++) {
      const float *row = (const float *)out.data + b * out.shape[1];
      int64_t best = 0;
      for (int64_t c = 1; c < out.shape[1]; c++)
        if (row[c] > row[best]) best = c;
      right += best == labels[b];
      seen++;
    }
  }
  if (loss) *loss = sum / (double)tr->val.steps;
  if (accuracy) *accuracy = seen ? (double)right / (double)seen : NAN;
  return EG_OK;
}

/* ---- steps ---- */

static double lr_at(const eg_trainer_options *o, int64_t e) {
  const double lr = o->optimizer->lr;
  if (o->schedule == EG_LR_STEP) return lr * pow(o->lr_gamma, (double)(e / o->lr_step));
  if (o->schedule == EG_LR_COSINE)
    return lr * (1.0 + cos(3.14159265358979323846 * (double)e / (double)o->epochs)) / 2.0;
  return lr;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Steps run: the optimizer's, and those loss scaling skipped (their gradients overflowed). */
static int64_t global_step(const eg_trainer *tr) {
  return eg_optimizer_steps(tr->opt) + eg_optimizer_skipped_steps(tr->opt);
}

/* The name of the first parameter or buffer input holding a NaN or an infinity, or NULL. */
static const char *first_non_finite(const eg_trainer *tr) {
  for (int i = 0; i < tr->g->n_inputs; i++) {
    eg_tensor_desc d;
    eg_tensor t;
    eg_graph_describe(tr->g, true, i, &d);
    if ((d.role != EG_ROLE_PARAMETER && d.role != EG_ROLE_BUFFER) ||
        eg_runtime_input(tr->rt, i, &t) != EG_OK || t.dtype != EG_DTYPE_FLOAT32)
      continue;
    const float *p = t.data;
    const int64_t n = eg_tensor_numel(&t);
    float acc = 0.0f; /* x * 0 is 0 for finite x, NaN for NaN and inf */
    for (int64_t k = 0; k < n; k++) acc += p[k] * 0.0f;
    if (acc != 0.0f) return d.name;
  }
  return NULL;
}

/* The gradient outputs' elements and those exactly 0, added to the epoch's counts. Read before
 * the optimizer's step (loss scaling unscales them in place; a zero stays a zero). */
static void count_zero_grads(eg_trainer *tr) {
  for (int i = 0; i < tr->g->n_outputs; i++) {
    eg_tensor_desc d;
    eg_tensor t;
    eg_graph_describe(tr->g, false, i, &d);
    if (d.role != EG_ROLE_GRADIENT || eg_runtime_output(tr->rt, i, &t) != EG_OK ||
        t.dtype != EG_DTYPE_FLOAT32)
      continue;
    const float *g = t.data;
    const int64_t n = eg_tensor_numel(&t);
    for (int64_t k = 0; k < n; k++) tr->zero_grads += g[k] == 0.0f;
    tr->grad_elems += n;
  }
}

static eg_trainer_event event(const eg_trainer *tr, eg_trainer_event_kind kind) {
  eg_trainer_event e;
  memset(&e, 0, sizeof e);
  e.struct_size = sizeof e;
  e.kind = kind;
  e.steps = tr->train.steps;
  e.global_step = global_step(tr);
  e.val_loss = e.val_accuracy = NAN;
  e.loss_scale = eg_optimizer_loss_scale(tr->opt);
  e.skipped_steps = eg_optimizer_skipped_steps(tr->opt);
  return e;
}

/* The event's line of the log. */
static eg_status log_event(eg_trainer *tr, const eg_trainer_event *e) {
  if (!tr->log) return EG_OK;
  static const char *const kinds[] = {"step", "epoch", "eval"};
  fprintf(tr->log, "{\"event\": \"%s\", \"epoch\": %lld", kinds[e->kind], (long long)e->epoch);
  if (e->kind == EG_TRAINER_STEP)
    fprintf(tr->log, ", \"step\": %lld, \"global_step\": %lld, \"loss\": %.9g, \"lr\": %.9g",
            (long long)e->step, (long long)e->global_step, e->loss, e->lr);
  if (e->kind == EG_TRAINER_EPOCH) fprintf(tr->log, ", \"train_loss\": %.9g", e->loss);
  if (e->kind != EG_TRAINER_STEP && !isnan(e->val_loss))
    fprintf(tr->log, ", \"val_loss\": %.9g", e->val_loss);
  if (e->kind != EG_TRAINER_STEP && !isnan(e->val_loss) && !isnan(e->val_accuracy))
    fprintf(tr->log, ", \"val_accuracy\": %.9g", e->val_accuracy);
  if (e->kind == EG_TRAINER_EPOCH)
    fprintf(tr->log, ", \"seconds\": %.6f, \"lr\": %.9g, \"zero_grads\": %.9g", e->seconds,
            e->lr, e->zero_grads);
  if (e->kind != EG_TRAINER_EVAL && tr->opt_o.loss_scale != EG_LOSS_SCALE_NONE)
    fprintf(tr->log, ", \"loss_scale\": %.9g, \"skipped_steps\": %lld", e->loss_scale,
            (long long)e->skipped_steps);
  fputs("}\n", tr->log);
  if (fflush(tr->log) != 0 || ferror(tr->log))
    return eg_error(EG_ERR_IO, "%s: cannot write (%s)", tr->log_path, strerror(errno));
  return EG_OK;
}

static eg_status report(eg_trainer *tr, const eg_trainer_event *e) {
  EG_TRY(log_event(tr, e));
  const bool every = tr->ckpt_every > 0 && e->kind == EG_TRAINER_STEP && e->step < e->steps &&
                     e->global_step % tr->ckpt_every == 0;
  if (tr->ckpt_path && (every || e->kind == EG_TRAINER_EPOCH)) {
    EG_TRY(eg_train_save_checkpoint(tr, tr->ckpt_path));
    tr->ckpt_written = e->global_step;
  }
  if (tr->cb && tr->cb(e, tr->user) != 0)
    return eg_error(EG_ERR_STATE, "eg_trainer: stopped by the callback at epoch %lld step %lld",
                    (long long)e->epoch, (long long)e->step);
  return EG_OK;
}

/* What a failed step says of the checkpoints the trainer writes ("" without). */
static const char *checkpoint_note(eg_trainer *tr) {
  if (!tr->ckpt_path) return "";
  if (tr->ckpt_written < 0) return "; no checkpoint was written";
  snprintf(tr->note, sizeof tr->note, "; the last checkpoint, %s (after %lld steps), is intact",
           tr->ckpt_path, (long long)tr->ckpt_written);
  return tr->note;
}

/* Run, loss, checks, update: the part every step shares. The batch is set. */
static eg_status run_and_update(eg_trainer *tr, double *loss_out) {
  EG_TRY(draw_masks(tr));
  EG_TRY(eg_runtime_run(tr->rt));
  eg_tensor lt;
  EG_TRY(eg_runtime_output(tr->rt, tr->loss_at, &lt));
  const double loss = scalar(&lt);
  if (!isfinite(loss))
    return eg_error(EG_ERR_RUNTIME, "epoch %lld step %lld: loss is %g: training stopped before "
                    "the update (lower the learning rate, check the data)%s",
                    (long long)tr->epoch + 1, (long long)tr->step + 1, loss, checkpoint_note(tr));
  count_zero_grads(tr);
  EG_TRY(eg_optimizer_step(tr->opt));
  const char *bad = first_non_finite(tr);
  if (bad)
    return eg_error(EG_ERR_RUNTIME, "epoch %lld step %lld: %s is not finite after the update "
                    "(loss %g): training stopped%s", (long long)tr->epoch + 1,
                    (long long)tr->step + 1, bad, loss, checkpoint_note(tr));
  *loss_out = loss;
  return EG_OK;
}

eg_status eg_train_step(eg_trainer *tr, double *loss) {
  if (!tr->train.steps)
    return eg_error(EG_ERR_STATE, "eg_trainer_step: no training data (eg_trainer_set_data)");
  const double lr = lr_at(&tr->o, tr->epoch);
  if (!tr->started) { /* the epoch's order and learning rate; its clock and counts */
    EG_TRY(eg_optimizer_set_lr(tr->opt, lr));
    permute(tr->train.perm, tr->train.n_examples, tr->o.shuffle, tr->o.seed,
            (uint64_t)tr->epoch);
    tr->started = true;
    tr->t0 = now_s();
    tr->first = tr->step;
    tr->grad_elems = tr->zero_grads = 0;
  }
  double l = NAN;
  EG_TRY(feed(tr, &tr->train, tr->rt, tr->step));
  EG_TRY(run_and_update(tr, &l));
  if (loss) *loss = l;
  tr->loss_sum += l;
  tr->step++;
  eg_trainer_event e = event(tr, EG_TRAINER_STEP);
  e.epoch = tr->epoch + 1;
  e.step = tr->step;
  e.loss = l;
  e.lr = lr;
  if (tr->step < tr->train.steps) return report(tr, &e);
  EG_TRY(report(tr, &e));
  /* the epoch's end: its mean, the evaluation, then the position moves on and it is said */
  eg_trainer_event ep = event(tr, EG_TRAINER_EPOCH);
  ep.epoch = tr->epoch + 1;
  ep.step = tr->train.steps;
  ep.loss = tr->loss_sum / (double)tr->train.steps;
  ep.lr = lr;
  ep.seconds = now_s() - tr->t0;
  ep.steps_run = tr->train.steps - tr->first;
  ep.zero_grads = tr->grad_elems ? (double)tr->zero_grads / (double)tr->grad_elems : 0.0;
  if (tr->eval_rt) EG_TRY(eg_train_evaluate(tr, &ep.val_loss, &ep.val_accuracy));
  tr->epoch++;
  tr->step = 0;
  tr->loss_sum = 0;
  tr->started = false;
  return report(tr, &ep);
}

eg_status eg_train_fit(eg_trainer *tr, int64_t epochs) {
  if (!tr->train.steps)
    return eg_error(EG_ERR_STATE, "eg_trainer_fit: no training data (eg_trainer_set_data)");
  if (tr->eval_rt && tr->epoch == 0 && tr->step == 0 && epochs > 0) {
    eg_trainer_event e = event(tr, EG_TRAINER_EVAL);
    EG_TRY(eg_train_evaluate(tr, &e.val_loss, &e.val_accuracy));
    EG_TRY(report(tr, &e));
  }
  while (tr->epoch < epochs) EG_TRY(eg_train_step(tr, NULL));
  return EG_OK;
}

eg_status eg_train_step_batch(eg_trainer *tr, const eg_trainer_array *batch, int n,
                             double *loss) {
  for (int k = 0; k < n; k++) {
    int i = 0;
    while (i < tr->g->n_inputs && (!batch[k].input ||
                                   strcmp(tr->g->inputs[i].name, batch[k].input) != 0))
      i++;
    if (i == tr->g->n_inputs ||
        (!is_fed(tr->g, i, tr->g) && tr->g->inputs[i].random == EG_RANDOM_NONE))
      return eg_error(EG_ERR_ARGUMENT, "eg_trainer_step_batch: array %s: %s",
                      batch[k].input ? batch[k].input : "(NULL)",
                      i == tr->g->n_inputs ? "no input of the model has that name"
                                           : "a parameter or buffer: the trainer's to update");
  }
  for (int k = 0; k < n; k++) EG_TRY(eg_runtime_set_input(tr->rt, batch[k].input, &batch[k].t));
  EG_TRY(eg_optimizer_set_lr(tr->opt, lr_at(&tr->o, tr->epoch)));
  /* random inputs the batch gives are taken as given: drawn are only the others */
  int kept = 0;
  random_in *all = tr->rnd;
  const int n_all = tr->n_rnd;
  random_in *draw = calloc((size_t)n_all + 1, sizeof *draw);
  if (!draw) return eg_error(EG_ERR_NOMEM, "eg_trainer_step_batch: out of memory");
  for (int r = 0; r < n_all; r++) {
    bool given = false;
    for (int k = 0; k < n && !given; k++) given = strcmp(batch[k].input, all[r].name) == 0;
    if (!given) draw[kept++] = all[r];
  }
  tr->rnd = draw;
  tr->n_rnd = kept;
  double l = NAN;
  const eg_status s = run_and_update(tr, &l);
  tr->rnd = all;
  tr->n_rnd = n_all;
  free(draw);
  EG_TRY(s);
  if (loss) *loss = l;
  eg_trainer_event e = event(tr, EG_TRAINER_STEP);
  e.epoch = tr->epoch + 1;
  e.step = e.global_step;
  e.loss = l;
  e.lr = lr_at(&tr->o, tr->epoch);
  return report(tr, &e);
}

/* ---- holding back a validation set ---- */

/* A copy of rows idx[0..rows) of x's examples, as the source of `into`. */
static eg_status take_rows(const feed_in *x, const int64_t *idx, int64_t rows, feed_in *into) {
  unsigned char *b = malloc(x->row_src * (size_t)rows + 1);
  if (!b) return eg_error(EG_ERR_NOMEM, "eg_trainer_hold_out: out of memory");
  for (int64_t r = 0; r < rows; r++)
    memcpy(b + (size_t)r * x->row_src, (const unsigned char *)x->src.data + (size_t)idx[r] * x->row_src,
           x->row_src);
  free(into->owned);
  into->owned = b;
  into->src = x->src;
  into->src.shape[0] = rows;
  into->src.data = b;
  return EG_OK;
}

static eg_status hold_out(eg_trainer *tr, eg_runtime *eval_rt, double fraction, int64_t *order,
                          int64_t *keep, bool *held, eg_trainer_array *arrays, feed_in *copies) {
  data_set *t = &tr->train;
  const int64_t n = t->n_examples, k = (int64_t)llround(fraction * (double)n);
  permute(order, n, tr->o.shuffle, tr->o.seed, UINT64_MAX);
  for (int64_t i = n - k; i < n; i++) held[order[i]] = true;
  int64_t nk = 0;
  for (int64_t i = 0; i < n; i++)
    if (!held[i]) keep[nk++] = i;
  const eg_graph *g = eg_runtime_graph(eval_rt);
  int na = 0;
  for (int i = 0; i < g->n_inputs; i++) {
    if (!is_fed(g, i, tr->g)) continue;
    const feed_in *src = NULL;
    for (int j = 0; j < t->n_in && !src; j++)
      if (strcmp(t->in[j].d.name, g->inputs[i].name) == 0) src = &t->in[j];
    if (!src)
      return eg_error(EG_ERR_ARGUMENT, "held-out validation set: evaluation input %s: not a data "
                      "input of the training step (give the validation set its own data)",
                      g->inputs[i].name);
    EG_TRY(take_rows(src, order + (n - k), k, &copies[na]));
    arrays[na] = (eg_trainer_array)EG_TRAINER_ARRAY(src->d.name, copies[na].src,
                                                      "(held back for validation)");
    na++;
  }
  EG_TRY(eg_train_set_eval(tr, eval_rt, arrays, na));
  for (int j = 0; j < t->n_in; j++) EG_TRY(take_rows(&t->in[j], keep, nk, &t->in[j]));
  t->n_examples = nk;
  t->steps = nk / t->batch;
  if (t->steps == 0)
    return eg_error(EG_ERR_ARGUMENT, "held-out validation set: %lld training examples left, fewer "
                    "than the graph's batch size %lld: not one batch", (long long)nk,
                    (long long)t->batch);
  for (int64_t i = 0; i < nk; i++) t->perm[i] = i;
  tr->held_out = fraction;
  return EG_OK;
}

eg_status eg_train_hold_out(eg_trainer *tr, eg_runtime *eval_rt, double fraction) {
  if (!tr->train.steps)
    return eg_error(EG_ERR_STATE, "eg_trainer_hold_out: no training data (eg_trainer_set_data)");
  const int64_t n = tr->train.n_examples, k = (int64_t)llround(fraction * (double)n);
  if (!(fraction > 0 && fraction < 1) || k < 1 || k >= n)
    return eg_error(EG_ERR_ARGUMENT, "validation fraction %g of %lld examples holds back %lld: "
                    "it must leave at least one for each side", fraction, (long long)n,
                    (long long)k);
  const eg_graph *g = eg_runtime_graph(eval_rt);
  int64_t *order = malloc(sizeof(int64_t) * (size_t)n), *keep = malloc(sizeof(int64_t) * (size_t)n);
  bool *held = calloc((size_t)n, 1);
  eg_trainer_array *arrays = calloc((size_t)g->n_inputs + 1, sizeof *arrays);
  feed_in *copies = calloc((size_t)g->n_inputs + 1, sizeof *copies);
  eg_status s = order && keep && held && arrays && copies
                    ? hold_out(tr, eval_rt, fraction, order, keep, held, arrays, copies)
                    : eg_error(EG_ERR_NOMEM, "eg_trainer_hold_out: out of memory");
  /* the validation set's feed_in took views of the copies: hand their ownership over */
  for (int i = 0; s == EG_OK && i < tr->val.n_in; i++)
    for (int j = 0; j < g->n_inputs; j++)
      if (copies[j].owned && copies[j].owned == tr->val.in[i].src.data) {
        tr->val.in[i].owned = copies[j].owned;
        copies[j].owned = NULL;
      }
  for (int j = 0; copies && j < g->n_inputs; j++) free(copies[j].owned);
  free(order);
  free(keep);
  free(held);
  free(arrays);
  free(copies);
  return s;
}

/* ---- checkpoints ---- */

static const char *kind_name(eg_optimizer_kind k) {
  return k == EG_OPTIMIZER_SGD ? "sgd" : k == EG_OPTIMIZER_ADAM ? "adam" : "adamw";
}

/* Everything a resumed run must share with the one that wrote the checkpoint, as "key=value"
 * fields separated by spaces (numbers in %.17g: exact for doubles). */
static void run_signature(const eg_trainer *tr, char *buf, size_t size) {
  const eg_trainer_options *a = &tr->o;
  const eg_optimizer_options *o = a->optimizer;
  static const char *const sched[] = {"constant", "step", "cosine"};
  int n = snprintf(buf, size, "optimizer=%s lr=%.17g weight_decay=%.17g", kind_name(o->kind),
                   o->lr, o->weight_decay);
#define MORE(...) n += snprintf(buf + n, size - (size_t)n, __VA_ARGS__)
  if (o->kind == EG_OPTIMIZER_SGD)
    MORE(" momentum=%.17g dampening=%.17g nesterov=%d", o->momentum, o->dampening, o->nesterov);
  else
    MORE(" betas=%.17g,%.17g eps=%.17g", o->beta1, o->beta2, o->eps);
  if (o->loss_scale == EG_LOSS_SCALE_STATIC) MORE(" loss_scale=%.17g", o->init_scale);
  if (o->loss_scale == EG_LOSS_SCALE_DYNAMIC)
    MORE(" loss_scale=dynamic growth_interval=%lld",
         (long long)(o->growth_interval ? o->growth_interval : 2000));
  MORE(" lr_schedule=%s", sched[a->schedule]);
  if (a->schedule == EG_LR_STEP) MORE(" lr_step=%lld lr_gamma=%.17g", (long long)a->lr_step,
                                      a->lr_gamma);
  if (a->schedule == EG_LR_COSINE) MORE(" epochs=%lld", (long long)a->epochs);
  MORE(" shuffle=%d", a->shuffle);
  if (a->shuffle || tr->n_rnd) MORE(" seed=%" PRIu64, a->seed);
  if (a->normalize) MORE(" normalize=%.17g,%.17g", a->mean, a->std);
  if (tr->held_out > 0) MORE(" val_split=%.17g", tr->held_out);
#undef MORE
  snprintf(buf + n, size - (size_t)n, " batch=%lld examples=%lld data_hash=%016" PRIx64,
           (long long)tr->train.batch, (long long)tr->train.n_examples, tr->data_hash);
}

/* The first field of two signatures that differs, as "A in the checkpoint, B in this run". */
static void signature_diff(const char *theirs, const char *ours, char *out, size_t size) {
  char a[1024], b[1024];
  snprintf(a, sizeof a, "%s", theirs);
  snprintf(b, sizeof b, "%s", ours);
  char *sa = NULL, *sb = NULL;
  for (char *fa = strtok_r(a, " ", &sa), *fb = strtok_r(b, " ", &sb); fa || fb;
       fa = strtok_r(NULL, " ", &sa), fb = strtok_r(NULL, " ", &sb)) {
    if (fa && fb && strcmp(fa, fb) == 0) continue;
    snprintf(out, size, "%s in the checkpoint, %s in this run", fa ? fa : "(nothing)",
             fb ? fb : "(nothing)");
    return;
  }
  snprintf(out, size, "(no difference)");
}

/* What a checkpoint holds: every parameter and buffer input as "input/<name>" (the runtime's
 * value; `with_values` false: dtype and shape only, data NULL), then the optimizer's state as
 * "optimizer/<state>". Names malloc'ed in *names. */
static eg_status state_entries(eg_trainer *tr, bool with_values, eg_safetensors_entry **out,
                               int *n_out, char ***names) {
  const int ni = tr->g->n_inputs, ns = eg_optimizer_num_states(tr->opt);
  eg_safetensors_entry *e = calloc((size_t)(ni + ns) + 1, sizeof *e);
  char **nm = calloc((size_t)(ni + ns) + 1, sizeof *nm);
  int n = 0;
  if (!e || !nm) goto oom;
  for (int i = 0; i < ni; i++) {
    eg_tensor_desc d;
    eg_graph_describe(tr->g, true, i, &d);
    if (d.role != EG_ROLE_PARAMETER && d.role != EG_ROLE_BUFFER) continue;
    e[n].t = d.tensor;
    if (with_values && eg_runtime_input(tr->rt, i, &e[n].t) != EG_OK) continue;
    if (!(nm[n] = malloc(strlen(d.name) + 7))) goto oom;
    sprintf(nm[n], "input/%s", d.name);
    e[n].name = nm[n];
    n++;
  }
  for (int k = 0; k < ns; k++) {
    const char *name;
    eg_optimizer_state(tr->opt, k, &name, &e[n].t);
    if (!(nm[n] = malloc(strlen(name) + 11))) goto oom;
    sprintf(nm[n], "optimizer/%s", name);
    e[n].name = nm[n];
    n++;
  }
  *out = e;
  *n_out = n;
  *names = nm;
  return EG_OK;
oom:
  for (int k = 0; nm && k < n; k++) free(nm[k]);
  free(nm);
  free(e);
  return eg_error(EG_ERR_NOMEM, "eg_trainer: out of memory");
}

static void free_names(char **nm, int n) {
  for (int k = 0; nm && k < n; k++) free(nm[k]);
  free(nm);
}

/* A checkpoint's metadata (safetensors "__metadata__", all strings): these keys, in this order,
 * then "checksum". Version 3 added the checksum; version 2 is read without one. */
static const char *const ckpt_keys[] = {"format", "version", "run", "epoch", "step",
                                        "global_step", "epoch_loss_sum", "rng"};
#define N_CKPT_KEYS ((int)(sizeof ckpt_keys / sizeof *ckpt_keys))

/* zlib's crc32 continued over `n` bytes at `p`, in parts: its lengths are 32-bit. */
static uLong crc_bytes(uLong crc, const void *p, size_t n) {
  const Bytef *b = p;
  while (n > 0) {
    const uInt part = n > (1u << 30) ? 1u << 30 : (uInt)n;
    crc = crc32(crc, b, part);
    b += part;
    n -= part;
  }
  return crc;
}

static int by_name(const void *a, const void *b) {
  return strcmp((*(const eg_safetensors_entry *const *)a)->name,
                (*(const eg_safetensors_entry *const *)b)->name);
}

/* The checksum of a checkpoint, as 8 hex digits: zlib's CRC-32 over every tensor (name, dtype,
 * shape and bytes; by name, so that it does not depend on the order a JSON reader gives the
 * header's entries in) and every metadata value of ckpt_keys (key and value), so that a changed
 * byte anywhere a resume reads is found before any of it is used. */
static eg_status ckpt_checksum(const eg_safetensors_entry *e, int n, const char *const *values,
                               char out[16]) {
  const eg_safetensors_entry **order = malloc(sizeof *order * ((size_t)n + 1));
  if (!order) return eg_error(EG_ERR_NOMEM, "eg_trainer: out of memory");
  for (int k = 0; k < n; k++) order[k] = &e[k];
  qsort(order, (size_t)n, sizeof *order, by_name);
  uLong crc = crc32(0L, Z_NULL, 0);
  char head[512];
  for (int k = 0; k < n; k++) {
    const eg_tensor *t = &order[k]->t;
    int len = snprintf(head, sizeof head, "%s %s", order[k]->name, eg_dtype_name(t->dtype));
    for (int d = 0; d < t->rank && len < (int)sizeof head - 24; d++)
      len += snprintf(head + len, sizeof head - (size_t)len, " %lld", (long long)t->shape[d]);
    crc = crc_bytes(crc, head, strlen(head) + 1); /* a long name: what snprintf kept */
    crc = crc_bytes(crc, t->data, (size_t)eg_tensor_numel(t) * eg_dtype_size(t->dtype));
  }
  free(order);
  for (int k = 0; k < N_CKPT_KEYS; k++) {
    crc = crc_bytes(crc, ckpt_keys[k], strlen(ckpt_keys[k]) + 1);
    crc = crc_bytes(crc, values[k] ? values[k] : "", values[k] ? strlen(values[k]) + 1 : 1);
  }
  snprintf(out, 16, "%08lx", (unsigned long)crc);
  return EG_OK;
}

eg_status eg_train_save_checkpoint(eg_trainer *tr, const char *path) {
  if (!tr->train.steps)
    return eg_error(EG_ERR_STATE, "eg_trainer_save_checkpoint: no training data: a checkpoint "
                    "is a position in a data set");
  eg_safetensors_entry *e;
  char **nm;
  int n;
  EG_TRY(state_entries(tr, true, &e, &n, &nm));
  char sig[1024], epoch[32], step[32], gstep[32], loss[64], rng[32];
  run_signature(tr, sig, sizeof sig);
  snprintf(epoch, sizeof epoch, "%lld", (long long)tr->epoch);
  snprintf(step, sizeof step, "%lld", (long long)tr->step);
  snprintf(gstep, sizeof gstep, "%lld", (long long)global_step(tr));
  snprintf(loss, sizeof loss, "%a", tr->loss_sum);
  snprintf(rng, sizeof rng, "%016" PRIx64, tr->rng);
  const char *values[N_CKPT_KEYS] = {"edgegrad.checkpoint", "3", sig, epoch, step, gstep, loss,
                                     rng};
  eg_safetensors_meta meta[N_CKPT_KEYS + 1];
  for (int k = 0; k < N_CKPT_KEYS; k++) meta[k] = (eg_safetensors_meta){ckpt_keys[k], values[k]};
  char sum[16];
  eg_status s = ckpt_checksum(e, n, values, sum);
  meta[N_CKPT_KEYS] = (eg_safetensors_meta){"checksum", sum};
  if (s == EG_OK) s = eg_safetensors_save(path, e, n, meta, N_CKPT_KEYS + 1);
  free_names(nm, n);
  free(e);
  return s;
}

/* A count of the checkpoint's metadata: decimal digits only, at most INT64_MAX. */
static int parse_count(const eg_safetensors *f, const char *key, int64_t *out) {
  const char *v = eg_safetensors_meta_get(f, key);
  const size_t len = v ? strlen(v) : 0;
  if (len == 0 || len > 19 || strspn(v, "0123456789") != len) return -1;
  errno = 0;
  const long long x = strtoll(v, NULL, 10);
  if (errno) return -1;
  *out = x;
  return 0;
}

/* The checkpoint's checksum against its contents. Version 2 (before the checksum) has none and
 * is read as it is; a file that carries one is always checked. */
static eg_status check_checksum(const eg_safetensors *f, const char *path) {
  const char *sum = eg_safetensors_meta_get(f, "checksum");
  const char *version = eg_safetensors_meta_get(f, "version");
  if (!sum && version && strcmp(version, "2") == 0) return EG_OK;
  const char *values[N_CKPT_KEYS];
  for (int k = 0; k < N_CKPT_KEYS; k++) values[k] = eg_safetensors_meta_get(f, ckpt_keys[k]);
  char want[16];
  int n = 0;
  const eg_safetensors_entry *e = eg_safetensors_entries(f, &n);
  EG_TRY(ckpt_checksum(e, n, values, want));
  /* the stored value is shown only when it has the form written: the message stays one line */
  const bool hex8 = sum && strlen(sum) == 8 && strspn(sum, "0123456789abcdef") == 8;
  if (!sum || strcmp(sum, want) != 0)
    return eg_error(EG_ERR_FORMAT, "%s: checksum mismatch (stored %s, contents %s): the file is "
                    "damaged", path, !sum ? "(none)" : hex8 ? sum : "(not 8 hex digits)", want);
  return EG_OK;
}

/* The position, field by field: step (steps done in the next epoch) in [0, steps per epoch);
 * global_step = epoch * steps + step, computed without wrapping. */
static eg_status check_position(const eg_trainer *tr, const eg_safetensors *f, const char *path,
                                int64_t pos[3]) {
  static const char *const keys[] = {"epoch", "step", "global_step"};
  for (int k = 0; k < 3; k++)
    if (parse_count(f, keys[k], &pos[k])) {
      const char *v = eg_safetensors_meta_get(f, keys[k]);
      return eg_error(EG_ERR_FORMAT, "%s: %s \"%s\": expected a count (decimal digits, < 2^63)",
                      path, keys[k], v ? v : "(none)");
    }
  const int64_t epoch = pos[0], step = pos[1], gstep = pos[2], steps = tr->train.steps;
  const int64_t planned = tr->o.epochs;
  int64_t at = 0;
  if (planned > 0 && epoch > planned)
    return eg_error(EG_ERR_ARGUMENT, "%s: epoch %lld (epochs done): beyond this run's %lld "
                    "epochs: train for %lld epochs or more", path, (long long)epoch,
                    (long long)planned, (long long)epoch);
  if (planned > 0 && epoch == planned && step > 0)
    return eg_error(EG_ERR_ARGUMENT, "%s: step %lld (after epoch %lld): past the last epoch of "
                    "this run's %lld (%lld steps per epoch)", path, (long long)step,
                    (long long)epoch, (long long)planned, (long long)steps);
  if (step >= steps)
    return eg_error(EG_ERR_ARGUMENT, "%s: step %lld (after epoch %lld): not a step of an epoch "
                    "of this run (%lld steps per epoch)", path, (long long)step,
                    (long long)epoch, (long long)steps);
  if (__builtin_mul_overflow(epoch, steps, &at) || __builtin_add_overflow(at, step, &at) ||
      gstep != at)
    return eg_error(EG_ERR_FORMAT, "%s: global_step %lld: epoch %lld and step %lld of %lld steps "
                    "per epoch make %lld", path, (long long)gstep, (long long)epoch,
                    (long long)step, (long long)steps, (long long)at);
  return EG_OK;
}

/* Checks everything of checkpoint `f` against this trainer before anything is restored. */
static eg_status check_checkpoint(eg_trainer *tr, const eg_safetensors *f, const char *path,
                                  int64_t pos[3], double *loss_sum, uint64_t *rng_state) {
  const char *format = eg_safetensors_meta_get(f, "format");
  const char *version = eg_safetensors_meta_get(f, "version");
  if (!format || strcmp(format, "edgegrad.checkpoint") != 0 || !version ||
      (strcmp(version, "2") != 0 && strcmp(version, "3") != 0))
    return eg_error(EG_ERR_FORMAT, "%s: format %s version %s: not an edgegrad checkpoint of "
                    "version 2 or 3", path, format ? format : "(none)",
                    version ? version : "(none)");
  EG_TRY(check_checksum(f, path));
  const char *rng = eg_safetensors_meta_get(f, "rng");
  char *end = NULL;
  errno = 0;
  *rng_state = rng && strlen(rng) == 16 ? strtoull(rng, &end, 16) : 0;
  if (!end || *end || errno)
    return eg_error(EG_ERR_FORMAT, "%s: rng %s: expected the random stream's state as 16 hex "
                    "digits", path, rng ? rng : "(none)");
  char sig[1024];
  run_signature(tr, sig, sizeof sig);
  const char *theirs = eg_safetensors_meta_get(f, "run");
  if (!theirs || strcmp(theirs, sig) != 0) {
    char diff[2100];
    signature_diff(theirs ? theirs : "", sig, diff, sizeof diff);
    return eg_error(EG_ERR_ARGUMENT, "%s: written by another run (%s): resume with the same "
                    "data, batch, optimizer, schedule and seed", path, diff);
  }
  EG_TRY(check_position(tr, f, path, pos));
  const char *loss = eg_safetensors_meta_get(f, "epoch_loss_sum");
  end = NULL;
  *loss_sum = loss ? strtod(loss, &end) : NAN;
  if (!end || *end || !isfinite(*loss_sum))
    return eg_error(EG_ERR_FORMAT, "%s: epoch_loss_sum %s: expected a finite number", path,
                    loss ? loss : "(none)");
  return EG_OK;
}

/* Every tensor the trainer's state has, present in `f` with its dtype and shape, and no other;
 * then restored: inputs through the runtime (the file's bytes may be unaligned: copied first),
 * the optimizer's state into its views. */
static eg_status restore(eg_trainer *tr, const eg_safetensors *f, const char *path,
                         eg_safetensors_entry *e, int n) {
  for (int k = 0; k < n; k++) {
    const eg_safetensors_entry *c = eg_safetensors_find(f, e[k].name);
    bool same = c && c->t.dtype == e[k].t.dtype && c->t.rank == e[k].t.rank;
    for (int d = 0; same && d < c->t.rank; d++) same = c->t.shape[d] == e[k].t.shape[d];
    if (!same)
      return eg_error(EG_ERR_ARGUMENT, "%s: tensor %s %s: this model's is %s of that shape: a "
                      "checkpoint of another model", path, e[k].name,
                      c ? "differs in dtype or shape" : "missing", eg_dtype_name(e[k].t.dtype));
  }
  int n_file = 0;
  eg_safetensors_entries(f, &n_file);
  if (n_file != n)
    return eg_error(EG_ERR_ARGUMENT, "%s: %d tensors, this model and optimizer have %d: a "
                    "checkpoint of another model or optimizer", path, n_file, n);
  for (int k = 0; k < n; k++) {
    const eg_safetensors_entry *c = eg_safetensors_find(f, e[k].name);
    const size_t bytes = (size_t)eg_tensor_numel(&e[k].t) * eg_dtype_size(e[k].t.dtype);
    if (strncmp(e[k].name, "input/", 6) == 0) {
      eg_tensor v = c->t;
      if (!(v.data = malloc(bytes + 1))) return eg_error(EG_ERR_NOMEM, "eg_trainer: out of memory");
      memcpy(v.data, c->t.data, bytes);
      const eg_status s = eg_runtime_set_input(tr->rt, e[k].name + 6, &v);
      free(v.data);
      EG_TRY(s);
    } else if (bytes) {
      memcpy(e[k].t.data, c->t.data, bytes);
    }
  }
  return EG_OK;
}

bool eg_train_has_data(const eg_trainer *tr) { return tr->train.steps > 0; }

eg_status eg_train_load_checkpoint(eg_trainer *tr, const eg_safetensors *f, const char *path) {
  int64_t pos[3] = {0, 0, 0};
  double loss_sum = 0;
  uint64_t rng = 0;
  eg_safetensors_entry *e = NULL;
  char **nm = NULL;
  int n = 0;
  eg_status s = check_checkpoint(tr, f, path, pos, &loss_sum, &rng);
  if (s == EG_OK) s = state_entries(tr, false, &e, &n, &nm);
  if (s == EG_OK) s = restore(tr, f, path, e, n);
  const int64_t skipped = s == EG_OK ? eg_optimizer_skipped_steps(tr->opt) : 0;
  if (s == EG_OK && !(skipped >= 0 && skipped <= pos[2]))
    s = eg_error(EG_ERR_FORMAT, "%s: optimizer/loss_scaler: %lld skipped steps of global_step "
                 "%lld: a count from 0 to global_step", path, (long long)skipped,
                 (long long)pos[2]);
  if (s == EG_OK) {
    eg_optimizer_set_steps(tr->opt, pos[2] - skipped); /* the steps that updated */
    tr->epoch = pos[0];
    tr->step = pos[1];
    tr->loss_sum = loss_sum;
    tr->rng = rng;
    tr->started = false;
    tr->ckpt_written = pos[2];
  }
  free_names(nm, n);
  free(e);
  return s;
}

/* ---- the trained weights ---- */

eg_status eg_train_save_weights(eg_trainer *tr, const char *path, const char *producer) {
  const int ni = tr->g->n_inputs;
  eg_safetensors_entry *e = calloc((size_t)ni + 1, sizeof *e);
  if (!e) return eg_error(EG_ERR_NOMEM, "eg_trainer_save_weights: out of memory");
  int n = 0;
  for (int i = 0; i < ni; i++) {
    eg_tensor_desc d;
    eg_graph_describe(tr->g, true, i, &d);
    if ((d.role != EG_ROLE_PARAMETER && d.role != EG_ROLE_BUFFER) ||
        eg_runtime_input(tr->rt, i, &e[n].t) != EG_OK)
      continue;
    e[n].name = d.state_dict ? d.state_dict : d.name;
    n++;
  }
  const eg_safetensors_meta meta[] = {{"format", "pt"},
                                      {"producer", producer ? producer : "edgegrad"}};
  const eg_status s = eg_safetensors_save(path, e, n, meta, 2);
  free(e);
  return s;
}
