/* abi_layout.c — prints the size of each public structure the Python package mirrors with
 * ctypes (python/edgegrad/_capi.py) and the offset and size of each field, one per line:
 *
 *     eg_tensor 80
 *     eg_tensor.dtype 0 4
 *
 * tests/python/test_runtime.py compares every line with the ctypes structures, so a field the
 * header adds, moves or resizes fails there instead of corrupting memory at run time. */
#include <stddef.h>
#include <stdio.h>

#include "edgegrad.h"

#define STRUCT(s) printf(#s " %zu\n", sizeof(s))
#define FIELD(s, f) printf(#s "." #f " %zu %zu\n", offsetof(s, f), sizeof(((s *)0)->f))

int main(void) {
  STRUCT(eg_tensor);
  FIELD(eg_tensor, dtype);
  FIELD(eg_tensor, rank);
  FIELD(eg_tensor, shape);
  FIELD(eg_tensor, data);

  STRUCT(eg_tensor_desc);
  FIELD(eg_tensor_desc, name);
  FIELD(eg_tensor_desc, tensor);
  FIELD(eg_tensor_desc, role);
  FIELD(eg_tensor_desc, pair);
  FIELD(eg_tensor_desc, state_dict);
  FIELD(eg_tensor_desc, random);
  FIELD(eg_tensor_desc, random_p);

  STRUCT(eg_runtime_options);
  FIELD(eg_runtime_options, struct_size);
  FIELD(eg_runtime_options, max_memory_bytes);
  FIELD(eg_runtime_options, num_threads);
  FIELD(eg_runtime_options, profile);
  FIELD(eg_runtime_options, dump_partitions_dir);
  FIELD(eg_runtime_options, precision);

  STRUCT(eg_compile_options);
  FIELD(eg_compile_options, struct_size);
  FIELD(eg_compile_options, soc);
  FIELD(eg_compile_options, skip_ops);
  FIELD(eg_compile_options, num_skip_ops);
  FIELD(eg_compile_options, skip_nodes);
  FIELD(eg_compile_options, num_skip_nodes);
  FIELD(eg_compile_options, no_fallback);
  FIELD(eg_compile_options, dump_after);
  FIELD(eg_compile_options, precision);

  STRUCT(eg_target_info);
  FIELD(eg_target_info, soc);
  FIELD(eg_target_info, product);
  FIELD(eg_target_info, htp_arch);
  FIELD(eg_target_info, vtcm_mb);
  FIELD(eg_target_info, has_float);
  FIELD(eg_target_info, note);
  FIELD(eg_target_info, soc_model);
  FIELD(eg_target_info, float_precision);

  STRUCT(eg_program_info);
  FIELD(eg_program_info, soc);
  FIELD(eg_program_info, precision);
  FIELD(eg_program_info, num_partitions);
  FIELD(eg_program_info, num_npu_nodes);
  FIELD(eg_program_info, num_cpu_nodes);
  FIELD(eg_program_info, num_steps);
  FIELD(eg_program_info, static_bytes);
  FIELD(eg_program_info, file_bytes);

  STRUCT(eg_optimizer_options);
  FIELD(eg_optimizer_options, struct_size);
  FIELD(eg_optimizer_options, kind);
  FIELD(eg_optimizer_options, lr);
  FIELD(eg_optimizer_options, weight_decay);
  FIELD(eg_optimizer_options, momentum);
  FIELD(eg_optimizer_options, dampening);
  FIELD(eg_optimizer_options, nesterov);
  FIELD(eg_optimizer_options, beta1);
  FIELD(eg_optimizer_options, beta2);
  FIELD(eg_optimizer_options, eps);
  FIELD(eg_optimizer_options, loss_scale);
  FIELD(eg_optimizer_options, init_scale);
  FIELD(eg_optimizer_options, growth_factor);
  FIELD(eg_optimizer_options, backoff_factor);
  FIELD(eg_optimizer_options, growth_interval);

  STRUCT(eg_trainer_options);
  FIELD(eg_trainer_options, struct_size);
  FIELD(eg_trainer_options, optimizer);
  FIELD(eg_trainer_options, schedule);
  FIELD(eg_trainer_options, lr_step);
  FIELD(eg_trainer_options, lr_gamma);
  FIELD(eg_trainer_options, epochs);
  FIELD(eg_trainer_options, shuffle);
  FIELD(eg_trainer_options, seed);
  FIELD(eg_trainer_options, normalize);
  FIELD(eg_trainer_options, mean);
  FIELD(eg_trainer_options, std);

  STRUCT(eg_trainer_array);
  FIELD(eg_trainer_array, struct_size);
  FIELD(eg_trainer_array, input);
  FIELD(eg_trainer_array, t);
  FIELD(eg_trainer_array, origin);

  STRUCT(eg_trainer_event);
  FIELD(eg_trainer_event, struct_size);
  FIELD(eg_trainer_event, kind);
  FIELD(eg_trainer_event, epoch);
  FIELD(eg_trainer_event, step);
  FIELD(eg_trainer_event, steps);
  FIELD(eg_trainer_event, global_step);
  FIELD(eg_trainer_event, loss);
  FIELD(eg_trainer_event, lr);
  FIELD(eg_trainer_event, val_loss);
  FIELD(eg_trainer_event, val_accuracy);
  FIELD(eg_trainer_event, seconds);
  FIELD(eg_trainer_event, steps_run);
  FIELD(eg_trainer_event, zero_grads);
  FIELD(eg_trainer_event, loss_scale);
  FIELD(eg_trainer_event, skipped_steps);
  return 0;
}
