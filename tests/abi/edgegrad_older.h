/* edgegrad_older.h — include/edgegrad.h as an app built against an older header of this
 * soname (libedgegrad.so.0.2) holds it: the functions tests/abi/older_caller.c calls, with the
 * prototypes they have, and each structure as that older header laid it out: today's fields
 * up to the last one it had, later ones missing (the order in which the project's history
 * appended them: eg_runtime_options before dump_partitions_dir and precision,
 * eg_compile_options before dump_after and precision, eg_optimizer_options before loss
 * scaling, eg_trainer_options holding the schedule only, eg_trainer_array before origin,
 * eg_tensor_desc before state_dict and the random draws, eg_target_info before soc_model and
 * float_precision, eg_trainer_event before loss scaling's fields). Frozen: it is the older
 * caller, so it never follows edgegrad.h; the struct size rules (edgegrad.h, "binary
 * compatibility") are what make it keep working. It does not include edgegrad.h. */
#ifndef EDGEGRAD_OLDER_H
#define EDGEGRAD_OLDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum eg_status {
  EG_OK = 0, EG_ERR_IO, EG_ERR_FORMAT, EG_ERR_INVALID, EG_ERR_UNSUPPORTED, EG_ERR_ARGUMENT,
  EG_ERR_NOMEM, EG_ERR_RUNTIME, EG_ERR_LIMIT, EG_ERR_STATE
} eg_status;
typedef enum eg_dtype { EG_DTYPE_FLOAT32 = 0, EG_DTYPE_INT64 = 3 } eg_dtype;
typedef struct eg_tensor {
  eg_dtype dtype;
  int32_t rank;
  int64_t shape[8];
  void *data;
} eg_tensor;
typedef enum eg_io_role { EG_ROLE_DATA = 0, EG_ROLE_LABEL, EG_ROLE_PARAMETER } eg_io_role;
typedef struct eg_model eg_model;
typedef struct eg_runtime eg_runtime;
typedef struct eg_optimizer eg_optimizer;
typedef struct eg_trainer eg_trainer;
typedef struct eg_compile_report eg_compile_report;

typedef struct eg_tensor_desc { /* filled by the library */
  const char *name;
  eg_tensor tensor;
  eg_io_role role;
  int pair;
} eg_tensor_desc;

typedef struct eg_runtime_options {
  size_t struct_size;
  size_t max_memory_bytes;
  int num_threads;
  bool profile;
} eg_runtime_options;

typedef struct eg_compile_options {
  size_t struct_size;
  const char *soc;
  const char *const *skip_ops;
  int num_skip_ops;
  const char *const *skip_nodes;
  int num_skip_nodes;
  int no_fallback;
} eg_compile_options;

typedef struct eg_target_info { /* filled by the library */
  const char *soc;
  const char *product;
  int htp_arch;
  int vtcm_mb;
  int has_float;
  const char *note;
} eg_target_info;

typedef enum eg_optimizer_kind { EG_OPTIMIZER_SGD = 0, EG_OPTIMIZER_ADAM, EG_OPTIMIZER_ADAMW }
    eg_optimizer_kind;
typedef enum eg_loss_scale_mode { EG_LOSS_SCALE_NONE = 0 } eg_loss_scale_mode;
typedef struct eg_optimizer_options {
  size_t struct_size;
  eg_optimizer_kind kind;
  double lr, weight_decay, momentum, dampening;
  bool nesterov;
  double beta1, beta2, eps;
} eg_optimizer_options;

typedef enum eg_lr_schedule { EG_LR_CONSTANT = 0, EG_LR_STEP, EG_LR_COSINE } eg_lr_schedule;
typedef struct eg_trainer_options {
  size_t struct_size;
  const eg_optimizer_options *optimizer;
  eg_lr_schedule schedule;
  int64_t lr_step;
  double lr_gamma;
} eg_trainer_options;

typedef struct eg_trainer_array {
  size_t struct_size;
  const char *input;
  eg_tensor t;
} eg_trainer_array;

typedef struct eg_trainer_event { /* the library's; it is at least this long */
  size_t struct_size;
  int kind;
  int64_t epoch, step, steps, global_step;
  double loss, lr, val_loss, val_accuracy, seconds;
  int64_t steps_run;
  double zero_grads;
} eg_trainer_event;
typedef int (*eg_trainer_callback)(const eg_trainer_event *event, void *user);

const char *eg_last_error(void);
eg_status eg_npy_load(const char *path, eg_tensor *out);
void eg_tensor_free(eg_tensor *t);
eg_status eg_model_load(const char *json_path, eg_model **out);
void eg_model_destroy(eg_model *model);
int eg_model_num_inputs(const eg_model *model);
eg_status eg_model_input(const eg_model *model, int index, eg_tensor_desc *out, size_t out_size);
eg_status eg_runtime_create_with_options(const eg_model *model,
                                         const eg_runtime_options *options, eg_runtime **out);
void eg_runtime_destroy(eg_runtime *rt);
eg_status eg_runtime_set_input(eg_runtime *rt, const char *name, const eg_tensor *value);
eg_status eg_runtime_input(const eg_runtime *rt, int index, eg_tensor *out);
eg_status eg_runtime_run(eg_runtime *rt);
int eg_runtime_profile_count(const eg_runtime *rt);
eg_status eg_get_target(int index, eg_target_info *out, size_t out_size);
eg_status eg_compile_report_create(const eg_model *model, const eg_compile_options *options,
                                   eg_compile_report **out);
void eg_compile_report_destroy(eg_compile_report *report);
const char *eg_compile_report_precision(const eg_compile_report *report);
eg_status eg_optimizer_defaults(eg_optimizer_kind kind, eg_optimizer_options *out,
                                size_t out_size);
eg_status eg_optimizer_create(eg_runtime *rt, const eg_optimizer_options *options,
                              eg_optimizer **out);
eg_status eg_optimizer_step(eg_optimizer *opt);
eg_loss_scale_mode eg_optimizer_loss_scaling(const eg_optimizer *opt);
void eg_optimizer_destroy(eg_optimizer *opt);
eg_status eg_trainer_defaults(eg_trainer_options *out, size_t out_size);
eg_status eg_trainer_create(eg_runtime *rt, const eg_trainer_options *options, eg_trainer **out);
eg_status eg_trainer_set_data(eg_trainer *tr, const eg_trainer_array *arrays, int n);
void eg_trainer_set_callback(eg_trainer *tr, eg_trainer_callback callback, void *user);
eg_status eg_trainer_fit(eg_trainer *tr, int64_t epochs);
void eg_trainer_destroy(eg_trainer *tr);

#define eg_model_input(model, index, out) eg_model_input(model, index, out, sizeof *(out))
#define eg_get_target(index, out) eg_get_target(index, out, sizeof *(out))
#define eg_optimizer_defaults(kind, out) eg_optimizer_defaults(kind, out, sizeof *(out))
#define eg_trainer_defaults(out) eg_trainer_defaults(out, sizeof *(out))

#endif
