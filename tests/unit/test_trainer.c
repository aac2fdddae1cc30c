/* test_trainer.c — eg_trainer_* on the tiny_step fixture (batch 2, three classes): the refusals
 * with their messages; one epoch in file order equals the loop an app would write by hand over
 * eg_runtime_* and eg_optimizer_* (bit for bit); checkpoints — after an epoch and in the middle
 * of one — resume bit for bit as the uninterrupted run, a damaged or foreign one is refused;
 * the callback can stop a fit; step_batch; a held-back validation set. The match with PyTorch's
 * training loop is tests/conformance/test_train.py and the Python Trainer's tests. */
#include <math.h>

#include "eg_test.h"

#define N_EX 8 /* examples: the fixture's two, four times, the labels varied */

typedef struct fixture {
  eg_model *m;
  eg_runtime *rt;
  float images[N_EX * 144];
  int64_t labels[N_EX];
  eg_trainer_array data[2];
} fixture;

static bool setup(fixture *f) {
  memset(f, 0, sizeof *f);
  EG_CHECK_MSG(eg_model_load(EG_TEST_DATA "/tiny_step.json", &f->m) == EG_OK, "%s",
               eg_last_error());
  if (!f->m || eg_runtime_create(f->m, &f->rt) != EG_OK) return false;
  if (eg_test_set_tiny_inputs(f->m, f->rt) != EG_OK) return false;
  eg_tensor x;
  if (eg_npy_load(EG_TEST_DATA "/tiny_step_inputs/input.npy", &x) != EG_OK) return false;
  for (int k = 0; k < N_EX; k++) {
    for (int e = 0; e < 144; e++) /* each example a little different */
      f->images[k * 144 + e] = ((const float *)x.data)[(k % 2) * 144 + e] * (1.0f + 0.125f * (float)k);
    f->labels[k] = k % 3;
  }
  eg_tensor_free(&x);
  const eg_tensor images = {EG_DTYPE_FLOAT32, 4, {N_EX, 1, 12, 12}, f->images};
  const eg_tensor labels = {EG_DTYPE_INT64, 1, {N_EX}, f->labels};
  f->data[0] = (eg_trainer_array)EG_TRAINER_ARRAY("input", images, NULL);
  f->data[1] = (eg_trainer_array)EG_TRAINER_ARRAY("target", labels, NULL);
  return true;
}

static void teardown(fixture *f) {
  eg_runtime_destroy(f->rt);
  eg_model_destroy(f->m);
}

/* Every parameter's bytes, concatenated (malloc'ed), and their size. */
static unsigned char *weights(const fixture *f, size_t *size) {
  unsigned char *out = NULL;
  *size = 0;
  for (int i = 0; i < eg_model_num_inputs(f->m); i++) {
    eg_tensor_desc d;
    eg_tensor t;
    eg_model_input(f->m, i, &d);
    if (d.role != EG_ROLE_PARAMETER || eg_runtime_input(f->rt, i, &t) != EG_OK) continue;
    const size_t n = (size_t)eg_tensor_numel(&t) * sizeof(float);
    out = realloc(out, *size + n);
    memcpy(out + *size, t.data, n);
    *size += n;
  }
  return out;
}

#define EXPECT(call, status, needle)                                                        \
  do {                                                                                      \
    eg_status s_ = (call);                                                                  \
    EG_CHECK_MSG(s_ == (status) && strstr(eg_last_error(), (needle)),                       \
                 "%s: status %d, message '%s' (wanted %d, '%s')", #call, (int)s_,           \
                 eg_last_error(), (int)(status), (needle));                                 \
  } while (0)

static void test_refusals(void) {
  fixture f;
  if (!setup(&f)) goto out;
  eg_trainer *tr = NULL;
  eg_trainer_options o;
  eg_trainer_defaults(&o);
  EXPECT(eg_trainer_create(NULL, &o, &tr), EG_ERR_ARGUMENT, "runtime is NULL");
  o.schedule = EG_LR_STEP;
  o.lr_step = 0;
  EXPECT(eg_trainer_create(f.rt, &o, &tr), EG_ERR_ARGUMENT, "lr_step >= 1");
  eg_trainer_defaults(&o);
  o.schedule = EG_LR_COSINE;
  EXPECT(eg_trainer_create(f.rt, &o, &tr), EG_ERR_ARGUMENT, "cosine schedule (epochs 0)");
  eg_trainer_defaults(&o);
  o.normalize = true;
  o.std = 0;
  EXPECT(eg_trainer_create(f.rt, &o, &tr), EG_ERR_ARGUMENT, "std > 0");
  EG_CHECK(tr == NULL);
  eg_trainer_defaults(&o);
  EG_CHECK_MSG(eg_trainer_create(f.rt, &o, &tr) == EG_OK, "%s", eg_last_error());
  if (!tr) goto out;
  EXPECT(eg_trainer_step(tr, NULL), EG_ERR_STATE, "no training data");
  EXPECT(eg_trainer_save_checkpoint(tr, "never.safetensors"), EG_ERR_STATE, "no training data");
  EXPECT(eg_trainer_evaluate(tr, NULL, NULL), EG_ERR_STATE, "no evaluation graph");
  eg_trainer_array bad[2] = {f.data[0], f.data[1]};
  bad[1].input = "2_weight";
  EXPECT(eg_trainer_set_data(tr, bad, 2), EG_ERR_ARGUMENT, "not a data input");
  bad[1].input = "nope";
  EXPECT(eg_trainer_set_data(tr, bad, 2), EG_ERR_ARGUMENT, "no input of the model has that name");
  EXPECT(eg_trainer_set_data(tr, f.data, 1), EG_ERR_ARGUMENT, "input target (int64) has no array");
  bad[1] = f.data[1];
  bad[0].t.shape[3] = 11;
  EXPECT(eg_trainer_set_data(tr, bad, 2), EG_ERR_ARGUMENT, "each example must be [1, 12, 12]");
  bad[0] = f.data[0];
  bad[0].t.shape[0] = 6;
  EXPECT(eg_trainer_set_data(tr, bad, 2), EG_ERR_ARGUMENT, "every array holds the same examples");
  bad[0].t.shape[0] = 1;
  bad[1].t.shape[0] = 1;
  EXPECT(eg_trainer_set_data(tr, bad, 2), EG_ERR_ARGUMENT, "fewer than the graph's batch size 2");
  bad[0] = f.data[0];
  bad[1] = f.data[1];
  f.labels[5] = 3; /* three classes */
  bad[1].origin = "labels.npy";
  EXPECT(eg_trainer_set_data(tr, bad, 2), EG_ERR_ARGUMENT,
         "data labels.npy: label 3 at example 5: the model has 3 classes");
  f.labels[5] = 2;
  f.images[200] = NAN;
  EXPECT(eg_trainer_set_data(tr, f.data, 2), EG_ERR_ARGUMENT, "element 200 (example 1) is nan");
  f.images[200] = 0.5f;
  EG_CHECK_MSG(eg_trainer_set_data(tr, f.data, 2) == EG_OK, "%s", eg_last_error());
  const eg_tensor bias = {EG_DTYPE_FLOAT32, 1, {4}, f.images};
  eg_trainer_array param = EG_TRAINER_ARRAY("2_bias", bias, NULL);
  EXPECT(eg_trainer_step_batch(tr, &param, 1, NULL), EG_ERR_ARGUMENT, "the trainer's to update");
  EXPECT(eg_trainer_hold_out(tr, f.rt, 1.5), EG_ERR_ARGUMENT, "must leave at least one");
  eg_trainer_destroy(tr);
out:
  teardown(&f);
}

/* One epoch without shuffle = the loop over the runtime and the optimizer by hand. */
static void test_epoch_is_the_loop(void) {
  fixture a, b;
  eg_trainer *tr = NULL;
  eg_optimizer *opt = NULL;
  if (!setup(&a) || !setup(&b)) goto out;
  eg_optimizer_options sgd;
  eg_optimizer_defaults(EG_OPTIMIZER_SGD, &sgd);
  sgd.lr = 0.1;
  sgd.momentum = 0.9;
  eg_trainer_options o;
  eg_trainer_defaults(&o);
  o.optimizer = &sgd;
  o.shuffle = false;
  EG_CHECK(eg_trainer_create(a.rt, &o, &tr) == EG_OK && eg_trainer_set_data(tr, a.data, 2) == EG_OK);
  EG_CHECK_MSG(eg_trainer_fit(tr, 1) == EG_OK, "%s", eg_last_error());
  int64_t epoch, step, steps;
  eg_trainer_position(tr, &epoch, &step, &steps);
  EG_CHECK(epoch == 1 && step == 0 && steps == N_EX / 2);
  EG_CHECK(eg_optimizer_create(b.rt, &sgd, &opt) == EG_OK);
  for (int k = 0; opt && k < N_EX / 2; k++) {
    eg_tensor x = a.data[0].t, y = a.data[1].t;
    x.shape[0] = y.shape[0] = 2;
    x.data = b.images + k * 2 * 144;
    y.data = b.labels + k * 2;
    EG_CHECK(eg_runtime_set_input(b.rt, "input", &x) == EG_OK);
    EG_CHECK(eg_runtime_set_input(b.rt, "target", &y) == EG_OK);
    EG_CHECK(eg_runtime_run(b.rt) == EG_OK && eg_optimizer_step(opt) == EG_OK);
  }
  size_t na, nb;
  unsigned char *wa = weights(&a, &na), *wb = weights(&b, &nb);
  EG_CHECK(wa && wb && na == nb && memcmp(wa, wb, na) == 0);
  /* and training moved them: the fixture's first values differ */
  fixture c;
  if (setup(&c)) {
    size_t nc;
    unsigned char *wc = weights(&c, &nc);
    EG_CHECK(wc && nc == na && memcmp(wa, wc, na) != 0);
    free(wc);
  }
  teardown(&c);
  free(wa);
  free(wb);
out:
  eg_optimizer_destroy(opt);
  eg_trainer_destroy(tr);
  teardown(&a);
  teardown(&b);
}

/* An Adam trainer at `lr` on f's data, cosine over 3 epochs, seed 7. */
static eg_trainer *trainer_lr(fixture *f, double lr) {
  eg_optimizer_options adam;
  eg_optimizer_defaults(EG_OPTIMIZER_ADAM, &adam);
  adam.lr = lr;
  eg_trainer_options o;
  eg_trainer_defaults(&o);
  o.optimizer = &adam;
  o.seed = 7;
  o.schedule = EG_LR_COSINE;
  o.epochs = 3;
  eg_trainer *tr = NULL;
  EG_CHECK(eg_trainer_create(f->rt, &o, &tr) == EG_OK);
  EG_CHECK(tr && eg_trainer_set_data(tr, f->data, 2) == EG_OK);
  return tr;
}

static eg_trainer *trainer(fixture *f) { return trainer_lr(f, 0.01); }

static int stop_at_step_3(const eg_trainer_event *e, void *user) {
  (void)user;
  return e->kind == EG_TRAINER_STEP && e->global_step == 3;
}

/* A run stopped after epoch 1, or after step 3 of epoch 1 (3 of 4), and resumed from its
 * checkpoint in a new trainer equals the uninterrupted run, bit for bit. */
static void test_resume(void) {
  fixture whole, part, rest;
  eg_trainer *tw = NULL, *tp = NULL, *tq = NULL;
  const char *path = "test_trainer.checkpoint.safetensors";
  if (!setup(&whole) || !setup(&part) || !setup(&rest)) goto out;
  tw = trainer(&whole);
  EG_CHECK(tw && eg_trainer_fit(tw, 3) == EG_OK);
  size_t nw, nr;
  unsigned char *ww = weights(&whole, &nw);
  for (int mid = 0; mid < 2; mid++) {
    if (mid) { /* the fixture's first values again */
      teardown(&part);
      if (!setup(&part)) break;
    }
    tp = trainer(&part);
    if (mid) {
      eg_trainer_set_callback(tp, stop_at_step_3, NULL);
      EXPECT(eg_trainer_fit(tp, 3), EG_ERR_STATE, "stopped by the callback");
      int64_t epoch, step;
      eg_trainer_position(tp, &epoch, &step, NULL);
      EG_CHECK(epoch == 0 && step == 3);
    } else {
      EG_CHECK(eg_trainer_fit(tp, 1) == EG_OK);
    }
    EG_CHECK_MSG(eg_trainer_save_checkpoint(tp, path) == EG_OK, "%s", eg_last_error());
    tq = trainer(&rest); /* the fixture's first values: the checkpoint brings the rest */
    EG_CHECK_MSG(tq && eg_trainer_load_checkpoint(tq, path) == EG_OK, "%s", eg_last_error());
    EG_CHECK(tq && eg_trainer_fit(tq, 3) == EG_OK);
    unsigned char *wr = weights(&rest, &nr);
    EG_CHECK_MSG(ww && wr && nw == nr && memcmp(ww, wr, nw) == 0, "resumed %s differs",
                 mid ? "mid-epoch" : "after epoch 1");
    free(wr);
    eg_trainer_destroy(tp);
    eg_trainer_destroy(tq);
    tp = tq = NULL;
  }
  free(ww);
  /* a foreign run: another learning rate */
  tq = trainer_lr(&rest, 0.02);
  EXPECT(eg_trainer_load_checkpoint(tq, path), EG_ERR_ARGUMENT,
         "written by another run (lr=0.01 in the checkpoint, lr=0.02 in this run)");
  /* a damaged one: a byte of the last tensor flipped */
  FILE *fp = fopen(path, "r+b");
  EG_CHECK(fp && fseek(fp, -3, SEEK_END) == 0);
  int c = fp ? fgetc(fp) : EOF;
  if (fp && fseek(fp, -3, SEEK_END) == 0) fputc(c ^ 0x10, fp);
  if (fp) fclose(fp);
  eg_trainer_destroy(tq);
  tq = trainer(&rest);
  EXPECT(eg_trainer_load_checkpoint(tq, path), EG_ERR_FORMAT, "checksum mismatch");
  remove(path);
out:
  eg_trainer_destroy(tw);
  eg_trainer_destroy(tp);
  eg_trainer_destroy(tq);
  teardown(&whole);
  teardown(&part);
  teardown(&rest);
}

static int count_events(const eg_trainer_event *e, void *user) {
  int *n = user;
  n[e->kind]++;
  return 0;
}

/* A held-back validation set: evaluation before training and after each epoch; the events. */
static void test_hold_out(void) {
  fixture f;
  eg_runtime *eval_rt = NULL;
  eg_trainer *tr = NULL;
  if (!setup(&f) || eg_runtime_create(f.m, &eval_rt) != EG_OK) goto out;
  tr = trainer(&f);
  EG_CHECK_MSG(tr && eg_trainer_hold_out(tr, eval_rt, 0.25) == EG_OK, "%s", eg_last_error());
  int64_t steps = 0;
  eg_trainer_position(tr, NULL, NULL, &steps);
  EG_CHECK_MSG(steps == 3, "%lld steps: 6 examples left in batches of 2", (long long)steps);
  int n[3] = {0, 0, 0};
  eg_trainer_set_callback(tr, count_events, n);
  EG_CHECK_MSG(eg_trainer_fit(tr, 2) == EG_OK, "%s", eg_last_error());
  EG_CHECK_MSG(n[EG_TRAINER_STEP] == 6 && n[EG_TRAINER_EPOCH] == 2 && n[EG_TRAINER_EVAL] == 1,
               "%d steps, %d epochs, %d evals", n[0], n[1], n[2]);
  double loss = NAN, acc = NAN;
  EG_CHECK(eg_trainer_evaluate(tr, &loss, &acc) == EG_OK && isfinite(loss) && loss > 0);
out:
  eg_trainer_destroy(tr);
  eg_runtime_destroy(eval_rt);
  teardown(&f);
}

int main(void) {
  EG_RUN(test_refusals);
  EG_RUN(test_epoch_is_the_loop);
  EG_RUN(test_resume);
  EG_RUN(test_hold_out);
  return eg_test_summary();
}
