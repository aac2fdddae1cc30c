/* trainer.h — the trainer's core (trainer.c): the training loop behind eg_trainer_* of the
 * public API. The facade (api/trainer.c) reads the caller's structures by the struct size
 * rules and checks NULLs and ranges; these take the library's layouts and non-NULL trainers.
 * Each does what the eg_trainer_* function of the same stem in edgegrad.h says, its messages
 * naming that function. */
#ifndef EG_RUNTIME_TRAINER_H
#define EG_RUNTIME_TRAINER_H

#include "edgegrad.h"

/* `o` read and checked, o->optimizer the optimizer's options (read; loss scaling may be
 * AUTO). */
eg_status eg_train_create(eg_runtime *rt, const eg_trainer_options *o, eg_trainer **out);
void eg_train_destroy(eg_trainer *tr);
/* arrays: n of them in the library's layout (NULL when n <= 0 or the caller gave none). */
eg_status eg_train_set_data(eg_trainer *tr, const eg_trainer_array *arrays, int n);
eg_status eg_train_set_eval(eg_trainer *tr, eg_runtime *eval_rt, const eg_trainer_array *arrays,
                            int n);
eg_status eg_train_hold_out(eg_trainer *tr, eg_runtime *eval_rt, double fraction);
void eg_train_set_callback(eg_trainer *tr, eg_trainer_callback callback, void *user);
eg_optimizer *eg_train_optimizer(eg_trainer *tr);
eg_status eg_train_set_log(eg_trainer *tr, const char *path, bool append);
/* every_steps >= 0. */
eg_status eg_train_set_checkpoints(eg_trainer *tr, const char *path, int64_t every_steps);
/* epoch, step, steps per epoch. */
void eg_train_position(const eg_trainer *tr, int64_t out[3]);
/* examples, batch, validation examples, validation batch. */
void eg_train_sizes(const eg_trainer *tr, int64_t out[4]);
eg_status eg_train_evaluate(eg_trainer *tr, double *loss, double *accuracy);
eg_status eg_train_step(eg_trainer *tr, double *loss);
eg_status eg_train_fit(eg_trainer *tr, int64_t epochs);
/* batch: n >= 0 arrays in the library's layout (non-NULL when n > 0). */
eg_status eg_train_step_batch(eg_trainer *tr, const eg_trainer_array *batch, int n,
                              double *loss);
/* Whether training data is set (a checkpoint is a position in it). */
bool eg_train_has_data(const eg_trainer *tr);
eg_status eg_train_save_checkpoint(eg_trainer *tr, const char *path);
/* Restores the checkpoint `f` read from `path` (named in messages). */
eg_status eg_train_load_checkpoint(eg_trainer *tr, const eg_safetensors *f, const char *path);
eg_status eg_train_save_weights(eg_trainer *tr, const char *path, const char *producer);

#endif
