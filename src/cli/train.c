/* train.c — `edgegrad train`: fine-tuning a training step over a data set, a shell over the
 * library's trainer (eg_trainer: runtime/trainer.c). Here, after the options (train_args.c): the
 * data read from files (arrays.h: a folder of .npy or an .npz archive), the first values
 * (--init, by default the exporter's STEM.init.safetensors), progress on the terminal, and the
 * files the trainer writes named: the JSON-lines log, the checkpoints in --checkpoint DIR, the
 * trained weights (--out).
 *
 * The order keeps failures cheap and the disk untouched: arguments, model, data (every array
 * read; the trainer checks shapes, dtypes, finite values, labels), runtime and trainer,
 * checkpoint (read and checked against this run), then the epochs. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arrays.h"
#include "cli.h"
#include "outdir.h"
#include "train.h"

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

/* A library failure of status s, its message after `what` ("train: "). */
static int said(eg_status s, const char *what) {
  return fail(s == EG_ERR_NOMEM || s == EG_ERR_RUNTIME ? EXIT_FAIL : EXIT_USAGE, "%s%s", what,
              eg_last_error());
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
  const int n = eg_model_num_inputs(r->m) + (r->eval_m ? eg_model_num_inputs(r->eval_m) : 0);
  r->files = calloc((size_t)n + 1, sizeof *r->files);
  r->arrays = calloc((size_t)n + 1, sizeof *r->arrays);
  r->where = calloc((size_t)n + 1, sizeof *r->where);
  if (rc == 0 && (!r->files || !r->arrays || !r->where)) rc = fail(EXIT_FAIL, "train: out of memory");
  if (rc == 0)
    rc = arrays_read_inputs(a->data, "--data", &a->rt_opt.max_memory_bytes, r->m, r->files,
                            r->where, r->arrays, &r->n_files);
  r->n_train = r->n_files;
  if (rc == 0 && a->val_data)
    rc = arrays_read_inputs(a->val_data, "--val-data", &a->rt_opt.max_memory_bytes, r->eval_m,
                            r->files, r->where, r->arrays, &r->n_files);
  char budget[300]; /* what --max-memory leaves the runtimes */
  snprintf(budget, sizeof budget, "%s, less the data's bytes", a->max_memory_arg ? a->max_memory_arg : "");
  if (rc == 0)
    rc = cli_runtime("train", r->m, a->model, &a->compile, &a->rt_opt, budget, &r->rt);
  if (rc == 0 && a->eval)
    rc = cli_runtime("train", r->eval_m, a->eval, &a->compile, &a->rt_opt, budget, &r->eval_rt);
  if (rc) return rc;
  a->t.optimizer = &a->opt;
  eg_status s = eg_trainer_create(r->rt, &a->t, &r->tr);
  a->opt.loss_scale = s == EG_OK ? eg_optimizer_loss_scaling(eg_trainer_optimizer(r->tr)) : 0;
  if (s == EG_OK && a->loss_scale_interval && a->opt.loss_scale != EG_LOSS_SCALE_DYNAMIC)
    return fail(EXIT_USAGE, "train: --loss-scale-interval %ld: loss scaling is %s: the interval "
                "is dynamic loss scaling's (--loss-scale dynamic)", a->loss_scale_interval,
                a->opt.loss_scale == EG_LOSS_SCALE_NONE ? "none" : "static");
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
         (long long)e->epoch, (long)r->a.t.epochs, (long long)e->step, (long long)e->steps,
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
         r->live ? "\r" : "", (long long)e->epoch, (long)r->a.t.epochs, e->loss, val, e->lr, grads,
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
  else val_text(e, val, sizeof val), printf("epoch 0/%ld%s\n", (long)r->a.t.epochs, val);
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
  const eg_status s = eg_trainer_fit(r->tr, r->a.t.epochs);
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
  if (r->a.resume && epoch == (long)r->a.t.epochs)
    printf("train: %s is of a finished run (%ld epochs): nothing left to train\n", r->ckpt_path,
           (long)r->a.t.epochs);
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
