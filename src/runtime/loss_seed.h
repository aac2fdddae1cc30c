/* loss_seed.h — the seed of a training step's backward, for loss scaling (loss_seed.c). */
#ifndef EG_RUNTIME_LOSS_SEED_H
#define EG_RUNTIME_LOSS_SEED_H

#include "program/program.h"

/* The value seeding the backward of training step g — its node ones_like(loss), or the
 * constant of ones pass decompose folds that into (ir/seed.h) — in *value. EG_ERR_UNSUPPORTED
 * (message set) when g has none, several, or one an NPU partition of `p` (may be NULL) reads
 * without taking it as a boundary input. */
eg_status eg_graph_loss_seed(const eg_graph *g, const eg_program *p, int32_t *value);

#endif
