/* train_args.c — `edgegrad train`'s command line: its option table (options.h; the help text
 * is usage.c's) and the rules between the options, into train_args (train.h). */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "train.h"

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
    {"constant", EG_LR_CONSTANT}, {"step", EG_LR_STEP}, {"cosine", EG_LR_COSINE}, {NULL, 0}};

#define TRAIN(m) OPT_AT(train_cmdline, a.m)
static const opt_def train_opts[] = {
    {.name = "--data", .kind = OPT_STRING, .arg = "DATA", TRAIN(data)},
    {.name = "--init", .kind = OPT_STRING, .arg = "WEIGHTS", TRAIN(init)},
    {.name = "--epochs", .kind = OPT_INT, .arg = "E", TRAIN(t.epochs), .lo = 1, .hi = 1000000},
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
    {.name = "--lr-schedule", .kind = OPT_CHOICE, .arg = "S", TRAIN(t.schedule),
     .choices = schedule_choices},
    {.name = "--lr-step", .kind = OPT_INT, .arg = "E", TRAIN(t.lr_step), .lo = 1, .hi = 1000000},
    {.name = "--lr-gamma", .kind = OPT_NUMBER, .arg = "G", TRAIN(t.lr_gamma), .min = 0},
    {.name = "--shuffle", .kind = OPT_FLAG, TRAIN(t.shuffle)},
    {.name = "--no-shuffle", .kind = OPT_FLAG, TRAIN(t.shuffle), .clears = true},
    {.name = "--seed", .kind = OPT_CUSTOM, .arg = "S", TRAIN(t.seed), .parse = seed_arg},
    {.name = "--normalize", .kind = OPT_PAIR, .arg = "MEAN,STD", TRAIN(t.mean),
     OPT_AT2(train_cmdline, a.t.std)},
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
int parse_train_args(int argc, char **argv, train_args *a) {
  train_cmdline cl = {.a = *a, .kind = EG_OPTIMIZER_SGD, .beta1 = 0.9, .beta2 = 0.999,
                      .eps = 1e-8};
  /* shuffle, lr_step 1, lr_gamma 0.1, std 1 */
  if (eg_trainer_defaults(&cl.a.t) != EG_OK) return fail_status(EG_ERR_ARGUMENT);
  opt_given given;
  int rc = opt_parse(&train_command, argc, argv, &cl, &given);
  *a = cl.a;
#define GIVEN(name) opt_was_given(&train_command, &given, name)
  if (rc) return rc;
  a->have_wd = GIVEN("--weight-decay");
  a->t.normalize = GIVEN("--normalize");
  a->compile.struct_size = sizeof a->compile;
  a->rt_opt.struct_size = sizeof a->rt_opt;
  a->compile.precision = a->rt_opt.precision;
  const bool have_sgd = GIVEN("--momentum") || GIVEN("--dampening") || GIVEN("--nesterov");
  const bool have_adam = GIVEN("--betas") || GIVEN("--eps");
  if (GIVEN("--val-split") && !(a->val_split > 0 && a->val_split < 1))
    return fail(EXIT_USAGE, "train: --val-split %g: expected a fraction in (0, 1)", a->val_split);
  if (a->t.normalize && !(a->t.std > 0))
    return fail(EXIT_USAGE, "train: --normalize %g,%g: STD must be > 0", a->t.mean, a->t.std);
  if (!a->data) return fail(EXIT_USAGE, "train: --data DATA missing: the examples to train on "
                            "(a folder of <input>.npy or an .npz archive)");
  if (!a->t.epochs) return fail(EXIT_USAGE, "train: --epochs E missing: how many passes over the "
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
  if (eg_optimizer_defaults(cl.kind, &a->opt) != EG_OK) return fail_status(EG_ERR_ARGUMENT);
  a->opt.loss_scale = EG_LOSS_SCALE_AUTO; /* dynamic at fp16; --loss-scale below */
  a->opt.growth_interval = a->loss_scale_interval;
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
