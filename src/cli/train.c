/* train.c — `edgegrad train`: fine-tuning a training step over a data set, in epochs of
 * mini-batches, with an optimizer of the public API (eg_optimizer: torch.optim's SGD, Adam,
 * AdamW), a learning-rate schedule, progress on the terminal, a JSON-lines log, checkpoints
 * that a killed run resumes from bit for bit, and the trained weights written under their
 * PyTorch names.
 *
 * The order keeps failures cheap and the disk untouched: arguments, model, data (every array
 * read and checked: shapes, dtypes, finite values, labels), runtime and optimizer, checkpoint
 * (read and checked against this run), then the epochs. Every file is written atomically
 * (safetensors files by the library's codec, eg_safetensors_save). The example order of epoch
 * e is a permutation drawn from (seed, e) alone, so a run resumed at any step sees the batches
 * an uninterrupted run would. */
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

static const char usage_train[] =
    "usage: edgegrad train MODEL.json|PROGRAM.egp --data DATA --init WEIGHTS --epochs E\n"
    "                      [--eval EVAL (--val-data DATA | --val-split F)] [--soc SOC]\n"
    "                      [--optimizer sgd|adam|adamw] [--lr LR] [--momentum M]\n"
    "                      [--dampening D] [--nesterov] [--weight-decay WD] [--betas B1,B2]\n"
    "                      [--eps EPS] [--lr-schedule constant|step|cosine] [--lr-step E]\n"
    "                      [--lr-gamma G] [--shuffle|--no-shuffle] [--seed S]\n"
    "                      [--normalize MEAN,STD]\n"
    "                      [--checkpoint DIR [--checkpoint-every K] [--resume]]\n"
    "                      [--out WEIGHTS.safetensors] [--log FILE.jsonl] [--threads N]\n"
    "                      [--max-memory SIZE] [--precision fp16|fp32]\n"
    "                      [--loss-scale none|dynamic|S [--loss-scale-interval N]] [-q]\n"
    "\n"
    "Fine-tunes the exported training step MODEL (python/edgegrad/export.py) over a data set:\n"
    "E epochs of shuffled mini-batches of the graph's batch size; after each step an optimizer\n"
    "updates every parameter input P from its output grad_P, and every buffer input B takes\n"
    "its output new_B (BatchNorm's running statistics). On the CPU kernels, or compiled for a\n"
    "SoC with --soc; a compiled program runs as compiled.\n"
    "\n"
    "  --data DATA         a folder holding DATA/<input>.npy, or an .npz archive\n"
    "                      (numpy.savez / savez_compressed) holding <input>.npy, for each\n"
    "                      data input of the model (an input that is neither a parameter,\n"
    "                      a buffer nor a random draw: `edgegrad info`), all with the same\n"
    "                      number of examples N on their first axis; the rest of each\n"
    "                      shape is the input's without its batch axis. float data must be\n"
    "                      finite; integer labels (any integer dtype, given to an int64\n"
    "                      input) must be >= 0 and, where the loss (nll_loss, cross_entropy)\n"
    "                      reads them, < its classes C (every example, checked before\n"
    "                      training); uint8 data for a float32 input needs\n"
    "                      --normalize. The batch size B is the graph's: each epoch runs\n"
    "                      N/B steps, and the N mod B examples left over are dropped (said).\n"
    "                      Random inputs (Dropout masks, `edgegrad info` marks them) are\n"
    "                      drawn afresh for every step from a stream seeded by --seed\n"
    "  --init WEIGHTS      the parameters' and buffers' first values: a safetensors file\n"
    "                      with each under its PyTorch state_dict name or its input name\n"
    "                      (the exporter writes STEM.init.safetensors; a whole state_dict\n"
    "                      saved with safetensors works too: other tensors are ignored), or\n"
    "                      a folder of <input>.npy. Not needed with --resume\n"
    "  --epochs E          passes over the data (1 to 1000000)\n"
    "  --eval EVAL         the evaluation graph (STEM.eval.json, written by the exporter beside\n"
    "                      the step: the model in eval mode, BatchNorm on its running\n"
    "                      statistics, no dropout; or a program compiled from it), run over\n"
    "                      the validation set before training and after every epoch with\n"
    "                      the step's current parameters and buffers: val loss, and val\n"
    "                      accuracy (top-1) where its output is [batch, classes]\n"
    "  --val-data DATA     the validation set, as --data, for EVAL's data inputs\n"
    "  --val-split F       hold back round(F*N) examples of --data as the validation set\n"
    "                      (drawn with --seed; the last ones with --no-shuffle)\n"
    "  --optimizer KIND    sgd (default), adam or adamw, with torch.optim's update rules\n"
    "  --lr LR             learning rate (default 1e-3, torch.optim's)\n"
    "  --momentum M, --dampening D, --nesterov    SGD (defaults 0, 0, off)\n"
    "  --weight-decay WD   L2 added to the gradient (sgd, adam) or decoupled (adamw); default\n"
    "                      0, for adamw 1e-2\n"
    "  --betas B1,B2, --eps EPS    adam/adamw (defaults 0.9,0.999 and 1e-8)\n"
    "  --lr-schedule S     per epoch e (0-based): constant (default); step: LR *\n"
    "                      G^floor(e / --lr-step) (torch StepLR; --lr-step 1, --lr-gamma 0.1\n"
    "                      by default); cosine: LR * (1 + cos(pi e / E)) / 2 (CosineAnnealingLR,\n"
    "                      T_max = E, eta_min 0)\n"
    "  --no-shuffle        examples in file order (default, --shuffle: a permutation per\n"
    "                      epoch drawn from --seed S, default 0, and the epoch)\n"
    "  --seed S            seeds the shuffle and the random inputs' stream (default 0)\n"
    "  --normalize M,S     uint8 data for float32 inputs becomes (x/255 - M) / S\n"
    "  --checkpoint DIR    after every epoch (and every K steps with --checkpoint-every K)\n"
    "                      write DIR/checkpoint.safetensors atomically: parameters, buffers,\n"
    "                      optimizer state, epoch, step and the random stream's state.\n"
    "                      --resume continues from it; the final weights equal an\n"
    "                      uninterrupted run's bit for bit. A checkpoint of another model,\n"
    "                      data set or optimizer setting, one past --epochs, or a damaged\n"
    "                      one (its CRC-32 differs) is refused; one of a finished run (all\n"
    "                      --epochs done) trains nothing and writes --out from it\n"
    "  --out FILE          write the trained parameters and buffers to FILE (safetensors)\n"
    "                      under their PyTorch state_dict names (model.load_state_dict(...,\n"
    "                      strict=False) takes them), atomically, after the last epoch\n"
    "  --log FILE          one JSON object per line: {\"event\": \"step\", \"epoch\", \"step\",\n"
    "                      \"global_step\", \"loss\", \"lr\", with loss scaling \"loss_scale\"\n"
    "                      (for the next step) and \"skipped_steps\"} after every step and\n"
    "                      {\"event\": \"epoch\", \"epoch\", \"train_loss\", \"val_loss\",\n"
    "                      \"val_accuracy\", \"seconds\", \"lr\", \"zero_grads\" (the share of\n"
    "                      gradient elements exactly 0), with loss scaling \"loss_scale\" and\n"
    "                      \"skipped_steps\"} after every epoch (val_* with --eval; an\n"
    "                      \"eval\" event for epoch 0 before training); appended to with\n"
    "                      --resume\n"
    "  --threads N         kernel threads (default: OMP_NUM_THREADS, else one per core)\n"
    "  --precision fp16|fp32  how NPU partitions compute floats (docs/fp16.md): with --soc,\n"
    "                      what to compile for (default: the SoC's, fp16 on every SoC with a\n"
    "                      float path, as `edgegrad targets` lists); for a compiled program,\n"
    "                      overrides the precision it records (default: the recorded one)\n"
    "  --loss-scale none|dynamic|S  loss scaling against gradients that underflow in fp16\n"
    "                      (torch.amp.GradScaler's rules): each step's backward starts from a\n"
    "                      scale S instead of 1, the gradients are unscaled before the\n"
    "                      update, and a step whose scaled gradients overflow (inf, NaN, or\n"
    "                      at fp16 >= 65504) is skipped. dynamic: S from 65536, halved after\n"
    "                      a skipped step, doubled after --loss-scale-interval N good steps\n"
    "                      in a row (default 2000); S (a number > 0): that scale throughout.\n"
    "                      Default: dynamic when the NPU partitions compute in fp16\n"
    "                      (--precision, the program's recorded one, or with --soc the\n"
    "                      SoC's), else none\n"
    "  --max-memory SIZE   as for `edgegrad run`, the data included: each array's size (an\n"
    "                      .npz member's uncompressed size) is taken from SIZE before it is\n"
    "                      read, and the runtime gets what the data leaves\n"
    "  -q, --quiet         print nothing but errors\n"
    "\n"
    "Prints a line per epoch (train loss, val loss and accuracy, learning rate, time, the\n"
    "share of zero gradients; the loss scale and skipped steps with loss scaling), and on\n"
    "a terminal a live\n"
    "progress line (step, running loss, examples/s, ETA); elsewhere (a file, a pipe) the\n"
    "lines go out one at a time as they are printed. A loss that is not finite stops\n"
    "training with exit 1; the last checkpoint stays as it was. The folders of --out,\n"
    "--log and --checkpoint are checked before any work; a --checkpoint DIR this run made\n"
    "is removed again when the run fails before writing into it.\n"
    "Exit status: 0 ok, 1 training failed, 2 bad usage or input.\n";

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

/* One data input: the model's input, the file's array [N, ...] and the batch buffer. */
typedef struct data_in {
  int input;
  eg_tensor_desc d;
  char *where; /* the file it came from, for messages ("data/target.npy", "d.npz[target.npy]") */
  eg_tensor file;
  size_t row_file, row_batch; /* bytes per example */
  eg_tensor batch;
} data_in;

/* Examples for one model's data inputs, fed in batches of that model's batch size. */
typedef struct dataset {
  data_in *in;
  int n_in;
  int64_t n_examples, batch, steps; /* steps: n_examples / batch */
  int64_t *perm;                    /* the order fed */
} dataset;

typedef struct trainer {
  train_args a;
  eg_model *m, *eval_m;
  eg_runtime *rt, *eval_rt;
  eg_optimizer *opt;
  dataset train, val;
  uint64_t data_hash;
  int eval_loss_at, eval_out_at; /* outputs "loss" and "output" of the eval graph; -1 none */
  FILE *log;
  char *ckpt_path;
  bool ckpt_made; /* --checkpoint DIR was created by this run: removed again if left empty */
  /* position: epochs done, steps done in the current epoch, and its loss sum so far */
  long epoch;
  int64_t step;
  double loss_sum;
  int64_t ckpt_written_step; /* global step of the last checkpoint written or read; -1 none */
  /* the step's random inputs (Dropout masks): drawn afresh before every step from one
   * splitmix64 stream, whose state the checkpoint keeps */
  struct random_in {
    const char *name; /* the model's input (valid while tr->m lives) */
    double p;
    eg_tensor mask;
  } *rnd;
  int n_rnd;
  uint64_t rng;
  char note[1200];
  int loss_at;
  int64_t grad_elems, zero_grads; /* this epoch's gradient elements, and those exactly 0 */
} trainer;

/* ---- arguments ---- */

static int num_arg(const char *opt, const char *v, double lo, double *out) {
  char *end = NULL;
  errno = 0;
  double x = strtod(v, &end);
  if (!end || end == v || *end || errno || !isfinite(x) || x < lo)
    return fail(EXIT_USAGE, "train: %s %s: expected a finite number >= %g", opt, v, lo);
  *out = x;
  return 0;
}

static int int_arg(const char *opt, const char *v, long lo, long hi, long *out) {
  char *end = NULL;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (!end || end == v || *end || errno || x < lo || x > hi)
    return fail(EXIT_USAGE, "train: %s %s: expected an integer in [%ld, %ld]", opt, v, lo, hi);
  *out = x;
  return 0;
}

static int pair_arg(const char *opt, const char *v, double *a, double *b) {
  char *end = NULL;
  errno = 0;
  *a = strtod(v, &end);
  bool ok = end && end != v && *end == ',' && isfinite(*a);
  const char *second = ok ? end + 1 : v;
  if (ok) *b = strtod(second, &end);
  ok = ok && end != second && !*end && !errno && isfinite(*b);
  return ok ? 0 : fail(EXIT_USAGE, "train: %s %s: expected two numbers A,B (e.g. 0.9,0.999)",
                       opt, v);
}

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

static int parse_train_args(int argc, char **argv, train_args *a) {
  eg_optimizer_kind kind = EG_OPTIMIZER_SGD;
  double lr = -1, momentum = 0, dampening = 0, wd = 0, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  bool nesterov = false, have_betas = false, have_eps = false, have_sgd = false;
  a->shuffle = true;
  a->gamma = 0.1;
  a->lr_step = 1;
  a->std = 1;
  int rc = 0;
  for (int i = 0; i < argc && rc == 0; i++) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    static const char *const valued[] = {
        "--data", "--init", "--eval", "--val-data", "--val-split", "--epochs", "--soc", "--optimizer", "--lr", "--momentum",
        "--dampening",
        "--weight-decay", "--betas", "--eps", "--lr-schedule", "--lr-step", "--lr-gamma",
        "--seed", "--normalize", "--checkpoint", "--checkpoint-every", "--out", "--log",
        "--threads", "--max-memory", "--precision", "--loss-scale", "--loss-scale-interval"};
    bool needs = false;
    for (size_t k = 0; k < sizeof valued / sizeof *valued; k++) needs |= strcmp(o, valued[k]) == 0;
    if (needs && !v) return fail(EXIT_USAGE, "train: %s needs a value", o);
    if (needs) i++;
    long n;
    if (is_help(o)) {
      fputs(usage_train, stdout);
      return -1;
    } else if (strcmp(o, "--data") == 0) a->data = v;
    else if (strcmp(o, "--init") == 0) a->init = v;
    else if (strcmp(o, "--eval") == 0) a->eval = v;
    else if (strcmp(o, "--val-data") == 0) a->val_data = v;
    else if (strcmp(o, "--val-split") == 0) {
      rc = num_arg(o, v, 0, &a->val_split);
      if (rc == 0 && !(a->val_split > 0 && a->val_split < 1))
        rc = fail(EXIT_USAGE, "train: --val-split %s: expected a fraction in (0, 1)", v);
    }
    else if (strcmp(o, "--epochs") == 0) rc = int_arg(o, v, 1, 1000000, &a->epochs);
    else if (strcmp(o, "--soc") == 0) a->compile.soc = v;
    else if (strcmp(o, "--optimizer") == 0) {
      if (strcmp(v, "sgd") == 0) kind = EG_OPTIMIZER_SGD;
      else if (strcmp(v, "adam") == 0) kind = EG_OPTIMIZER_ADAM;
      else if (strcmp(v, "adamw") == 0) kind = EG_OPTIMIZER_ADAMW;
      else rc = fail(EXIT_USAGE, "train: --optimizer %s: expected sgd, adam or adamw", v);
    } else if (strcmp(o, "--lr") == 0) rc = num_arg(o, v, 0, &lr);
    else if (strcmp(o, "--momentum") == 0) rc = num_arg(o, v, 0, &momentum), have_sgd = true;
    else if (strcmp(o, "--dampening") == 0) rc = num_arg(o, v, -HUGE_VAL, &dampening), have_sgd = true;
    else if (strcmp(o, "--nesterov") == 0) nesterov = have_sgd = true;
    else if (strcmp(o, "--weight-decay") == 0) rc = num_arg(o, v, 0, &wd), a->have_wd = true;
    else if (strcmp(o, "--betas") == 0) rc = pair_arg(o, v, &b1, &b2), have_betas = true;
    else if (strcmp(o, "--eps") == 0) rc = num_arg(o, v, 0, &eps), have_eps = true;
    else if (strcmp(o, "--lr-schedule") == 0) {
      if (strcmp(v, "constant") == 0) a->schedule = SCHED_CONSTANT;
      else if (strcmp(v, "step") == 0) a->schedule = SCHED_STEP;
      else if (strcmp(v, "cosine") == 0) a->schedule = SCHED_COSINE;
      else rc = fail(EXIT_USAGE, "train: --lr-schedule %s: expected constant, step or cosine", v);
    } else if (strcmp(o, "--lr-step") == 0) rc = int_arg(o, v, 1, 1000000, &a->lr_step);
    else if (strcmp(o, "--lr-gamma") == 0) rc = num_arg(o, v, 0, &a->gamma);
    else if (strcmp(o, "--no-shuffle") == 0) a->shuffle = false;
    else if (strcmp(o, "--shuffle") == 0) a->shuffle = true;
    else if (strcmp(o, "--seed") == 0) {
      char *end = NULL;
      errno = 0;
      unsigned long long s = v[0] >= '0' && v[0] <= '9' ? strtoull(v, &end, 10) : 0;
      if (!end || *end || errno) rc = fail(EXIT_USAGE, "train: --seed %s: expected an integer "
                                           "in [0, 2^64)", v);
      a->seed = s;
    } else if (strcmp(o, "--normalize") == 0) {
      rc = pair_arg(o, v, &a->mean, &a->std);
      if (rc == 0 && !(a->std > 0))
        rc = fail(EXIT_USAGE, "train: --normalize %s: STD (%g) must be > 0", v, a->std);
      a->normalize = true;
    } else if (strcmp(o, "--checkpoint") == 0) a->ckpt_dir = v;
    else if (strcmp(o, "--checkpoint-every") == 0) rc = int_arg(o, v, 1, 1L << 40, &a->ckpt_every);
    else if (strcmp(o, "--resume") == 0) a->resume = true;
    else if (strcmp(o, "--out") == 0) a->out = v;
    else if (strcmp(o, "--log") == 0) a->log = v;
    else if (strcmp(o, "--threads") == 0) {
      rc = int_arg(o, v, 1, 1024, &n);
      a->rt_opt.num_threads = (int)n;
    } else if (strcmp(o, "--precision") == 0) { /* overrides a program's; sets a --soc one's */
      rc = parse_precision("train", v, &a->rt_opt.precision);
      a->compile.precision = a->rt_opt.precision;
    } else if (strcmp(o, "--max-memory") == 0) {
      a->max_memory_arg = v;
      rc = parse_size("train", v, &a->rt_opt.max_memory_bytes);
    } else if (strcmp(o, "--loss-scale") == 0) a->loss_scale = v;
    else if (strcmp(o, "--loss-scale-interval") == 0)
      rc = int_arg(o, v, 1, INT32_MAX, &a->loss_scale_interval);
    else if (strcmp(o, "--quiet") == 0 || strcmp(o, "-q") == 0) a->quiet = true;
    else if (o[0] == '-') rc = fail(EXIT_USAGE, "train: option %s unknown (see edgegrad train "
                                    "--help)", o);
    else if (a->model) rc = fail(EXIT_USAGE, "train: a second model %s: give one MODEL", o);
    else a->model = o;
  }
  if (rc) return rc;
  if (!a->model) return fail(EXIT_USAGE, "train: no model given (see edgegrad train --help)");
  if (!a->data) return fail(EXIT_USAGE, "train: --data DATA missing: the examples to train on "
                            "(a folder of <input>.npy or an .npz archive)");
  if (!a->init && !a->resume)
    return fail(EXIT_USAGE, "train: --init missing: the first values of the parameters and "
                "buffers (WEIGHTS.safetensors, or a folder of <input>.npy)");
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
  if (kind == EG_OPTIMIZER_SGD && (have_betas || have_eps))
    return fail(EXIT_USAGE, "train: --betas/--eps are options of adam and adamw, not of sgd");
  if (kind != EG_OPTIMIZER_SGD && have_sgd)
    return fail(EXIT_USAGE, "train: --momentum/--dampening/--nesterov are options of sgd, not of "
                "%s", kind == EG_OPTIMIZER_ADAM ? "adam" : "adamw");
  a->opt = eg_optimizer_defaults(kind);
  if (lr >= 0) a->opt.lr = lr;
  if (a->have_wd) a->opt.weight_decay = wd;
  a->opt.momentum = momentum;
  a->opt.dampening = dampening;
  a->opt.nesterov = nesterov;
  a->opt.beta1 = b1;
  a->opt.beta2 = b2;
  a->opt.eps = eps;
  if (nesterov && (momentum <= 0 || dampening != 0))
    return fail(EXIT_USAGE, "train: --nesterov (momentum %g, dampening %g): Nesterov momentum "
                "needs --momentum > 0 and dampening 0", momentum, dampening);
  if (b1 < 0 || b1 >= 1 || b2 < 0 || b2 >= 1)
    return fail(EXIT_USAGE, "train: --betas %g,%g: each must be in [0, 1)", b1, b2);
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

/* ---- the data set ---- */

/* A parameter (an output grad_<name>) or a state buffer (new_<name>). */
static bool is_state(const eg_model *m, const char *name) {
  return has_output(m, "grad_", name) || has_output(m, "new_", name);
}

/* An input a training loop draws itself (a Dropout mask): no data file feeds it. */
static bool is_random(const eg_model *m, int i) {
  eg_tensor_desc d;
  return eg_model_input(m, i, &d) == EG_OK && d.random != EG_RANDOM_NONE;
}

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

/* Checks one loaded array against its input: shape, dtype, values. */
static int check_array(const trainer *tr, const data_in *x, const char *path) {
  const eg_tensor *f = &x->file, *want = &x->d.tensor;
  char got_s[256], want_s[256];
  format_shape(got_s, sizeof got_s, f);
  eg_tensor ex = *want;
  ex.rank = want->rank - 1;
  memmove(ex.shape, want->shape + 1, sizeof(int64_t) * (size_t)ex.rank);
  format_shape(want_s, sizeof want_s, &ex);
  bool same = f->rank == want->rank;
  for (int d = 1; same && d < f->rank; d++) same = f->shape[d] == want->shape[d];
  if (!same)
    return fail(EXIT_USAGE, "train: data %s: shape %s: each example must be %s (input %s without "
                "its batch axis of %lld), after a first axis of examples", path, got_s, want_s,
                x->d.name, (long long)want->shape[0]);
  const eg_dtype fd = f->dtype, md = want->dtype;
  bool ok = fd == md || (md == EG_DTYPE_INT64 && is_int(fd)) ||
            (md == EG_DTYPE_FLOAT32 && fd == EG_DTYPE_UINT8 && tr->a.normalize);
  if (!ok && md == EG_DTYPE_FLOAT32 && fd == EG_DTYPE_UINT8)
    return fail(EXIT_USAGE, "train: data %s: dtype uint8 for float32 input %s: give --normalize "
                "MEAN,STD (x/255 - MEAN) / STD", path, x->d.name);
  if (!ok)
    return fail(EXIT_USAGE, "train: data %s: dtype %s for input %s of dtype %s: give %s%s", path,
                eg_dtype_name(fd), x->d.name, eg_dtype_name(md), eg_dtype_name(md),
                md == EG_DTYPE_INT64 ? " (or another integer dtype)"
                : md == EG_DTYPE_FLOAT32 ? " (or uint8 with --normalize)" : "");
  const int64_t n = eg_tensor_numel(f);
  for (int64_t k = 0; k < n; k++) {
    double v = fd == EG_DTYPE_FLOAT32 ? ((const float *)f->data)[k]
               : fd == EG_DTYPE_FLOAT64 ? ((const double *)f->data)[k] : 0.0;
    if (!isfinite(v))
      return fail(EXIT_USAGE, "train: data %s: element %lld (example %lld) is %g: data must be "
                  "finite", path, (long long)k, (long long)(k / (n / f->shape[0])), v);
    if (md == EG_DTYPE_INT64 && int_at(f, k) < 0)
      return fail(EXIT_USAGE, "train: data %s: label %lld at example %lld: class labels are >= 0",
                  path, (long long)int_at(f, k), (long long)k);
  }
  return 0;
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
  return h;
}

/* A data input of model `m` (an input that is not a parameter or buffer of the training step),
 * with x->file loaded from `path`: checked, and its batch buffer made. */
static int attach(trainer *tr, dataset *ds, data_in *x, const char *path) {
  int rc = check_array(tr, x, path);
  const char *first = ds->n_in ? ds->in[0].d.name : NULL;
  if (rc == 0 && first && x->file.shape[0] != ds->n_examples)
    rc = fail(EXIT_USAGE, "train: data %s: %lld examples, %s has %lld: every array holds the "
              "same examples", path, (long long)x->file.shape[0], first,
              (long long)ds->n_examples);
  if (rc == 0 && first && x->d.tensor.shape[0] != ds->batch)
    rc = fail(EXIT_USAGE, "train: input %s: batch axis %lld, input %s's is %lld: data inputs "
              "share their first axis", x->d.name, (long long)x->d.tensor.shape[0], first,
              (long long)ds->batch);
  if (rc) return rc;
  ds->n_in++;
  ds->n_examples = x->file.shape[0];
  ds->batch = x->d.tensor.shape[0];
  const int64_t per = ds->n_examples ? eg_tensor_numel(&x->file) / ds->n_examples : 0;
  x->row_file = (size_t)per * eg_dtype_size(x->file.dtype);
  x->row_batch = (size_t)per * eg_dtype_size(x->d.tensor.dtype);
  x->batch = x->d.tensor;
  x->batch.data = malloc(x->row_batch * (size_t)ds->batch + 1);
  x->where = strdup(path);
  if (!x->batch.data || !x->where) return fail(EXIT_FAIL, "train: out of memory");
  return 0;
}

/* The order that holds back the validation examples of --val-split: seeded like an epoch's. */
static void permute(int64_t *perm, int64_t n, bool shuffle, uint64_t seed, uint64_t e);

/* Every array of `ds` (examples n), its batch counts and order buffer; `what` names it. */
static int finish_set(dataset *ds, const char *what, const char *dir) {
  if (ds->n_in == 0)
    return fail(EXIT_USAGE, "train: %s: every input is a parameter or buffer: no data input to "
                "feed", what);
  ds->steps = ds->batch ? ds->n_examples / ds->batch : 0;
  if (ds->steps == 0)
    return fail(EXIT_USAGE, "train: %s %s: %lld examples, fewer than the graph's batch size "
                "%lld: not one batch", what, dir, (long long)ds->n_examples, (long long)ds->batch);
  if (!(ds->perm = malloc(sizeof(int64_t) * (size_t)ds->n_examples)))
    return fail(EXIT_FAIL, "train: out of memory");
  for (int64_t i = 0; i < ds->n_examples; i++) ds->perm[i] = i;
  return 0;
}

/* Loads array <input> of `src` (a folder of .npy files or an .npz archive: arrays.h) for every
 * data input of `m` into `ds`. `opt` names the option. */
static int load_set(trainer *tr, const eg_model *m, const char *src, const char *opt,
                    dataset *ds) {
  const int n = eg_model_num_inputs(m);
  if (!(ds->in = calloc((size_t)n + 1, sizeof *ds->in)))
    return fail(EXIT_FAIL, "train: out of memory");
  arrays *arr; /* the data takes its bytes from --max-memory: the runtimes get what is left */
  int rc = arrays_open(src, opt, &tr->a.rt_opt.max_memory_bytes, &arr);
  for (int i = 0; rc == 0 && i < n; i++) {
    data_in *x = &ds->in[ds->n_in];
    eg_model_input(m, i, &x->d);
    if (is_state(tr->m, x->d.name) || is_random(m, i)) continue;
    x->input = i;
    if (x->d.tensor.rank < 1) {
      rc = fail(EXIT_USAGE, "train: input %s: a data input needs a batch axis", x->d.name);
      break;
    }
    char why[400], where[1200];
    snprintf(why, sizeof why, "input %s (%s) needs its examples there", x->d.name,
             eg_dtype_name(x->d.tensor.dtype));
    arrays_where(arr, x->d.name, where, sizeof where);
    rc = arrays_get(arr, x->d.name, why, &x->file);
    if (rc == 0) rc = attach(tr, ds, x, where);
    if (rc) eg_tensor_free(&x->file); /* not counted in ds->n_in: not freed by cleanup */
  }
  arrays_close(arr);
  return rc ? rc : finish_set(ds, opt, src);
}

/* A tensor of `rows` rows of `src` (rows perm[from..from+rows)). */
static int take_rows(const eg_tensor *src, size_t row, const int64_t *perm, int64_t from,
                     int64_t rows, eg_tensor *out) {
  *out = *src;
  out->shape[0] = rows;
  if (!(out->data = malloc(row * (size_t)rows + 1))) return fail(EXIT_FAIL, "train: out of memory");
  for (int64_t r = 0; r < rows; r++)
    memcpy((unsigned char *)out->data + (size_t)r * row,
           (const unsigned char *)src->data + (size_t)perm[from + r] * row, row);
  return 0;
}

/* --val-split F: the last round(F*N) examples of a seeded order (file order with
 * --no-shuffle) become the validation set of the eval graph's data inputs (same names); the
 * training set keeps the rest, in the order they had. */
static int split_val(trainer *tr) {
  dataset *t = &tr->train, *v = &tr->val;
  const int64_t n = t->n_examples, k = (int64_t)llround(tr->a.val_split * (double)n);
  if (k < 1 || k >= n)
    return fail(EXIT_USAGE, "train: --val-split %g of %lld examples holds back %lld: it must "
                "leave at least one for each side", tr->a.val_split, (long long)n, (long long)k);
  int64_t *order = malloc(sizeof(int64_t) * (size_t)n);
  const int ne = eg_model_num_inputs(tr->eval_m);
  v->in = calloc((size_t)ne + 1, sizeof *v->in);
  if (!order || !v->in) {
    free(order);
    return fail(EXIT_FAIL, "train: out of memory");
  }
  permute(order, n, tr->a.shuffle, tr->a.seed, UINT64_MAX);
  /* keep the training examples in file order: sort the first n-k of the order */
  bool *held = calloc((size_t)n, 1);
  int64_t *keep = malloc(sizeof(int64_t) * (size_t)n);
  int rc = held && keep ? 0 : fail(EXIT_FAIL, "train: out of memory");
  for (int64_t i = n - k; rc == 0 && i < n; i++) held[order[i]] = true;
  int64_t nk = 0;
  for (int64_t i = 0; rc == 0 && i < n; i++)
    if (!held[i]) keep[nk++] = i;
  for (int i = 0; rc == 0 && i < ne; i++) {
    data_in *x = &v->in[v->n_in];
    eg_model_input(tr->eval_m, i, &x->d);
    if (is_state(tr->m, x->d.name) || is_random(tr->eval_m, i)) continue;
    x->input = i;
    const data_in *src = NULL;
    for (int j = 0; j < t->n_in; j++)
      if (strcmp(t->in[j].d.name, x->d.name) == 0) src = &t->in[j];
    if (!src || x->d.tensor.rank < 1) {
      rc = fail(EXIT_USAGE, "train: --val-split: eval input %s: %s", x->d.name,
                src ? "a data input needs a batch axis"
                    : "not a data input of the training step (give --val-data DIR)");
      break;
    }
    rc = take_rows(&src->file, src->row_file, order, n - k, k, &x->file);
    if (rc == 0) rc = attach(tr, v, x, "(held back by --val-split)");
    if (rc) eg_tensor_free(&x->file);
  }
  for (int j = 0; rc == 0 && j < t->n_in; j++) {
    eg_tensor kept;
    rc = take_rows(&t->in[j].file, t->in[j].row_file, keep, 0, nk, &kept);
    if (rc == 0) {
      eg_tensor_free(&t->in[j].file);
      t->in[j].file = kept;
    }
  }
  if (rc == 0) {
    t->n_examples = nk;
    free(t->perm);
    t->perm = NULL;
    rc = finish_set(t, "--data", tr->a.data);
  }
  if (rc == 0) rc = finish_set(v, "--val-split of", tr->a.data);
  free(order);
  free(held);
  free(keep);
  return rc;
}

static int load_data(trainer *tr) {
  int rc = load_set(tr, tr->m, tr->a.data, "--data", &tr->train);
  if (rc) return rc;
  tr->data_hash = 0xcbf29ce484222325ULL;
  for (int k = 0; k < tr->train.n_in; k++) {
    const data_in *x = &tr->train.in[k];
    tr->data_hash = fnv1a(tr->data_hash, x->d.name, strlen(x->d.name) + 1);
    tr->data_hash = fnv1a(tr->data_hash, x->file.data,
                          x->row_file * (size_t)tr->train.n_examples);
  }
  if (tr->a.val_split > 0) return split_val(tr);
  if (tr->a.val_data) return load_set(tr, tr->eval_m, tr->a.val_data, "--val-data", &tr->val);
  return 0;
}

/* splitmix64: the example order of epoch `e` from (seed, e) alone, and the Dropout masks. */
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
 * (in the model's order), each takes the next number z of the splitmix64 stream tr->rng and is
 * 1 where (z >> 40) < p * 2^24 (a 24-bit uniform below p), else 0. The stream starts at
 * seed ^ EG_TRAIN_RNG_SALT and goes on across steps and epochs; a checkpoint saves it. */
#define EG_TRAIN_RNG_SALT 0x6a09e667f3bcc909ULL
static int draw_masks(trainer *tr) {
  for (int k = 0; k < tr->n_rnd; k++) {
    struct random_in *r = &tr->rnd[k];
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
    eg_status s = eg_runtime_set_input(tr->rt, r->name, &r->mask);
    if (s != EG_OK) return fail_status(s);
  }
  return 0;
}

/* The model's random inputs (eg_tensor_desc.random), each with a mask buffer; one whose
 * probability is not known (it came from a tensor) cannot be drawn: refused. */
static int setup_random(trainer *tr) {
  const int n = eg_model_num_inputs(tr->m);
  if (!(tr->rnd = calloc((size_t)n + 1, sizeof *tr->rnd))) return fail(EXIT_FAIL, "train: out of memory");
  tr->rng = tr->a.seed ^ EG_TRAIN_RNG_SALT;
  for (int i = 0; i < n; i++) {
    eg_tensor_desc d;
    eg_model_input(tr->m, i, &d);
    if (d.random == EG_RANDOM_NONE) continue;
    if (isnan(d.random_p))
      return fail(EXIT_USAGE, "train: input %s: a Bernoulli mask whose probability the traced "
                  "step took from a tensor: train draws masks of a known p (nn.Dropout's)",
                  d.name);
    struct random_in *r = &tr->rnd[tr->n_rnd];
    r->name = d.name;
    r->p = d.random_p;
    r->mask = d.tensor;
    const size_t bytes = (size_t)eg_tensor_numel(&d.tensor) * eg_dtype_size(d.tensor.dtype);
    if (!(r->mask.data = malloc(bytes + 1))) return fail(EXIT_FAIL, "train: out of memory");
    tr->n_rnd++;
  }
  return 0;
}

/* Fills every data input's batch `step` of `ds`'s order and sets it in `rt`. */
static int feed(const trainer *tr, const dataset *ds, eg_runtime *rt, int64_t step) {
  for (int k = 0; k < ds->n_in; k++) {
    data_in *x = &ds->in[k];
    const eg_dtype fd = x->file.dtype, md = x->d.tensor.dtype;
    const size_t per = x->row_batch / eg_dtype_size(md);
    for (int64_t b = 0; b < ds->batch; b++) {
      const int64_t ex = ds->perm[step * ds->batch + b];
      const unsigned char *src = (const unsigned char *)x->file.data + (size_t)ex * x->row_file;
      unsigned char *dst = (unsigned char *)x->batch.data + (size_t)b * x->row_batch;
      if (fd == md) {
        memcpy(dst, src, x->row_batch);
      } else if (md == EG_DTYPE_FLOAT32) { /* uint8 with --normalize */
        const float mean = (float)tr->a.mean, inv = (float)(1.0 / tr->a.std);
        for (size_t q = 0; q < per; q++) ((float *)dst)[q] = ((float)src[q] / 255.0f - mean) * inv;
      } else { /* integer labels into int64 */
        eg_tensor row = {.dtype = fd, .rank = 1, .shape = {(int64_t)per}, .data = (void *)src};
        for (size_t q = 0; q < per; q++) ((int64_t *)dst)[q] = int_at(&row, (int64_t)q);
      }
    }
    eg_status s = eg_runtime_set_input(rt, x->d.name, &x->batch);
    if (s != EG_OK) return fail_status(s);
  }
  return 0;
}

/* The labels of batch `step` of the val set (its rank-1 int64 data input, fed last), or NULL. */
static const int64_t *val_labels(const trainer *tr) {
  for (int k = 0; k < tr->val.n_in; k++) {
    const eg_tensor *b = &tr->val.in[k].batch;
    if (b->dtype == EG_DTYPE_INT64 && b->rank == 1) return b->data;
  }
  return NULL;
}

/* The eval graph over the validation set, with the training runtime's current parameters and
 * buffers: mean loss over its batches, and top-1 accuracy where the graph's output is
 * [batch, classes] and the set has integer labels (else NAN). */
static int evaluate(trainer *tr, double *loss, double *acc) {
  for (int i = 0; i < eg_model_num_inputs(tr->eval_m); i++) {
    eg_tensor_desc d;
    eg_tensor t;
    eg_model_input(tr->eval_m, i, &d);
    if (!is_state(tr->m, d.name)) continue;
    int j = 0;
    while (j < eg_model_num_inputs(tr->m)) {
      eg_tensor_desc dj;
      eg_model_input(tr->m, j, &dj);
      if (strcmp(dj.name, d.name) == 0) break;
      j++;
    }
    eg_status s = eg_runtime_input(tr->rt, j, &t);
    if (s == EG_OK) s = eg_runtime_set_input(tr->eval_rt, d.name, &t);
    if (s != EG_OK) return fail_status(s);
  }
  double sum = 0;
  int64_t right = 0, seen = 0;
  for (int64_t step = 0; step < tr->val.steps; step++) {
    int rc = feed(tr, &tr->val, tr->eval_rt, step);
    if (rc) return rc;
    eg_status s = eg_runtime_run(tr->eval_rt);
    eg_tensor lt, out;
    if (s == EG_OK) s = eg_runtime_output(tr->eval_rt, tr->eval_loss_at, &lt);
    if (s != EG_OK) return fail_status(s);
    sum += lt.dtype == EG_DTYPE_FLOAT32 ? *(const float *)lt.data : *(const double *)lt.data;
    const int64_t *labels = val_labels(tr);
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
  *loss = sum / (double)tr->val.steps;
  *acc = seen ? (double)right / (double)seen : NAN;
  return 0;
}

/* ---- learning rate ---- */

static double lr_at(const train_args *a, long e) {
  const double lr = a->opt.lr;
  if (a->schedule == SCHED_STEP) return lr * pow(a->gamma, (double)(e / a->lr_step));
  if (a->schedule == SCHED_COSINE)
    return lr * (1.0 + cos(3.14159265358979323846 * (double)e / (double)a->epochs)) / 2.0;
  return lr;
}

/* ---- checkpoints ---- */

/* Steps run: the optimizer's, and those loss scaling skipped (their gradients overflowed). */
static int64_t global_step(const trainer *tr) {
  return eg_optimizer_steps(tr->opt) + eg_optimizer_skipped_steps(tr->opt);
}

static const char *kind_name(eg_optimizer_kind k) {
  return k == EG_OPTIMIZER_SGD ? "sgd" : k == EG_OPTIMIZER_ADAM ? "adam" : "adamw";
}

/* Everything a resumed run must share with the one that wrote the checkpoint, as "key=value"
 * fields separated by spaces (numbers in %.17g: exact for doubles). */
static void run_signature(const trainer *tr, char *buf, size_t size) {
  const train_args *a = &tr->a;
  const eg_optimizer_options *o = &a->opt;
  static const char *const sched[] = {"constant", "step", "cosine"};
  int n = snprintf(buf, size, "optimizer=%s lr=%.17g weight_decay=%.17g", kind_name(o->kind),
                   o->lr, o->weight_decay);
  if (o->kind == EG_OPTIMIZER_SGD)
    n += snprintf(buf + n, size - (size_t)n, " momentum=%.17g dampening=%.17g nesterov=%d",
                  o->momentum, o->dampening, o->nesterov);
  else
    n += snprintf(buf + n, size - (size_t)n, " betas=%.17g,%.17g eps=%.17g", o->beta1, o->beta2,
                  o->eps);
  if (o->loss_scale == EG_LOSS_SCALE_STATIC)
    n += snprintf(buf + n, size - (size_t)n, " loss_scale=%.17g", o->init_scale);
  if (o->loss_scale == EG_LOSS_SCALE_DYNAMIC)
    n += snprintf(buf + n, size - (size_t)n, " loss_scale=dynamic growth_interval=%lld",
                  (long long)(o->growth_interval ? o->growth_interval : 2000));
  n += snprintf(buf + n, size - (size_t)n, " lr_schedule=%s", sched[a->schedule]);
  if (a->schedule == SCHED_STEP)
    n += snprintf(buf + n, size - (size_t)n, " lr_step=%ld lr_gamma=%.17g", a->lr_step, a->gamma);
  if (a->schedule == SCHED_COSINE) n += snprintf(buf + n, size - (size_t)n, " epochs=%ld", a->epochs);
  n += snprintf(buf + n, size - (size_t)n, " shuffle=%d", a->shuffle);
  if (a->shuffle || tr->n_rnd) n += snprintf(buf + n, size - (size_t)n, " seed=%" PRIu64, a->seed);
  if (a->normalize)
    n += snprintf(buf + n, size - (size_t)n, " normalize=%.17g,%.17g", a->mean, a->std);
  if (a->val_split > 0) n += snprintf(buf + n, size - (size_t)n, " val_split=%.17g", a->val_split);
  snprintf(buf + n, size - (size_t)n, " batch=%lld examples=%lld data_hash=%016" PRIx64,
           (long long)tr->train.batch, (long long)tr->train.n_examples, tr->data_hash);
}

/* The first field of two signatures that differs, as "KEY: A in the checkpoint, B here". */
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

/* ---- safetensors files: the library's codec, with the messages of a command ---- */

/* The library's last message without its leading "<path>: ", for a message that names the file
 * as `what` (the option and the path) already. */
static const char *lib_message(const char *path) {
  const char *m = eg_last_error();
  const size_t n = strlen(path);
  return strncmp(m, path, n) == 0 && m[n] == ':' && m[n + 1] == ' ' ? m + n + 2 : m;
}

/* eg_safetensors_load of `path` for `what` (e.g. "train: --init W.safetensors"). 0, or the exit
 * status after a one-line message: "<what>: not a safetensors file edgegrad can read (<why>)"
 * for a malformed one, exit 2 as for any input; out of memory exits 1. */
static int st_load(const char *path, const char *what, eg_safetensors **out) {
  const eg_status s = eg_safetensors_load(path, out);
  if (s == EG_OK) return 0;
  if (s == EG_ERR_FORMAT || s == EG_ERR_UNSUPPORTED)
    return fail(EXIT_USAGE, "%s: not a safetensors file edgegrad can read (%s)", what,
                lib_message(path));
  return fail(s == EG_ERR_NOMEM ? EXIT_FAIL : EXIT_USAGE, "%s: %s", what, lib_message(path));
}

/* eg_safetensors_save to `path` for `what`. 0, or the exit status after the message. */
static int st_save(const char *path, const char *what, const eg_safetensors_entry *e, int n,
                   const eg_safetensors_meta *meta, int n_meta) {
  const eg_status s = eg_safetensors_save(path, e, n, meta, n_meta);
  if (s == EG_OK) return 0;
  return fail(s == EG_ERR_NOMEM ? EXIT_FAIL : EXIT_USAGE, "%s: %s", what, lib_message(path));
}

/* What a checkpoint holds: every parameter and buffer input as "input/<name>" (the runtime's
 * value; `with_values` false: the model's dtype and shape only, data NULL, for a runtime whose
 * inputs are not set yet), then the optimizer's state as "optimizer/<state>". */
static int state_entries(trainer *tr, bool with_values, eg_safetensors_entry **out, int *n_out,
                         char ***names) {
  const int ni = eg_model_num_inputs(tr->m), ns = eg_optimizer_num_states(tr->opt);
  eg_safetensors_entry *e = calloc((size_t)(ni + ns) + 1, sizeof *e);
  char **nm = calloc((size_t)(ni + ns) + 1, sizeof *nm);
  int n = 0;
  if (!e || !nm) goto oom;
  for (int i = 0; i < ni; i++) {
    eg_tensor_desc d;
    eg_model_input(tr->m, i, &d);
    if (!is_state(tr->m, d.name)) continue;
    e[n].t = d.tensor;
    if (with_values && eg_runtime_input(tr->rt, i, &e[n].t) != EG_OK) continue;
    if (!(nm[n] = outdir_join("input", d.name, ""))) goto oom;
    e[n].name = nm[n];
    n++;
  }
  for (int k = 0; k < ns; k++) {
    const char *name;
    eg_optimizer_state(tr->opt, k, &name, &e[n].t);
    if (!(nm[n] = outdir_join("optimizer", name, ""))) goto oom;
    e[n].name = nm[n];
    n++;
  }
  *out = e;
  *n_out = n;
  *names = nm;
  return 0;
oom:
  for (int k = 0; nm && k < n; k++) free(nm[k]);
  free(nm);
  free(e);
  return fail(EXIT_FAIL, "train: out of memory");
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

/* The checksum of a checkpoint, as 8 hex digits into out: zlib's CRC-32 over every tensor (name,
 * dtype, shape and bytes; by name, so that it does not depend on the order a JSON reader gives
 * the header's entries in) and every metadata value of ckpt_keys (key and value), so that a
 * changed byte anywhere resume reads is found before any of it is used. 0 or the exit status. */
static int ckpt_checksum(const eg_safetensors_entry *e, int n, const char *const *values,
                         char out[16]) {
  const eg_safetensors_entry **order = malloc(sizeof *order * ((size_t)n + 1));
  if (!order) return fail(EXIT_FAIL, "train: out of memory");
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
  return 0;
}

static int write_checkpoint(trainer *tr) {
  eg_safetensors_entry *e;
  char **nm;
  int n, rc = state_entries(tr, true, &e, &n, &nm);
  if (rc) return rc;
  char sig[1024], epoch[32], step[32], gstep[32], loss[64], rng[32];
  run_signature(tr, sig, sizeof sig);
  snprintf(epoch, sizeof epoch, "%ld", tr->epoch);
  snprintf(step, sizeof step, "%lld", (long long)tr->step);
  snprintf(gstep, sizeof gstep, "%lld", (long long)global_step(tr));
  snprintf(loss, sizeof loss, "%a", tr->loss_sum);
  snprintf(rng, sizeof rng, "%016" PRIx64, tr->rng);
  const char *values[N_CKPT_KEYS] = {"edgegrad.checkpoint", "3", sig, epoch, step, gstep, loss,
                                     rng};
  eg_safetensors_meta meta[N_CKPT_KEYS + 1];
  for (int k = 0; k < N_CKPT_KEYS; k++)
    meta[k] = (eg_safetensors_meta){ckpt_keys[k], values[k]};
  char sum[16];
  rc = ckpt_checksum(e, n, values, sum);
  meta[N_CKPT_KEYS] = (eg_safetensors_meta){"checksum", sum};
  char what[1100];
  snprintf(what, sizeof what, "train: checkpoint %s", tr->ckpt_path);
  if (rc == 0) rc = st_save(tr->ckpt_path, what, e, n, meta, N_CKPT_KEYS + 1);
  if (rc == 0) tr->ckpt_written_step = global_step(tr);
  free_names(nm, n);
  free(e);
  return rc;
}

/* A count of the checkpoint's metadata: decimal digits only, at most INT64_MAX. */
static int parse_count(const eg_safetensors *f, const char *key, int64_t *out) {
  const char *v = eg_safetensors_meta_get(f, key);
  const size_t len = v ? strlen(v) : 0;
  if (len == 0 || strspn(v, "0123456789") != len) return -1;
  errno = 0;
  const long long x = strtoll(v, NULL, 10);
  if (errno) return -1;
  *out = x;
  return 0;
}

/* The checkpoint's checksum against its contents (ckpt_checksum). Version 2 (before the
 * checksum) has none and is read as it is; a file that carries one is always checked. */
static int check_checksum(const eg_safetensors *f, const char *what) {
  const char *sum = eg_safetensors_meta_get(f, "checksum");
  const char *version = eg_safetensors_meta_get(f, "version");
  if (!sum && version && strcmp(version, "2") == 0) return 0;
  const char *values[N_CKPT_KEYS];
  for (int k = 0; k < N_CKPT_KEYS; k++) values[k] = eg_safetensors_meta_get(f, ckpt_keys[k]);
  char want[16];
  int n = 0;
  const eg_safetensors_entry *e = eg_safetensors_entries(f, &n);
  int rc = ckpt_checksum(e, n, values, want);
  /* the stored value is shown only when it has the form written: the message stays one line */
  const bool hex8 = sum && strlen(sum) == 8 && strspn(sum, "0123456789abcdef") == 8;
  if (rc == 0 && (!sum || strcmp(sum, want) != 0))
    rc = fail(EXIT_USAGE, "%s: checksum mismatch (stored %s, contents %s): the file is damaged",
              what, !sum ? "(none)" : hex8 ? sum : "(not 8 hex digits)", want);
  return rc;
}

/* The checkpoint's position, field by field, as one of this run: epoch (epochs done) in
 * [0, --epochs], where --epochs means a finished run, at step 0; step (steps done in the next
 * epoch) in [0, steps per epoch); global_step = epoch * steps + step, computed without wrapping.
 * pos: epoch, step, global_step. */
static int check_position(const trainer *tr, const eg_safetensors *f, const char *what,
                          int64_t pos[3]) {
  static const char *const keys[] = {"epoch", "step", "global_step"};
  for (int k = 0; k < 3; k++)
    if (parse_count(f, keys[k], &pos[k])) {
      const char *v = eg_safetensors_meta_get(f, keys[k]);
      return fail(EXIT_USAGE, "%s: %s \"%s\": expected a count (decimal digits, < 2^63)",
                  what, keys[k], v ? v : "(none)");
    }
  const int64_t epoch = pos[0], step = pos[1], gstep = pos[2], steps = tr->train.steps;
  int64_t at = 0;
  if (epoch > tr->a.epochs)
    return fail(EXIT_USAGE, "%s: epoch %lld (epochs done): beyond this run's --epochs %ld: "
                "resume with --epochs %lld or more", what, (long long)epoch, tr->a.epochs,
                (long long)epoch);
  if (step >= steps || (epoch == tr->a.epochs && step > 0))
    return fail(EXIT_USAGE, "%s: step %lld (after epoch %lld): %s (%lld steps per epoch)", what,
                (long long)step, (long long)epoch,
                epoch == tr->a.epochs ? "past the last epoch of this run's --epochs"
                                      : "not a step of an epoch of this run",
                (long long)steps);
  if (__builtin_mul_overflow(epoch, steps, &at) || __builtin_add_overflow(at, step, &at) ||
      gstep != at)
    return fail(EXIT_USAGE, "%s: global_step %lld: epoch %lld and step %lld of %lld steps per "
                "epoch make %lld", what, (long long)gstep, (long long)epoch, (long long)step,
                (long long)steps, (long long)at);
  return 0;
}

/* --resume: the checkpoint read, checked against this run (its checksum, format, the run's
 * signature, its position, every tensor by name, dtype and shape), and restored. */
static int resume(trainer *tr) {
  char what[1100];
  snprintf(what, sizeof what, "train: --resume: checkpoint %s", tr->ckpt_path);
  struct stat st;
  if (stat(tr->ckpt_path, &st) != 0)
    return fail(EXIT_USAGE, "%s: missing: nothing to resume (run without --resume first)", what);
  eg_safetensors *f;
  int rc = st_load(tr->ckpt_path, what, &f);
  if (rc) return rc;
  eg_safetensors_entry *e = NULL;
  char **nm = NULL;
  int n = 0;
  char sig[1024];
  run_signature(tr, sig, sizeof sig);
  const char *format = eg_safetensors_meta_get(f, "format");
  const char *version = eg_safetensors_meta_get(f, "version");
  const char *theirs = eg_safetensors_meta_get(f, "run");
  int64_t pos[3] = {0, 0, 0};
  const char *loss = eg_safetensors_meta_get(f, "epoch_loss_sum");
  char *end = NULL, *rng_end = NULL;
  double loss_sum = loss ? strtod(loss, &end) : NAN;
  const char *rng = eg_safetensors_meta_get(f, "rng");
  errno = 0;
  const uint64_t rng_state = rng && strlen(rng) == 16 ? strtoull(rng, &rng_end, 16) : 0;
  const bool rng_ok = rng_end && !*rng_end && !errno;
  if (!format || strcmp(format, "edgegrad.checkpoint") != 0 || !version ||
      (strcmp(version, "2") != 0 && strcmp(version, "3") != 0))
    rc = fail(EXIT_USAGE, "%s: format %s version %s: not an edgegrad checkpoint of version 2 or 3",
              what, format ? format : "(none)", version ? version : "(none)");
  if (rc == 0) rc = check_checksum(f, what);
  if (rc == 0 && !rng_ok)
    rc = fail(EXIT_USAGE, "%s: rng %s: expected the random stream's state as 16 hex digits",
              what, rng ? rng : "(none)");
  if (rc == 0 && (!theirs || strcmp(theirs, sig) != 0)) {
    char diff[2100];
    signature_diff(theirs ? theirs : "", sig, diff, sizeof diff);
    rc = fail(EXIT_USAGE, "%s: written by another run (%s): resume with the same data, batch, "
              "optimizer, schedule and seed", what, diff);
  }
  if (rc == 0) rc = check_position(tr, f, what, pos);
  if (rc == 0 && (!end || *end || !isfinite(loss_sum)))
    rc = fail(EXIT_USAGE, "%s: epoch_loss_sum %s: expected a finite number", what,
              loss ? loss : "(none)");
  if (rc == 0) rc = state_entries(tr, false, &e, &n, &nm);
  for (int k = 0; rc == 0 && k < n; k++) {
    const eg_safetensors_entry *c = eg_safetensors_find(f, e[k].name);
    bool same = c && c->t.dtype == e[k].t.dtype && c->t.rank == e[k].t.rank;
    for (int d = 0; same && d < c->t.rank; d++) same = c->t.shape[d] == e[k].t.shape[d];
    if (!same)
      rc = fail(EXIT_USAGE, "%s: tensor %s %s: this model's is %s of that shape: a checkpoint "
                "of another model", what, e[k].name, c ? "differs in dtype or shape" : "missing",
                eg_dtype_name(e[k].t.dtype));
  }
  int n_file = 0;
  eg_safetensors_entries(f, &n_file);
  if (rc == 0 && n_file != n)
    rc = fail(EXIT_USAGE, "%s: %d tensors, this model and optimizer have %d: a checkpoint of "
              "another model or optimizer", what, n_file, n);
  for (int k = 0; rc == 0 && k < n; k++) {
    const eg_safetensors_entry *c = eg_safetensors_find(f, e[k].name);
    const size_t bytes = (size_t)eg_tensor_numel(&e[k].t) * eg_dtype_size(e[k].t.dtype);
    if (strncmp(e[k].name, "input/", 6) == 0) { /* copied by the runtime (the file's bytes
                                                   may be unaligned: copied first) */
      eg_tensor v = c->t;
      if (!(v.data = malloc(bytes + 1))) {
        rc = fail(EXIT_FAIL, "train: out of memory");
        break;
      }
      memcpy(v.data, c->t.data, bytes);
      eg_status s = eg_runtime_set_input(tr->rt, e[k].name + 6, &v);
      free(v.data);
      if (s != EG_OK) rc = fail_status(s);
    } else if (bytes) {
      memcpy(e[k].t.data, c->t.data, bytes);
    }
  }
  const int64_t skipped = rc == 0 ? eg_optimizer_skipped_steps(tr->opt) : 0;
  if (rc == 0 && !(skipped >= 0 && skipped <= pos[2]))
    rc = fail(EXIT_USAGE, "%s: optimizer/loss_scaler: %lld skipped steps of global_step %lld: "
              "a count from 0 to global_step", what, (long long)skipped, (long long)pos[2]);
  if (rc == 0) {
    eg_optimizer_set_steps(tr->opt, pos[2] - skipped); /* the steps that updated */
    tr->epoch = (long)pos[0];
    tr->step = pos[1];
    tr->loss_sum = loss_sum;
    tr->rng = rng_state;
    tr->ckpt_written_step = pos[2];
  }
  free_names(nm, n);
  free(e);
  eg_safetensors_destroy(f);
  return rc;
}

/* ---- the trained weights ---- */

static int write_out(trainer *tr) {
  const int ni = eg_model_num_inputs(tr->m);
  eg_safetensors_entry *e = calloc((size_t)ni + 1, sizeof *e);
  if (!e) return fail(EXIT_FAIL, "train: out of memory");
  int n = 0, unnamed = 0;
  const char *first_unnamed = NULL;
  for (int i = 0; i < ni; i++) {
    eg_tensor_desc d;
    eg_model_input(tr->m, i, &d);
    if (!is_state(tr->m, d.name) || eg_runtime_input(tr->rt, i, &e[n].t) != EG_OK) continue;
    e[n].name = d.state_dict ? d.state_dict : d.name;
    if (!d.state_dict && !unnamed++) first_unnamed = d.name;
    n++;
  }
  if (unnamed && !tr->a.quiet)
    fprintf(stderr, "edgegrad: train: --out: %d inputs (first %s) carry no PyTorch state_dict "
            "name (the model was exported without them): written under their input names\n",
            unnamed, first_unnamed);
  char what[1100];
  snprintf(what, sizeof what, "train: --out %s", tr->a.out);
  const eg_safetensors_meta meta[] = {{"format", "pt"}, {"producer", "edgegrad train"}};
  int rc = st_save(tr->a.out, what, e, n, meta, 2);
  free(e);
  return rc;
}

/* ---- the loop ---- */

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void progress(const trainer *tr, int64_t step, double loss_mean, double t0) {
  const double dt = now_s() - t0, rate = dt > 0 ? (double)(step * tr->train.batch) / dt : 0;
  const double eta = step > 0 ? dt / (double)step * (double)(tr->train.steps - step) : 0;
  printf("\repoch %ld/%ld  step %lld/%lld  loss %.6g  %.1f ex/s  ETA %d:%02d\033[K",
         tr->epoch + 1, tr->a.epochs, (long long)step, (long long)tr->train.steps,
         loss_mean, rate, (int)eta / 60, (int)eta % 60);
  fflush(stdout);
}

static int log_line(trainer *tr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int log_line(trainer *tr, const char *fmt, ...) {
  if (!tr->log) return 0;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(tr->log, fmt, ap);
  va_end(ap);
  fputc('\n', tr->log);
  if (fflush(tr->log) != 0 || ferror(tr->log))
    return fail(EXIT_FAIL, "train: --log %s: cannot write (%s)", tr->a.log, strerror(errno));
  return 0;
}

/* The name of the first parameter or buffer input holding a NaN or an infinity, or NULL. */
static const char *first_non_finite(const trainer *tr) {
  for (int i = 0; i < eg_model_num_inputs(tr->m); i++) {
    eg_tensor_desc d;
    eg_tensor t;
    eg_model_input(tr->m, i, &d);
    if (!is_state(tr->m, d.name) || eg_runtime_input(tr->rt, i, &t) != EG_OK) continue;
    const int64_t n = eg_tensor_numel(&t);
    if (t.dtype == EG_DTYPE_FLOAT32) {
      const float *p = t.data;
      float acc = 0.0f; /* x * 0 is 0 for finite x, NaN for NaN and inf */
      for (int64_t k = 0; k < n; k++) acc += p[k] * 0.0f;
      if (acc != 0.0f) return d.name;
    }
  }
  return NULL;
}

/* The gradient outputs' elements and those exactly 0, added to the epoch's counts. Read before
 * the optimizer's step (loss scaling unscales them in place; a zero stays a zero): at fp16 the
 * share shows the gradients that underflowed, which loss scaling avoids. */
static void count_zero_grads(trainer *tr) {
  for (int i = 0; i < eg_model_num_outputs(tr->m); i++) {
    eg_tensor_desc d;
    eg_tensor t;
    if (eg_model_output(tr->m, i, &d) != EG_OK || strncmp(d.name, "grad_", 5) != 0 ||
        eg_runtime_output(tr->rt, i, &t) != EG_OK || t.dtype != EG_DTYPE_FLOAT32)
      continue;
    const float *g = t.data;
    const int64_t n = eg_tensor_numel(&t);
    for (int64_t k = 0; k < n; k++) tr->zero_grads += g[k] == 0.0f;
    tr->grad_elems += n;
  }
}

/* The state of the checkpoint for a message of a failed step. */
static const char *checkpoint_note(trainer *tr) {
  if (!tr->ckpt_path || tr->ckpt_written_step < 0) return "no checkpoint was written";
  snprintf(tr->note, sizeof tr->note, "the last checkpoint, %s (after %lld steps), is intact",
           tr->ckpt_path, (long long)tr->ckpt_written_step);
  return tr->note;
}

/* The validation part of an epoch's line and of its JSON object ("" without a val set). */
static void val_text(double loss, double acc, char *text, size_t ts, char *json, size_t js) {
  text[0] = json[0] = 0;
  if (isnan(loss)) return;
  int n = snprintf(text, ts, "  val loss %.6g", loss);
  int m = snprintf(json, js, ", \"val_loss\": %.9g", loss);
  if (!isnan(acc)) {
    snprintf(text + n, ts - (size_t)n, "  val acc %.2f%%", 100.0 * acc);
    snprintf(json + m, js - (size_t)m, ", \"val_accuracy\": %.9g", acc);
  }
}

/* The gradients' part of an epoch's line and of its JSON object: the share of gradient
 * elements exactly 0 this epoch; with loss scaling the scale of the next step and the steps
 * skipped so far. */
static void grads_text(const trainer *tr, char *text, size_t ts, char *json, size_t js) {
  const double zero = tr->grad_elems ? (double)tr->zero_grads / (double)tr->grad_elems : 0.0;
  int n = snprintf(text, ts, "  zero grads %.1f %%", 100.0 * zero);
  int m = snprintf(json, js, ", \"zero_grads\": %.9g", zero);
  if (tr->a.opt.loss_scale == EG_LOSS_SCALE_NONE) return;
  const double scale = eg_optimizer_loss_scale(tr->opt);
  const long long skipped = (long long)eg_optimizer_skipped_steps(tr->opt);
  snprintf(text + n, ts - (size_t)n, "  loss scale %g  skipped %lld", scale, skipped);
  snprintf(json + m, js - (size_t)m, ", \"loss_scale\": %.9g, \"skipped_steps\": %lld", scale,
           skipped);
}

static int train_epochs(trainer *tr) {
  const bool live = !tr->a.quiet && isatty(STDOUT_FILENO);
  int rc = 0;
  if (tr->eval_rt && tr->epoch == 0 && tr->step == 0) { /* where training starts from */
    double vloss, vacc;
    char val[128], vjson[128];
    rc = evaluate(tr, &vloss, &vacc);
    val_text(rc ? NAN : vloss, vacc, val, sizeof val, vjson, sizeof vjson);
    if (rc == 0 && !tr->a.quiet) printf("epoch 0/%ld%s\n", tr->a.epochs, val);
    if (rc == 0)
      rc = log_line(tr, "{\"event\": \"eval\", \"epoch\": 0%s}", vjson);
  }
  for (; tr->epoch < tr->a.epochs && rc == 0; tr->epoch++, tr->step = 0, tr->loss_sum = 0) {
    const double lr = lr_at(&tr->a, tr->epoch), t0 = now_s();
    const int64_t first = tr->step;
    double shown = 0;
    tr->grad_elems = tr->zero_grads = 0;
    eg_optimizer_set_lr(tr->opt, lr);
    permute(tr->train.perm, tr->train.n_examples, tr->a.shuffle, tr->a.seed, (uint64_t)tr->epoch);
    for (; tr->step < tr->train.steps && rc == 0; tr->step++) {
      rc = feed(tr, &tr->train, tr->rt, tr->step);
      if (rc == 0) rc = draw_masks(tr);
      eg_status s = rc == 0 ? eg_runtime_run(tr->rt) : EG_OK;
      if (rc == 0 && s != EG_OK) rc = fail_status(s);
      eg_tensor lt;
      double loss = NAN;
      if (rc == 0 && eg_runtime_output(tr->rt, tr->loss_at, &lt) == EG_OK)
        loss = lt.dtype == EG_DTYPE_FLOAT32 ? *(const float *)lt.data
               : lt.dtype == EG_DTYPE_FLOAT64 ? *(const double *)lt.data : NAN;
      if (rc == 0 && !isfinite(loss)) {
        if (live) printf("\n");
        rc = fail(EXIT_FAIL, "train: epoch %ld step %lld: loss is %g: training stopped before "
                  "the update (lower --lr, check the data); %s", tr->epoch + 1,
                  (long long)tr->step + 1, loss, checkpoint_note(tr));
      }
      if (rc == 0) count_zero_grads(tr);
      if (rc == 0 && (s = eg_optimizer_step(tr->opt)) != EG_OK) rc = fail_status(s);
      const char *bad = rc == 0 ? first_non_finite(tr) : NULL;
      if (bad) {
        if (live) printf("\n");
        rc = fail(EXIT_FAIL, "train: epoch %ld step %lld: %s is not finite after the update "
                  "(loss %g): training stopped; %s", tr->epoch + 1, (long long)tr->step + 1, bad,
                  loss, checkpoint_note(tr));
      }
      if (rc) break;
      tr->loss_sum += loss;
      char scaling[96] = "";
      if (tr->a.opt.loss_scale != EG_LOSS_SCALE_NONE)
        snprintf(scaling, sizeof scaling, ", \"loss_scale\": %.9g, \"skipped_steps\": %lld",
                 eg_optimizer_loss_scale(tr->opt), (long long)eg_optimizer_skipped_steps(tr->opt));
      rc = log_line(tr, "{\"event\": \"step\", \"epoch\": %ld, \"step\": %lld, \"global_step\": "
                    "%lld, \"loss\": %.9g, \"lr\": %.9g%s}", tr->epoch + 1,
                    (long long)tr->step + 1, (long long)global_step(tr), loss, lr, scaling);
      const double t = now_s();
      if (live && (t - shown > 0.1 || tr->step + 1 == tr->train.steps)) {
        progress(tr, tr->step + 1 - first, tr->loss_sum / (double)(tr->step + 1), t0);
        shown = t;
      }
      if (rc == 0 && tr->a.ckpt_every && global_step(tr) % tr->a.ckpt_every == 0 &&
          tr->step + 1 < tr->train.steps) {
        tr->step++;
        rc = write_checkpoint(tr);
        tr->step--;
      }
    }
    if (rc) break;
    const double secs = now_s() - t0, mean = tr->loss_sum / (double)tr->train.steps;
    double vloss = NAN, vacc = NAN;
    if (tr->eval_rt) rc = evaluate(tr, &vloss, &vacc);
    if (rc) break;
    char val[128], vjson[128], grads[128], gjson[160];
    val_text(vloss, vacc, val, sizeof val, vjson, sizeof vjson);
    grads_text(tr, grads, sizeof grads, gjson, sizeof gjson);
    if (!tr->a.quiet)
      printf("%sepoch %ld/%ld  train loss %.6g%s  lr %.4g%s  %.2f s  %.0f ex/s%s\n",
             live ? "\r" : "", tr->epoch + 1, tr->a.epochs, mean, val, lr, grads, secs,
             secs > 0 ? (double)((tr->train.steps - first) * tr->train.batch) / secs : 0.0,
             live ? "\033[K" : "");
    rc = log_line(tr, "{\"event\": \"epoch\", \"epoch\": %ld, \"train_loss\": %.9g%s, "
                  "\"seconds\": %.6f, \"lr\": %.9g%s}", tr->epoch + 1, mean, vjson, secs, lr,
                  gjson);
    if (rc == 0 && tr->ckpt_path) {
      tr->epoch++, tr->step = 0, tr->loss_sum = 0;
      rc = write_checkpoint(tr);
      tr->epoch--;
    }
  }
  return rc;
}

/* A runtime for `m` (on the CPU, compiled for --soc, or the compiled program it is). */
static int make_runtime(trainer *tr, const eg_model *m, const char *path, eg_runtime **rt) {
  const train_args *a = &tr->a;
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

static int output_at(const eg_model *m, const char *name) {
  for (int i = 0; i < eg_model_num_outputs(m); i++) {
    eg_tensor_desc d;
    if (eg_model_output(m, i, &d) == EG_OK && strcmp(d.name, name) == 0) return i;
  }
  return -1;
}

/* --eval: the evaluation graph, checked against the training step: each of its inputs that is
 * a parameter or buffer of the step has the step's dtype and shape; it has a scalar "loss". */
static int setup_eval(trainer *tr) {
  const char *path = tr->a.eval;
  int rc = load_model("train: --eval", READS_MODEL, path, &tr->eval_m);
  if (rc) return rc;
  tr->eval_loss_at = output_at(tr->eval_m, "loss");
  tr->eval_out_at = output_at(tr->eval_m, "output");
  eg_tensor_desc d;
  if (tr->eval_loss_at < 0 || eg_model_output(tr->eval_m, tr->eval_loss_at, &d) != EG_OK ||
      eg_tensor_numel(&d.tensor) != 1 ||
      (d.tensor.dtype != EG_DTYPE_FLOAT32 && d.tensor.dtype != EG_DTYPE_FLOAT64))
    return fail(EXIT_USAGE, "train: --eval %s: no scalar float output \"loss\": an evaluation "
                "graph outputs loss and output (export_training_step writes STEM.eval.json)",
                path);
  for (int i = 0; i < eg_model_num_inputs(tr->eval_m); i++) {
    eg_model_input(tr->eval_m, i, &d);
    if (d.random != EG_RANDOM_NONE)
      return fail(EXIT_USAGE, "train: --eval %s: input %s is a random draw (a Dropout mask): an "
                  "evaluation graph runs the model in eval mode, drawing nothing", path, d.name);
    if (!is_state(tr->m, d.name)) continue;
    bool same = false;
    for (int j = 0; j < eg_model_num_inputs(tr->m) && !same; j++) {
      eg_tensor_desc dj;
      eg_model_input(tr->m, j, &dj);
      same = strcmp(dj.name, d.name) == 0 && dj.tensor.dtype == d.tensor.dtype &&
             dj.tensor.rank == d.tensor.rank &&
             memcmp(dj.tensor.shape, d.tensor.shape, sizeof(int64_t) * (size_t)d.tensor.rank) == 0;
    }
    if (!same) {
      char sh[256];
      format_shape(sh, sizeof sh, &d.tensor);
      return fail(EXIT_USAGE, "train: --eval %s: input %s (%s %s) differs from the training "
                  "step's: the evaluation graph of another model", path, d.name,
                  eg_dtype_name(d.tensor.dtype), sh);
    }
  }
  return 0;
}

/* Every integer label of a data set, the examples past its last whole batch included, is a
 * class of the loss that reads it (eg_model_input_classes: < C of its nll_loss, or its
 * ignore_index), checked before the first step: the training set against the step, the
 * validation set against the evaluation graph. A model whose labels no nll_loss reads (none
 * here) leaves them to its own ops. */
static int check_labels(const trainer *tr) {
  for (const dataset *ds = &tr->train; ds; ds = ds == &tr->train ? &tr->val : NULL) {
    const eg_model *m = ds == &tr->train ? tr->m : tr->eval_m;
    for (int k = 0; k < ds->n_in; k++) {
      const data_in *x = &ds->in[k];
      int64_t classes = 0, ignore = 0;
      if (x->d.tensor.dtype != EG_DTYPE_INT64 ||
          eg_model_input_classes(m, x->input, &classes, &ignore) != EG_OK || classes <= 0)
        continue;
      const int64_t n = eg_tensor_numel(&x->file), per = n / x->file.shape[0];
      for (int64_t e = 0; e < n; e++) {
        const int64_t label = int_at(&x->file, e);
        if (label < classes || label == ignore) continue;
        return fail(EXIT_USAGE, "train: data %s: label %lld at example %lld%s: the model has "
                    "%lld classes (input %s is the target of its nll_loss): labels are in [0, "
                    "%lld)", x->where, (long long)label, (long long)(e / per),
                    ds == &tr->val ? " of the validation set" : "", (long long)classes,
                    x->d.name, (long long)classes);
      }
    }
  }
  return 0;
}

static int setup(trainer *tr) {
  train_args *a = &tr->a;
  int rc = load_model("train", READS_MODEL, a->model, &tr->m);
  if (rc) return rc;
  tr->loss_at = -1;
  for (int i = 0; i < eg_model_num_outputs(tr->m); i++) {
    eg_tensor_desc d;
    if (eg_model_output(tr->m, i, &d) == EG_OK && strcmp(d.name, "loss") == 0 &&
        eg_tensor_numel(&d.tensor) == 1)
      tr->loss_at = i;
  }
  int n_params = 0;
  eg_model_training_io(tr->m, &n_params, NULL);
  if (tr->loss_at < 0 || n_params == 0)
    return fail(EXIT_USAGE, "train: %s: %s: a training step has a scalar output \"loss\" and "
                "inputs P with outputs grad_P (python/edgegrad/export.py)", a->model,
                tr->loss_at < 0 ? "no scalar output loss" : "no trainable parameter");
  if (!a->have_wd && a->opt.kind == EG_OPTIMIZER_ADAMW) a->opt.weight_decay = 1e-2;
  rc = resolve_loss_scale(a, tr->m);
  if (rc == 0) rc = a->eval ? setup_eval(tr) : 0;
  if (rc == 0) rc = load_data(tr);
  if (rc == 0) rc = check_labels(tr);
  if (rc == 0) rc = setup_random(tr);
  if (rc == 0) rc = make_runtime(tr, tr->m, a->model, &tr->rt);
  if (rc == 0 && a->eval) rc = make_runtime(tr, tr->eval_m, a->eval, &tr->eval_rt);
  return rc;
}

/* A copy of `t` (a view into a file's bytes, maybe unaligned) in malloc'ed memory. */
static int copy_tensor(const char *cmd, const eg_tensor *t, eg_tensor *out) {
  const size_t bytes = (size_t)eg_tensor_numel(t) * eg_dtype_size(t->dtype);
  *out = *t;
  if (!(out->data = malloc(bytes + 1))) return fail(EXIT_FAIL, "%s: out of memory", cmd);
  memcpy(out->data, t->data, bytes);
  return 0;
}

int init_load(const char *cmd, const eg_model *m, const char *src, const bool *skip,
              eg_tensor *vals) {
  struct stat st;
  if (stat(src, &st) != 0)
    return fail(EXIT_USAGE, "%s: --init %s: cannot open (%s)", cmd, src, strerror(errno));
  const bool dir = S_ISDIR(st.st_mode);
  eg_safetensors *f = NULL;
  char what[1100];
  snprintf(what, sizeof what, "%s: --init %s", cmd, src);
  int rc = dir ? 0 : st_load(src, what, &f);
  const int n = eg_model_num_inputs(m);
  for (int i = 0; rc == 0 && i < n; i++) {
    eg_tensor_desc d;
    eg_model_input(m, i, &d);
    if (!is_state(m, d.name) || (skip && skip[i])) continue;
    const eg_safetensors_entry *e = NULL;
    eg_status s = EG_OK;
    if (dir) {
      char *path = outdir_name_ok(d.name) ? outdir_join(src, d.name, ".npy") : NULL;
      if (!path) rc = fail(EXIT_USAGE, "%s: --init %s: input %s: not usable as a file name", cmd,
                           src, d.name);
      else s = eg_npy_load(path, &vals[i]);
      free(path);
    } else if ((e = d.state_dict ? eg_safetensors_find(f, d.state_dict) : NULL) ||
               (e = eg_safetensors_find(f, d.name))) {
      rc = copy_tensor(cmd, &e->t, &vals[i]);
    } else {
      rc = fail(EXIT_USAGE, "%s: --init %s: no tensor %s%s%s%s: every parameter and buffer "
                "needs a first value", cmd, src, d.state_dict ? d.state_dict : d.name,
                d.state_dict ? " (nor " : "", d.state_dict ? d.name : "",
                d.state_dict ? ")" : "");
    }
    if (rc == 0 && s == EG_OK) s = eg_model_check_input(m, d.name, &vals[i]);
    if (rc == 0 && s != EG_OK) rc = fail_status(s);
  }
  eg_safetensors_destroy(f);
  for (int i = 0; rc && i < n; i++) eg_tensor_free(&vals[i]);
  return rc;
}

/* --init: every parameter and buffer input's first value (init_load) into the runtime. */
static int set_init(trainer *tr) {
  const int n = eg_model_num_inputs(tr->m);
  eg_tensor *vals = calloc((size_t)n + 1, sizeof *vals);
  if (!vals) return fail(EXIT_FAIL, "train: out of memory");
  int rc = init_load("train", tr->m, tr->a.init, NULL, vals);
  for (int i = 0; i < n; i++) {
    eg_tensor_desc d;
    eg_model_input(tr->m, i, &d);
    eg_status s = rc == 0 && vals[i].data ? eg_runtime_set_input(tr->rt, d.name, &vals[i]) : EG_OK;
    if (s != EG_OK) rc = fail_status(s);
    eg_tensor_free(&vals[i]);
  }
  free(vals);
  return rc;
}

static void cleanup(trainer *tr) {
  for (dataset *ds = &tr->train; ds; ds = ds == &tr->train ? &tr->val : NULL) {
    for (int k = 0; ds->in && k < ds->n_in; k++) {
      eg_tensor_free(&ds->in[k].file);
      free(ds->in[k].batch.data);
      free(ds->in[k].where);
    }
    free(ds->in);
    free(ds->perm);
  }
  for (int k = 0; k < tr->n_rnd; k++) free(tr->rnd[k].mask.data);
  free(tr->rnd);
  free(tr->ckpt_path);
  if (tr->log) fclose(tr->log);
  eg_optimizer_destroy(tr->opt);
  eg_runtime_destroy(tr->rt);
  eg_runtime_destroy(tr->eval_rt);
  eg_model_destroy(tr->m);
  eg_model_destroy(tr->eval_m);
}

/* A run killed while writing a checkpoint leaves its temporary file (eg_file_write_atomic's
 * "checkpoint.safetensors.tmp.XXXXXX") beside the checkpoint; the next run in DIR removes it. */
static void remove_stale_temporaries(const char *dir) {
  static const char prefix[] = "checkpoint.safetensors.tmp.";
  DIR *d = opendir(dir);
  if (!d) return;
  for (struct dirent *e; (e = readdir(d));) {
    if (strncmp(e->d_name, prefix, sizeof prefix - 1) != 0 ||
        strlen(e->d_name) != sizeof prefix - 1 + 6)
      continue;
    char *path = outdir_join(dir, e->d_name, "");
    if (path) unlink(path);
    free(path);
  }
  closedir(d);
}

/* Where the run writes, checked before any work: a run must not train for hours and then find
 * it cannot save. --log is written in place (appended to with --resume): an existing one must
 * be writable itself. */
static int check_outputs(const train_args *a) {
  int rc = a->out ? outdir_check_file("train", "--out", a->out) : 0;
  if (rc == 0 && a->log) rc = outdir_check_file("train", "--log", a->log);
  if (rc == 0 && a->log && access(a->log, F_OK) == 0 && access(a->log, W_OK) != 0)
    rc = fail(EXIT_USAGE, "train: --log %s: cannot write (%s): the log is written in place",
              a->log, strerror(errno));
  if (rc == 0 && a->ckpt_dir) rc = outdir_check_dir("train", "--checkpoint", a->ckpt_dir);
  return rc;
}

int cmd_train(int argc, char **argv) {
  trainer tr = {.ckpt_written_step = -1};
  /* progress piped to a file or another program appears as it happens, a line at a time */
  if (!isatty(STDOUT_FILENO)) setvbuf(stdout, NULL, _IOLBF, 0);
  int rc = parse_train_args(argc, argv, &tr.a);
  if (rc == 0) rc = check_outputs(&tr.a);
  if (rc == 0) rc = setup(&tr);
  if (rc == 0 && !tr.a.resume) rc = set_init(&tr);
  eg_status s = EG_OK;
  if (rc == 0 && (s = eg_optimizer_create(tr.rt, &tr.a.opt, &tr.opt)) != EG_OK)
    rc = fail_status(s);
  if (rc == 0 && tr.a.ckpt_dir) {
    tr.ckpt_made = mkdir(tr.a.ckpt_dir, 0777) == 0;
    if (!tr.ckpt_made && errno != EEXIST)
      rc = fail(EXIT_USAGE, "train: --checkpoint %s: cannot create (%s)", tr.a.ckpt_dir,
                strerror(errno));
    else if (!(tr.ckpt_path = outdir_join(tr.a.ckpt_dir, "checkpoint", ".safetensors")))
      rc = fail(EXIT_FAIL, "train: out of memory");
    else
      remove_stale_temporaries(tr.a.ckpt_dir);
  }
  if (rc == 0 && tr.a.resume) rc = resume(&tr);
  if (rc == 0 && tr.a.log && !(tr.log = fopen(tr.a.log, tr.a.resume ? "a" : "w")))
    rc = fail(EXIT_USAGE, "train: --log %s: cannot open (%s)", tr.a.log, strerror(errno));
  if (rc == 0 && !tr.a.quiet) {
    printf("train: %lld examples, batch %lld: %lld steps per epoch", (long long)tr.train.n_examples,
           (long long)tr.train.batch, (long long)tr.train.steps);
    const long long left = (long long)(tr.train.n_examples % tr.train.batch);
    if (left)
      printf(" (the last %lld example%s of each epoch's order dropped: the graph's batch size is "
             "fixed)", left, left == 1 ? "" : "s");
    printf("; %s, lr %g\n", kind_name(tr.a.opt.kind), tr.a.opt.lr);
    if (tr.eval_rt) {
      const long long vleft = (long long)(tr.val.n_examples % tr.val.batch);
      printf("train: validation: %lld examples%s, batch %lld: %lld batches", (long long)tr.val.n_examples,
             tr.a.val_split > 0 ? " held back by --val-split" : "", (long long)tr.val.batch,
             (long long)tr.val.steps);
      if (vleft) printf(" (the last %lld not evaluated: the graph's batch size is fixed)", vleft);
      printf("\n");
    }
    if (tr.a.resume && tr.epoch == tr.a.epochs)
      printf("train: %s is of a finished run (%ld epochs): nothing left to train\n",
             tr.ckpt_path, tr.a.epochs);
    else if (tr.a.resume)
      printf("train: resumed from %s at epoch %ld, step %lld\n", tr.ckpt_path, tr.epoch + 1,
             (long long)tr.step + 1);
  }
  if (rc == 0) rc = train_epochs(&tr);
  if (rc == 0 && tr.a.out) rc = write_out(&tr);
  if (rc == 0 && tr.a.out && !tr.a.quiet) printf("train: trained weights written to %s\n", tr.a.out);
  if (rc > 0 && tr.ckpt_made) rmdir(tr.a.ckpt_dir); /* only if nothing was written in it */
  cleanup(&tr);
  return rc < 0 ? 0 : rc;
}
