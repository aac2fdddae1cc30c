/* optimizer.h — the optimizer (optimizer.c) behind eg_optimizer_* of the public API: SGD, Adam
 * and AdamW over a runtime's parameters and buffers, with loss scaling. The facade
 * (api/optimizer.c) reads the caller's options by the struct size rules and checks NULLs,
 * ranges and indices; these take the library's layout and non-NULL optimizers. Each does what
 * the eg_optimizer_* function of the same stem in edgegrad.h says, its messages naming that
 * function. */
#ifndef EG_RUNTIME_OPTIMIZER_H
#define EG_RUNTIME_OPTIMIZER_H

#include "edgegrad.h"

/* `options` read and checked (loss scaling may be AUTO: resolved here). */
eg_status eg_opt_create(eg_runtime *rt, const eg_optimizer_options *options, eg_optimizer **out);
void eg_opt_destroy(eg_optimizer *opt);
eg_status eg_opt_step(eg_optimizer *opt);
/* lr finite, >= 0. */
void eg_opt_set_lr(eg_optimizer *opt, double lr);
int64_t eg_opt_steps(const eg_optimizer *opt);
/* steps >= 0. */
void eg_opt_set_steps(eg_optimizer *opt, int64_t steps);
int eg_opt_num_states(const eg_optimizer *opt);
/* index in [0, eg_opt_num_states). */
void eg_opt_state(eg_optimizer *opt, int index, const char **name, eg_tensor *out);
eg_loss_scale_mode eg_opt_loss_scaling(const eg_optimizer *opt);
double eg_opt_loss_scale(const eg_optimizer *opt);
int64_t eg_opt_skipped_steps(const eg_optimizer *opt);

#endif
