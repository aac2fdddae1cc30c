/* train.c — `edgegrad train`: fine-tuning a training step over a data set, a shell over the
 * library's trainer (eg_trainer: api/trainer.c). Here: the options, the data read from files
 * (arrays.h: a folder of .npy or an .npz archive), the first values (--init, by default the
 * exporter's STEM.init.safetensors), progress on the terminal, a JSON-lines log, checkpoints
 * in --checkpoint DIR, and the trained weights (--out).
 *
 * The order keeps failures cheap and the disk untouched: arguments, model, data (every array
 * read; the trainer checks shapes, dtypes, finite values, labels), runtime and trainer,
 * checkpoint (read and checked against this run), then the epochs. */
#include <dirent.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "arrays.h"
#include "cli.h"
#include "outdir.h"


enum { SCHED_CONSTANT, SCHED_STEP, SCHED_COSINE };

typedef struct train_args {
  const char *model, *data, *init, *out, *log, *ckpt_dir, *max_memory_arg;
  const char *eval, *val_data; /* --eval EVAL, --val-data DIR */
  double val_split;            /* --val-split F; 0: none */
  eg_compile_options compile;
  eg_runtime_options rt_opt;
  eg_optimizer_options opt;
  bool have_wd, shuffle, resume, quiet, normalize;
  long epochs, ckpt_every, lr_step;
  uint64_t seed;
  int schedule;
  double gamma, mean, std;
  const char *loss_scale;      /* --loss-scale; NULL: by the precision (resolve_loss_scale) */
  long loss_scale_interval;    /* --loss-scale-interval N; 0: GradScaler's 2000 */
} train_args;

/* ---- arguments ---- */

/* --loss-scale none|dynamic|S: S a number in (0, FLT_MAX] (the scale is a float32). */
static int parse_loss_scale(train_args *a) {
  const char *v = a->loss_scale;
  char *end = NULL;
  if (strcmp(v, "none") == 0) a->opt.loss_scale = EG_LOSS_SCALE_NONE;
  else if (strcmp(v, "dynamic") == 0) a->opt.loss_scale = EG_LOSS_SCALE_DYNAMIC;
  else {
    errno = 0;
    const double s = strtod(v, &end);
    if (!end || end == v || *end || errno || !(s > 0 && s <= FLT_MAX))
      return fail(EXIT_USAGE, "train: --loss-scale %s: expected none, dynamic or a scale in (0, "
                  "%g]", v, (double)FLT_MAX);
    a->opt.loss_scale = EG_LOSS_SCALE_STATIC;
    a->opt.init_scale = s;
  }
  return 0;
}

/* --seed S: a whole number in [0, 2^64) into a uint64_t. */
static int seed_arg(const char *cmd, const char *opt, const char *v, void *field) {
  char *end = NULL;
  errno = 0;
  unsigned long long s = v[0] >= '0' && v[0] <= '9' ? strtoull(v, &end, 10) : 0;
  if (!end || *end || errno)
    return fail(EXIT_USAGE, "%s: %s %s: expected an integer in [0, 2^64)", cmd, opt, v);
  *(uint64_t *)field = s;
  return 0;
}

/* train's command line as given: train_args, and the optimizer's options, of which
 * parse_train_args makes train_args.opt (eg_optimizer_defaults of the kind, then those given). */
typedef struct train_cmdline {
  train_args a;
  eg_optimizer_kind kind;
  double lr, momentum, dampening, wd, beta1, beta2, eps;
  bool nesterov;
} train_cmdline;

static const opt_choice optimizer_choices[] = {
    {"sgd", EG_OPTIMIZER_SGD}, {"adam", EG_OPTIMIZER_ADAM}, {"adamw", EG_OPTIMIZER_ADAMW},
    {NULL, 0}};
static const opt_choice schedule_choices[] = {
    {"constant", SCHED_CONSTANT}, {"step", SCHED_STEP}, {"cosine", SCHED_COSINE}, {NULL, 0}};

#define TRAIN(m) OPT_AT(train_cmdline, a.m)
static const opt_def train_opts[] = {
    {.name = "--data", .kind = OPT_STRING, .arg = "DATA", TRAIN(data)},
    {.name = "--init", .kind = OPT_STRING, .arg = "WEIGHTS", TRAIN(init)},
    {.name = "--epochs", .kind = OPT_INT, .arg = "E", TRAIN(epochs), .lo = 1, .hi = 1000000},
    {.name = "--eval", .kind = OPT_STRING, .arg = "EVAL", TRAIN(eval)},
    {.name = "--val-data", .kind = OPT_STRING, .arg = "DATA", TRAIN(val_data)},
    {.name = "--val-split", .kind = OPT_NUMBER, .arg = "F", TRAIN(val_split), .min = 0},
    {.name = "--soc", .kind = OPT_STRING, .arg = "SOC", TRAIN(compile.soc)},
    {.name = "--optimizer", .kind = OPT_CHOICE, .arg = "KIND", OPT_AT(train_cmdline, kind),
     .choices = optimizer_choices},
    {.name = "--lr", .kind = OPT_NUMBER, .arg = "LR", OPT_AT(train_cmdline, lr), .min = 0},
    {.name = "--momentum", .kind = OPT_NUMBER, .arg = "M", OPT_AT(train_cmdline, momentum),
     .min = 0},
    {.name = "--dampening", .kind = OPT_NUMBER, .arg = "D", OPT_AT(train_cmdline, dampening),
     .min = -HUGE_VAL},
    {.name = "--nesterov", .kind = OPT_FLAG, OPT_AT(train_cmdline, nesterov)},
    {.name = "--weight-decay", .kind = OPT_NUMBER, .arg = "WD", OPT_AT(train_cmdline, wd),
     .min = 0},
    {.name = "--betas", .kind = OPT_PAIR, .arg = "B1,B2", OPT_AT(train_cmdline, beta1),
     OPT_AT2(train_cmdline, beta2)},
    {.name = "--eps", .kind = OPT_NUMBER, .arg = "EPS", OPT_AT(train_cmdline, eps), .min = 0},
    {.name = "--lr-schedule", .kind = OPT_CHOICE, .arg = "S", TRAIN(schedule),
     .choices = schedule_choices},
    {.name = "--lr-step", .kind = OPT_INT, .arg = "E", TRAIN(lr_step), .lo = 1, .hi = 1000000},
    {.name = "--lr-gamma", .kind = OPT_NUMBER, .arg = "G", TRAIN(gamma), .min = 0},
    {.name = "--shuffle", .kind = OPT_FLAG, TRAIN(shuffle)},
    {.name = "--no-shuffle", .kind = OPT_FLAG, TRAIN(shuffle), .clears = true},
    {.name = "--seed", .kind = OPT_CUSTOM, .arg = "S", TRAIN(seed), .parse = seed_arg},
    {.name = "--normalize", .kind = OPT_PAIR, .arg = "MEAN,STD", TRAIN(mean),
     OPT_AT2(train_cmdline, a.std)},
    {.name = "--checkpoint", .kind = OPT_STRING, .arg = "DIR", TRAIN(ckpt_dir)},
    {.name = "--checkpoint-every", .kind = OPT_INT, .arg = "K", TRAIN(ckpt_every), .lo = 1,
     .hi = 1L << 40},
    {.name = "--resume", .kind = OPT_FLAG, TRAIN(resume)},
    {.name = "--out", .kind = OPT_STRING, .arg = "FILE", TRAIN(out)},
    {.name = "--log", .kind = OPT_STRING, .arg = "FILE", TRAIN(log)},
    {.name = "--threads", .kind = OPT_INT, .arg = "N", TRAIN(rt_opt.num_threads), .lo = 1,
     .hi = 1024},
    /* overrides a program's precision; sets the one a --soc run compiles for */
    {.name = "--precision", .kind = OPT_CHOICE, .arg = "fp16|fp32", TRAIN(rt_opt.precision),
     .choices = precision_choices},
    {.name = "--loss-scale", .kind = OPT_STRING, .arg = "none|dynamic|S", TRAIN(loss_scale)},
    {.name = "--loss-scale-interval", .kind = OPT_INT, .arg = "N", TRAIN(loss_scale_interval),
     .lo = 1, .hi = INT32_MAX},
    {.name = "--max-memory", .kind = OPT_SIZE, .arg = "SIZE", TRAIN(rt_opt.max_memory_bytes),
     OPT_AT2(train_cmdline, a.max_memory_arg)},
    {.name = "--quiet", .alias = "-q", .kind = OPT_FLAG, TRAIN(quiet)},
};
#undef TRAIN
static const opt_pos train_pos[] = {{"model", offsetof(train_cmdline, a.model)}};
const opt_command train_command = {.name = "train", .usage = usage_train,
                                   OPT_OPTIONS(train_opts), OPT_POSITIONALS(train_pos),
                                   .n_required = 1, .synopsis = "MODEL.json|PROGRAM.egp"};

/* The options (defaults: torch.optim's), then the rules between them. */
static int parse_train_args(int argc, char **argv, train_args *a) {
  train_cmdline cl = {.a = *a, .kind = EG_OPTIMIZER_SGD, .beta1 = 0.9, .beta2 = 0.999,
                      .eps = 1e-8};
  cl.a.shuffle = true;
  cl.a.gamma = 0.1;
  cl.a.lr_step = 1;
  cl.a.std = 1;
  opt_given given;
  int rc = opt_parse(&train_command, argc, argv, &cl, &given);
  *a = cl.a;
#define GIVEN(name) opt_was_given(&train_command, &given, name)
  if (rc) return rc;
  a->have_wd = GIVEN("--weight-decay");
  a->normalize = GIVEN("--normalize");
  a->compile.precision = a->rt_opt.precision;
  const bool have_sgd = GIVEN("--momentum") || GIVEN("--dampening") || GIVEN("--nesterov");
  const bool have_adam = GIVEN("--betas") || GIVEN("--eps");
  if (GIVEN("--val-split") && !(a->val_split > 0 && a->val_split < 1))
    return fail(EXIT_USAGE, "train: --val-split %g: expected a fraction in (0, 1)", a->val_split);
  if (a->normalize && !(a->std > 0))
    return fail(EXIT_USAGE, "train: --normalize %g,%g: STD must be > 0", a->mean, a->std);
  if (!a->data) return fail(EXIT_USAGE, "train: --data DATA missing: the examples to train on "
                            "(a folder of <input>.npy or an .npz archive)");
  if (!a->epochs) return fail(EXIT_USAGE, "train: --epochs E missing: how many passes over the "
                              "data");
  if ((a->val_data || a->val_split > 0) && !a->eval)
    return fail(EXIT_USAGE, "train: --val-data/--val-split need --eval EVAL: the evaluation graph "
                "(export_training_step writes STEM.eval.json beside the step)");
  if (a->val_data && a->val_split > 0)
    return fail(EXIT_USAGE, "train: --val-data and --val-split: give one validation set");
  if (a->eval && !a->val_data && a->val_split <= 0)
    return fail(EXIT_USAGE, "train: --eval needs a validation set: --val-data DIR or --val-split F");
  if ((a->resume || a->ckpt_every) && !a->ckpt_dir)
    return fail(EXIT_USAGE, "train: --resume and --checkpoint-every need --checkpoint DIR");
  if (cl.kind == EG_OPTIMIZER_SGD && have_adam)
    return fail(EXIT_USAGE, "train: --betas/--eps are options of adam and adamw, not of sgd");
  if (cl.kind != EG_OPTIMIZER_SGD && have_sgd)
    return fail(EXIT_USAGE, "train: --momentum/--dampening/--nesterov are options of sgd, not of "
                "%s", cl.kind == EG_OPTIMIZER_ADAM ? "adam" : "adamw");
  a->opt = eg_optimizer_defaults(cl.kind);
  if (GIVEN("--lr")) a->opt.lr = cl.lr;
  if (a->have_wd) a->opt.weight_decay = cl.wd;
#undef GIVEN
  a->opt.momentum = cl.momentum;
  a->opt.dampening = cl.dampening;
  a->opt.nesterov = cl.nesterov;
  a->opt.beta1 = cl.beta1;
  a->opt.beta2 = cl.beta2;
  a->opt.eps = cl.eps;
  if (cl.nesterov && (cl.momentum <= 0 || cl.dampening != 0))
    return fail(EXIT_USAGE, "train: --nesterov (momentum %g, dampening %g): Nesterov momentum "
                "needs --momentum > 0 and dampening 0", cl.momentum, cl.dampening);
  if (cl.beta1 < 0 || cl.beta1 >= 1 || cl.beta2 < 0 || cl.beta2 >= 1)
    return fail(EXIT_USAGE, "train: --betas %g,%g: each must be in [0, 1)", cl.beta1, cl.beta2);
  return a->loss_scale ? parse_loss_scale(a) : 0;
}

/* Whether the NPU partitions train runs compute in fp16: --precision, else the program's
 * recorded precision, else (a graph compiled for --soc) the SoC's own, as compiling takes it. */
static bool npu_fp16(const train_args *a, const eg_model *m) {
  if (a->rt_opt.precision) return a->rt_opt.precision == EG_PRECISION_FP16;
  eg_program_info prog;
  if (eg_model_program_info(m, &prog) == EG_OK)
    return prog.precision && strcmp(prog.precision, "fp16") == 0;
  for (int i = 0; a->compile.soc && i < eg_num_targets(); i++) {
    eg_target_info t;
    if (eg_get_target(i, &t) == EG_OK && strcasecmp(t.soc, a->compile.soc) == 0)
      return t.float_precision && strcmp(t.float_precision, "fp16") == 0;
  }
  return false;
}

/* Loss scaling by the model's precision when --loss-scale is not given: dynamic when its NPU
 * partitions compute in fp16 (npu_fp16), else none. --loss-scale-interval belongs to dynamic
 * scaling. */
static int resolve_loss_scale(train_args *a, const eg_model *m) {
  const bool fp16 = npu_fp16(a, m);
  if (!a->loss_scale) a->opt.loss_scale = fp16 ? EG_LOSS_SCALE_DYNAMIC : EG_LOSS_SCALE_NONE;
  if (a->loss_scale_interval && a->opt.loss_scale != EG_LOSS_SCALE_DYNAMIC)
    return fail(EXIT_USAGE, "train: --loss-scale-interval %ld: loss scaling is %s: the interval "
                "is dynamic loss scaling's (--loss-scale dynamic)", a->loss_scale_interval,
                a->opt.loss_scale == EG_LOSS_SCALE_NONE ? "none" : "static");
  a->opt.growth_interval = a->loss_scale_interval;
  return 0;
}

/* ---- the run: a shell over eg_trainer ---- */

typedef struct run {
  train_args a;
  eg_model *m, *eval_m;
  eg_runtime *rt, *eval_rt;
  eg_trainer *tr;
  eg_tensor *files;           /* the arrays read, owned here; the trainer holds views */
  eg_trainer_array *arrays;
  char **where;
  int n_files, n_train;       /* arrays[0..n_train): --data; the rest: --val-data */
  char *ckpt_path;
  bool ckpt_made, live;
  double t0, shown;           /* the epoch's clock in this process, the last progress line */
  int64_t first;              /* its first step run here */
  double loss_run;            /* the sum of the losses of its steps run here */
  int64_t batch;
} run;

/* Whether input i of `m` is fed from data: no random draw, no parameter or buffer of `step`. */
static bool fed(const eg_model *m, int i, const eg_model *step) {
  eg_tensor_desc d, s;
  eg_model_input(m, i, &d);
  for (int j = 0; j < eg_model_num_inputs(step); j++)
    if (eg_model_input(step, j, &s) == EG_OK && strcmp(s.name, d.name) == 0 &&
        (s.role == EG_ROLE_PARAMETER || s.role == EG_ROLE_BUFFER))
      return false;
  return d.role != EG_ROLE_RANDOM;
}

/* Array <input> of `src` (arrays.h) for every fed input of `m`, appended to r->arrays. */
static int read_set(run *r, const eg_model *m, const char *src, const char *opt) {
  arrays *arr; /* the data takes its bytes from --max-memory: the runtimes get what is left */
  int rc = arrays_open(src, opt, &r->a.rt_opt.max_memory_bytes, &arr);
  for (int i = 0; rc == 0 && i < eg_model_num_inputs(m); i++) {
    eg_tensor_desc d;
    eg_model_input(m, i, &d);
    if (!fed(m, i, r->m)) continue;
    char why[400], where[1200];
    snprintf(why, sizeof why, "input %s (%s) needs its examples there", d.name,
             eg_dtype_name(d.tensor.dtype));
    arrays_where(arr, d.name, where, sizeof where);
    const int k = r->n_files;
    rc = arrays_get(arr, d.name, why, &r->files[k]);
    if (rc == 0 && !(r->where[k] = strdup(where))) rc = fail(EXIT_FAIL, "train: out of memory");
    if (rc) break;
    r->arrays[k] = (eg_trainer_array){d.name, r->files[k], r->where[k]};
    r->n_files++;
  }
  arrays_close(arr);
  return rc;
}

/* A library failure of status s, its message after `what` ("train: "). */
static int said(eg_status s, const char *what) {
  return fail(s == EG_ERR_NOMEM || s == EG_ERR_RUNTIME ? EXIT_FAIL : EXIT_USAGE, "%s%s", what,
              eg_last_error());
}

/* A runtime for `m` (on the CPU, compiled for --soc, or the compiled program it is). */
static int make_runtime(run *r, const eg_model *m, const char *path, eg_runtime **rt) {
  const train_args *a = &r->a;
  eg_program_info prog;
  const bool compiled = eg_model_program_info(m, &prog) == EG_OK;
  if (a->compile.soc && compiled && strcmp(prog.soc, a->compile.soc) != 0)
    return fail(EXIT_USAGE, "train: --soc %s with %s: it is a program compiled for %s: give the "
                "graph file, or the program for %s", a->compile.soc, path, prog.soc,
                a->compile.soc);
  eg_status s = a->compile.soc && !compiled
                    ? eg_runtime_create_compiled_with_options(m, &a->compile, &a->rt_opt, rt)
                    : eg_runtime_create_with_options(m, &a->rt_opt, rt);
  if (s == EG_ERR_LIMIT)
    return fail(EXIT_USAGE, "train: --max-memory %s, less the data's bytes: %s",
                a->max_memory_arg, eg_last_error());
  return s == EG_OK ? 0 : fail_status(s);
}

/* --init, or the exporter's STEM.init.safetensors beside MODEL (STEM.json, STEM.egp). */
static int set_init(run *r) {
  const char *init = r->a.init;
  char *dflt = NULL;
  if (!init) {
    const char *m = r->a.model, *dot = strrchr(m, '.');
    const size_t stem = dot && !strchr(dot, '/') ? (size_t)(dot - m) : strlen(m);
    if (!(dflt = malloc(stem + 20))) return fail(EXIT_FAIL, "train: out of memory");
    snprintf(dflt, stem + 20, "%.*s.init.safetensors", (int)stem, m);
    if (access(dflt, F_OK) != 0) {
      fail(EXIT_USAGE, "train: --init missing: the first values of the parameters and buffers "
           "(WEIGHTS.safetensors, or a folder of <input>.npy); %s, which the exporter writes "
           "beside the step, does not exist", dflt);
      free(dflt);
      return EXIT_USAGE;
    }
    init = dflt;
  }
  const eg_status s = eg_runtime_load_weights(r->rt, init);
  const int rc = s == EG_OK ? 0 : said(s, "train: --init ");
  if (rc == 0 && dflt && !r->a.quiet) printf("train: --init %s\n", dflt);
  free(dflt);
  return rc;
}

static int setup(run *r) {
  train_args *a = &r->a;
  int rc = load_model("train", READS_MODEL, a->model, &r->m);
  if (rc == 0 && a->eval) rc = load_model("train: --eval", READS_MODEL, a->eval, &r->eval_m);
  if (rc) return rc;
  if (!a->have_wd && a->opt.kind == EG_OPTIMIZER_ADAMW) a->opt.weight_decay = 1e-2;
  rc = resolve_loss_scale(a, r->m);
  const int n = eg_model_num_inputs(r->m) + (r->eval_m ? eg_model_num_inputs(r->eval_m) : 0);
  r->files = calloc((size_t)n + 1, sizeof *r->files);
  r->arrays = calloc((size_t)n + 1, sizeof *r->arrays);
  r->where = calloc((size_t)n + 1, sizeof *r->where);
  if (rc == 0 && (!r->files || !r->arrays || !r->where)) rc = fail(EXIT_FAIL, "train: out of memory");
  if (rc == 0) rc = read_set(r, r->m, a->data, "--data");
  r->n_train = r->n_files;
  if (rc == 0 && a->val_data) rc = read_set(r, r->eval_m, a->val_data, "--val-data");
  if (rc == 0) rc = make_runtime(r, r->m, a->model, &r->rt);
  if (rc == 0 && a->eval) rc = make_runtime(r, r->eval_m, a->eval, &r->eval_rt);
  if (rc) return rc;
  eg_trainer_options o = eg_trainer_defaults(a->opt.kind);
  o.optimizer = a->opt;
  o.schedule = (eg_lr_schedule)a->schedule;
  o.lr_step = a->lr_step;
  o.lr_gamma = a->gamma;
  o.epochs = a->epochs;
  o.shuffle = a->shuffle;
  o.seed = a->seed;
  o.normalize = a->normalize;
  o.mean = a->mean;
  o.std = a->std;
  eg_status s = eg_trainer_create(r->rt, &o, &r->tr);
  if (s == EG_OK) s = eg_trainer_set_data(r->tr, r->arrays, r->n_train);
  if (s == EG_OK && a->val_data)
    s = eg_trainer_set_eval(r->tr, r->eval_rt, r->arrays + r->n_train, r->n_files - r->n_train);
  if (s == EG_OK && a->val_split > 0) s = eg_trainer_hold_out(r->tr, r->eval_rt, a->val_split);
  if (s != EG_OK && a->eval && strncmp(eg_last_error(), "evaluation graph: ", 18) == 0)
    return fail(EXIT_USAGE, "train: --eval %s: %s", a->eval, eg_last_error() + 18);
  if (s != EG_OK) return said(s, "train: ");
  eg_trainer_sizes(r->tr, NULL, &r->batch, NULL, NULL);
  return 0;
}

/* ---- events: the terminal, the log, checkpoints ---- */

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The validation part of an epoch's line ("" without a validation set). */
static void val_text(const eg_trainer_event *e, char *text, size_t size) {
  text[0] = 0;
  if (isnan(e->val_loss)) return;
  const int n = snprintf(text, size, "  val loss %.6g", e->val_loss);
  if (!isnan(e->val_accuracy))
    snprintf(text + n, size - (size_t)n, "  val acc %.2f%%", 100.0 * e->val_accuracy);
}

/* The terminal: a live progress line (steps), a line per epoch, the evaluation before. */
static void on_step(run *r, const eg_trainer_event *e) {
  r->loss_run += e->loss;
  const double t = now_s();
  if (!r->live || (t - r->shown <= 0.1 && e->step < e->steps)) return;
  const int64_t ran = e->step - r->first;
  const double dt = t - r->t0, rate = dt > 0 ? (double)(ran * r->batch) / dt : 0;
  const double eta = ran > 0 ? dt / (double)ran * (double)(e->steps - e->step) : 0;
  printf("\repoch %lld/%ld  step %lld/%lld  loss %.6g  %.1f ex/s  ETA %d:%02d\033[K",
         (long long)e->epoch, r->a.epochs, (long long)e->step, (long long)e->steps,
         r->loss_run / (double)(ran > 0 ? ran : 1), rate, (int)eta / 60, (int)eta % 60);
  fflush(stdout);
  r->shown = t;
}

static void on_epoch(run *r, const eg_trainer_event *e) {
  char val[128], grads[128];
  val_text(e, val, sizeof val);
  const int n = snprintf(grads, sizeof grads, "  zero grads %.1f %%", 100.0 * e->zero_grads);
  if (r->a.opt.loss_scale != EG_LOSS_SCALE_NONE)
    snprintf(grads + n, sizeof grads - (size_t)n, "  loss scale %g  skipped %lld", e->loss_scale,
             (long long)e->skipped_steps);
  printf("%sepoch %lld/%ld  train loss %.6g%s  lr %.4g%s  %.2f s  %.0f ex/s%s\n",
         r->live ? "\r" : "", (long long)e->epoch, r->a.epochs, e->loss, val, e->lr, grads,
         e->seconds, e->seconds > 0 ? (double)(e->steps_run * r->batch) / e->seconds : 0.0,
         r->live ? "\033[K" : "");
  r->t0 = now_s();
  r->first = 0;
  r->loss_run = 0;
}

static int on_event(const eg_trainer_event *e, void *user) {
  run *r = user;
  char val[128];
  if (r->a.quiet) return 0;
  if (e->kind == EG_TRAINER_STEP) on_step(r, e);
  else if (e->kind == EG_TRAINER_EPOCH) on_epoch(r, e);
  else val_text(e, val, sizeof val), printf("epoch 0/%ld%s\n", r->a.epochs, val);
  return 0;
}

/* ---- resume and the trained weights ---- */

static int resume(run *r) {
  struct stat st;
  if (stat(r->ckpt_path, &st) != 0)
    return fail(EXIT_USAGE, "train: --resume: checkpoint %s: missing: nothing to resume (run "
                "without --resume first)", r->ckpt_path);
  eg_status s = eg_trainer_load_checkpoint(r->tr, r->ckpt_path);
  if (s != EG_OK) return said(s, "train: --resume: checkpoint ");
  int64_t epoch, step, steps;
  eg_trainer_position(r->tr, &epoch, &step, &steps);
  r->first = step;
  return 0;
}

static int write_out(run *r) {
  int unnamed = 0;
  const char *first = NULL;
  for (int i = 0; i < eg_model_num_inputs(r->m); i++) {
    eg_tensor_desc d;
    eg_model_input(r->m, i, &d);
    if ((d.role == EG_ROLE_PARAMETER || d.role == EG_ROLE_BUFFER) && !d.state_dict && !unnamed++)
      first = d.name;
  }
  if (unnamed && !r->a.quiet)
    fprintf(stderr, "edgegrad: train: --out: %d inputs (first %s) carry no PyTorch state_dict "
            "name (the model was exported without them): written under their input names\n",
            unnamed, first);
  const eg_status s = eg_trainer_save_weights(r->tr, r->a.out, "edgegrad train");
  return s == EG_OK ? 0 : said(s, "train: --out ");
}

static int train(run *r) {
  r->t0 = now_s();
  const eg_status s = eg_trainer_fit(r->tr, r->a.epochs);
  if (r->live && s != EG_OK) printf("\n");
  if (s == EG_ERR_IO && r->a.log && strncmp(eg_last_error(), r->a.log, strlen(r->a.log)) == 0)
    return fail(EXIT_FAIL, "train: --log %s", eg_last_error());
  return s == EG_OK ? 0 : said(s, s == EG_ERR_IO ? "train: checkpoint " : "train: ");
}

/* Where the run writes, checked before any work: a run must not train for hours and then find
 * it cannot save. --log is written in place (appended to with --resume). */
static int check_outputs(const train_args *a) {
  int rc = a->out ? outdir_check_file("train", "--out", a->out) : 0;
  if (rc == 0 && a->log) rc = outdir_check_file("train", "--log", a->log);
  if (rc == 0 && a->log && access(a->log, F_OK) == 0 && access(a->log, W_OK) != 0)
    rc = fail(EXIT_USAGE, "train: --log %s: cannot write (%s): the log is written in place",
              a->log, strerror(errno));
  if (rc == 0 && a->ckpt_dir) rc = outdir_check_dir("train", "--checkpoint", a->ckpt_dir);
  return rc;
}

static int open_checkpoints(run *r) {
  r->ckpt_made = mkdir(r->a.ckpt_dir, 0777) == 0;
  if (!r->ckpt_made && errno != EEXIST)
    return fail(EXIT_USAGE, "train: --checkpoint %s: cannot create (%s)", r->a.ckpt_dir,
                strerror(errno));
  if (!(r->ckpt_path = outdir_join(r->a.ckpt_dir, "checkpoint", ".safetensors")))
    return fail(EXIT_FAIL, "train: out of memory");
  const eg_status s = eg_trainer_set_checkpoints(r->tr, r->ckpt_path, r->a.ckpt_every);
  return s == EG_OK ? 0 : said(s, "train: ");
}

static void say_start(run *r) {
  int64_t epoch, step, steps, n, batch, vn, vbatch;
  eg_trainer_position(r->tr, &epoch, &step, &steps);
  eg_trainer_sizes(r->tr, &n, &batch, &vn, &vbatch);
  static const char *const kinds[] = {"sgd", "adam", "adamw"};
  printf("train: %lld examples, batch %lld: %lld steps per epoch", (long long)n,
         (long long)batch, (long long)steps);
  if (n % batch)
    printf(" (the last %lld example%s of each epoch's order dropped: the graph's batch size is "
           "fixed)", (long long)(n % batch), n % batch == 1 ? "" : "s");
  printf("; %s, lr %g\n", kinds[r->a.opt.kind], r->a.opt.lr);
  if (r->eval_rt) {
    printf("train: validation: %lld examples%s, batch %lld: %lld batches", (long long)vn,
           r->a.val_split > 0 ? " held back by --val-split" : "", (long long)vbatch,
           (long long)(vn / vbatch));
    if (vn % vbatch)
      printf(" (the last %lld not evaluated: the graph's batch size is fixed)",
             (long long)(vn % vbatch));
    printf("\n");
  }
  if (r->a.resume && epoch == r->a.epochs)
    printf("train: %s is of a finished run (%ld epochs): nothing left to train\n", r->ckpt_path,
           r->a.epochs);
  else if (r->a.resume)
    printf("train: resumed from %s at epoch %lld, step %lld\n", r->ckpt_path,
           (long long)epoch + 1, (long long)step + 1);
}

static void cleanup(run *r) {
  eg_trainer_destroy(r->tr);
  for (int k = 0; k < r->n_files; k++) {
    eg_tensor_free(&r->files[k]);
    free(r->where[k]);
  }
  free(r->files);
  free(r->arrays);
  free(r->where);
  free(r->ckpt_path);
  eg_runtime_destroy(r->rt);
  eg_runtime_destroy(r->eval_rt);
  eg_model_destroy(r->m);
  eg_model_destroy(r->eval_m);
}

int cmd_train(int argc, char **argv) {
  run r = {0};
  /* progress piped to a file or another program appears as it happens, a line at a time */
  if (!isatty(STDOUT_FILENO)) setvbuf(stdout, NULL, _IOLBF, 0);
  int rc = parse_train_args(argc, argv, &r.a);
  r.live = !r.a.quiet && isatty(STDOUT_FILENO);
  if (rc == 0) rc = check_outputs(&r.a);
  if (rc == 0) rc = setup(&r);
  if (rc == 0 && !r.a.resume) rc = set_init(&r);
  if (rc == 0 && r.a.ckpt_dir) rc = open_checkpoints(&r);
  if (rc == 0 && r.a.resume) rc = resume(&r);
  if (rc == 0 && r.a.log && eg_trainer_set_log(r.tr, r.a.log, r.a.resume) != EG_OK)
    rc = fail(EXIT_USAGE, "train: --log %s", eg_last_error());
  if (rc == 0 && !r.a.quiet) say_start(&r);
  if (rc == 0) eg_trainer_set_callback(r.tr, on_event, &r);
  if (rc == 0) rc = train(&r);
  if (rc == 0 && r.a.out) rc = write_out(&r);
  if (rc == 0 && r.a.out && !r.a.quiet) printf("train: trained weights written to %s\n", r.a.out);
  if (rc > 0 && r.ckpt_made) rmdir(r.a.ckpt_dir); /* only if nothing was written in it */
  cleanup(&r);
  return rc < 0 ? 0 : rc;
}
