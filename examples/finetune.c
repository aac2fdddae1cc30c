/* finetune.c — an app that fine-tunes a training step with the library's trainer (eg_trainer),
 * fed from arrays in its own memory: here the demo's digits, read once from .npy files into
 * buffers the app owns (a phone app would hand over camera frames the same way). The settings
 * are the demo's (scripts/demo.sh): Adam at lr 0.01, seed 1, a quarter of the examples held
 * back for validation, loss scaling as the trainer chooses it by default (dynamic where the
 * program's NPU partitions compute in fp16), so its weights equal `edgegrad train`'s bit for bit.
 *
 *   finetune STEP EVAL DATA_DIR INIT.safetensors OUT.safetensors EPOCHS [CHECKPOINT [resume]]
 *
 * STEP and EVAL: the exporter's STEM.json and STEM.eval.json, or programs compiled from them
 * (.egp). DATA_DIR holds input.npy and target.npy. With CHECKPOINT, a checkpoint is written
 * after every epoch; with "resume" the run first continues from it.
 *
 * Exit status: 0 ok, 1 a failure, 2 bad usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgegrad.h"

/* What the app holds: the models, runtimes, trainer and its examples. */
typedef struct app {
  eg_model *step, *eval;
  eg_runtime *rt, *eval_rt;
  eg_trainer *tr;
  eg_tensor images, labels; /* the app's own memory: the trainer reads views of it */
  const char *checkpoint;
} app;

static eg_status load(const char *path, eg_model **m) {
  const size_t n = strlen(path);
  return n > 4 && strcmp(path + n - 4, ".egp") == 0 ? eg_model_load_compiled(path, m)
                                                     : eg_model_load(path, m);
}

static int on_event(const eg_trainer_event *e, void *user) {
  const app *a = user;
  if (e->kind == EG_TRAINER_EPOCH) {
    printf("epoch %lld  train loss %.6g  val loss %.6g  val acc %.2f%%\n", (long long)e->epoch,
           e->loss, e->val_loss, 100.0 * e->val_accuracy);
    if (a->checkpoint && eg_trainer_save_checkpoint(a->tr, a->checkpoint) != EG_OK) return 1;
  }
  return 0;
}

static eg_status run(app *a, char **argv, int argc) {
  const long epochs = strtol(argv[6], NULL, 10);
  eg_status s = load(argv[1], &a->step);
  if (s == EG_OK) s = load(argv[2], &a->eval);
  if (s == EG_OK) s = eg_runtime_create(a->step, &a->rt);
  if (s == EG_OK) s = eg_runtime_create(a->eval, &a->eval_rt);
  if (s == EG_OK) s = eg_runtime_load_weights(a->rt, argv[4]);
  char path[4096];
  snprintf(path, sizeof path, "%s/input.npy", argv[3]);
  if (s == EG_OK) s = eg_npy_load(path, &a->images);
  snprintf(path, sizeof path, "%s/target.npy", argv[3]);
  if (s == EG_OK) s = eg_npy_load(path, &a->labels);
  if (s != EG_OK) return s;

  eg_optimizer_options adam;
  eg_optimizer_defaults(EG_OPTIMIZER_ADAM, &adam); /* sets adam.struct_size */
  adam.lr = 0.01;
  adam.loss_scale = EG_LOSS_SCALE_AUTO; /* dynamic where NPU partitions compute in fp16 */
  eg_trainer_options o;
  eg_trainer_defaults(&o);
  o.optimizer = &adam;
  o.epochs = epochs;
  o.seed = 1;
  const eg_trainer_array data[] = {EG_TRAINER_ARRAY("input", a->images, NULL),
                                   EG_TRAINER_ARRAY("target", a->labels, NULL)};
  s = eg_trainer_create(a->rt, &o, &a->tr);
  if (s == EG_OK) s = eg_trainer_set_data(a->tr, data, 2);
  if (s == EG_OK) s = eg_trainer_hold_out(a->tr, a->eval_rt, 0.25);
  if (s != EG_OK) return s;
  a->checkpoint = argc > 7 ? argv[7] : NULL;
  if (argc > 8 && strcmp(argv[8], "resume") == 0 &&
      (s = eg_trainer_load_checkpoint(a->tr, a->checkpoint)) != EG_OK)
    return s;
  eg_trainer_set_callback(a->tr, on_event, a);
  s = eg_trainer_fit(a->tr, epochs);
  return s == EG_OK ? eg_trainer_save_weights(a->tr, argv[5], "examples/finetune.c") : s;
}

int main(int argc, char **argv) {
  if (argc < 7 || argc > 9 || strtol(argv[6], NULL, 10) < 1) {
    fputs("usage: finetune STEP EVAL DATA_DIR INIT.safetensors OUT.safetensors EPOCHS "
          "[CHECKPOINT [resume]]\n", stderr);
    return 2;
  }
  app a = {0};
  const eg_status s = run(&a, argv, argc);
  if (s != EG_OK) fprintf(stderr, "finetune: %s\n", eg_last_error());
  eg_trainer_destroy(a.tr);
  eg_runtime_destroy(a.rt);
  eg_runtime_destroy(a.eval_rt);
  eg_model_destroy(a.step);
  eg_model_destroy(a.eval);
  eg_tensor_free(&a.images);
  eg_tensor_free(&a.labels);
  return s == EG_OK ? 0 : 1;
}
