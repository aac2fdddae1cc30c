/* train.h — `edgegrad train`'s command line (train_args.c: its option table and the rules
 * between its options) and the run over the library's trainer (train.c). */
#ifndef EG_CLI_TRAIN_H
#define EG_CLI_TRAIN_H

#include <stdbool.h>

#include "edgegrad.h"

typedef struct train_args {
  const char *model, *data, *init, *out, *log, *ckpt_dir, *max_memory_arg;
  const char *eval, *val_data; /* --eval EVAL, --val-data DIR */
  double val_split;            /* --val-split F; 0: none */
  eg_compile_options compile;
  eg_runtime_options rt_opt;
  eg_trainer_options t;         /* schedule, epochs, shuffle, seed, normalization; its optimizer
                                   is opt (set where the trainer is made: this struct is copied) */
  eg_optimizer_options opt;     /* kind, lr, weight decay, ..., loss scaling */
  bool have_wd, resume, quiet;
  long ckpt_every;
  const char *loss_scale;      /* --loss-scale; NULL: the trainer's AUTO (dynamic at fp16) */
  long loss_scale_interval;    /* --loss-scale-interval N; 0: GradScaler's 2000 */
} train_args;

/* The arguments after `edgegrad train` into *a: the table's parse (options.h), then the rules
 * between options (one validation set, --resume needs --checkpoint, the optimizer's own
 * options, ...). 0; -1 after --help; or the exit status after the message. */
int parse_train_args(int argc, char **argv, train_args *a);

#endif
