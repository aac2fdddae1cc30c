/* compile.c — the public API of the compiler library (libedgegrad) beyond the compile report:
 * loading a graph JSON file (or a compiled program, which the runtime library loads), compiling
 * in memory into a runtime, and writing a compiled program file. */
#include <stdlib.h>
#include <string.h>

#include "compiler/api/compile_options.h"
#include "compiler/compile.h"
#include "compiler/egp_write.h"
#include "compiler/frontend/frontend.h"
#include "program/egp_format.h"
#include "runtime/model.h"
#include "api/runtime.h"
#include "api/struct_size.h"
#include "util/error.h"

/* A skip list of the options: checked here, before any compiler pass consults it. */
static eg_status check_skips(const char *what, const char *const *names, int n) {
  if (n < 0 || (n > 0 && !names))
    return eg_error(EG_ERR_ARGUMENT, "compile options: num_%s (%d, %s list): a count >= 0 of "
                    "the names in %s", what, n, names ? "a" : "a NULL", what);
  for (int k = 0; k < n; k++)
    if (!names[k])
      return eg_error(EG_ERR_ARGUMENT, "compile options: %s[%d] is NULL: every name is a string",
                      what, k);
  return EG_OK;
}

eg_status eg_api_partition_options(const eg_compile_options *in, const char *fn,
                                   eg_compile_options *o, eg_partition_options *out) {
  *o = (eg_compile_options)EG_COMPILE_OPTIONS_INIT;
  EG_TRY(EG_STRUCT_READ(eg_compile_options, o, in, fn));
  const eg_target *target = eg_target_find(o->soc);
  if (!target) return EG_ERR_ARGUMENT; /* message: the valid names */
  EG_TRY(check_skips("skip_ops", o->skip_ops, o->num_skip_ops));
  EG_TRY(check_skips("skip_nodes", o->skip_nodes, o->num_skip_nodes));
  if ((unsigned)o->precision > (unsigned)EG_PRECISION_FP16)
    return eg_error(EG_ERR_ARGUMENT, "compile options: precision (%d): must be "
                    "EG_PRECISION_DEFAULT, _FP32 or _FP16", (int)o->precision);
  *out = (eg_partition_options){.target = target,
                                .skip_ops = o->skip_ops,
                                .n_skip_ops = o->num_skip_ops,
                                .skip_nodes = o->skip_nodes,
                                .n_skip_nodes = o->num_skip_nodes};
  return EG_OK;
}

eg_precision eg_api_precision(const eg_compile_options *o, const eg_target *target) {
  if (o->precision) return o->precision;
  return target->float_precision == EG_PRECISION_FP16 ? EG_PRECISION_FP16 : EG_PRECISION_FP32;
}

eg_status eg_api_require_graph(const eg_model *model, const char *fn) {
  if (!model->compiled) return EG_OK;
  eg_program_info info;
  const char *soc = eg_model_program_info(model, &info) == EG_OK ? info.soc : "?";
  return eg_error(EG_ERR_ARGUMENT, "%s: the model is a program compiled for %s: compiling "
                  "takes a model loaded from a graph JSON (a compiled program runs as it is: "
                  "eg_runtime_create)", fn, soc);
}

eg_status eg_model_load(const char *json_path, eg_model **out) {
  if (!out) return eg_error(EG_ERR_ARGUMENT, "eg_model_load: out is NULL");
  *out = NULL;
  if (!json_path) return eg_error(EG_ERR_ARGUMENT, "eg_model_load: path is NULL");
  /* a compiled program: told apart by content, not by name */
  if (eg_egp_file_has_magic(json_path)) return eg_model_load_compiled(json_path, out);
  eg_model *m = calloc(1, sizeof *m);
  if (!m) return eg_error(EG_ERR_NOMEM, "eg_model_load: out of memory");
  eg_status s = eg_graph_load_json(json_path, &m->graph);
  if (s != EG_OK) {
    free(m);
    return s;
  }
  *out = m;
  return EG_OK;
}

eg_status eg_runtime_create_compiled(const eg_model *model, const eg_compile_options *options,
                                     eg_runtime **out) {
  return eg_runtime_create_compiled_with_options(model, options, NULL, out);
}

eg_status eg_runtime_create_compiled_with_options(const eg_model *model,
                                                  const eg_compile_options *options,
                                                  const eg_runtime_options *runtime_options,
                                                  eg_runtime **out) {
  if (!out) return eg_error(EG_ERR_ARGUMENT, "eg_runtime_create_compiled: out is NULL");
  *out = NULL;
  if (!model || !options)
    return eg_error(EG_ERR_ARGUMENT, "eg_runtime_create_compiled: model and options are required");
  EG_TRY(eg_api_require_graph(model, "eg_runtime_create_compiled"));
  eg_compile_options o;
  eg_partition_options popt;
  EG_TRY(eg_api_partition_options(options, "eg_runtime_create_compiled", &o, &popt));
  eg_program *p = calloc(1, sizeof *p);
  if (!p) return eg_error(EG_ERR_NOMEM, "eg_runtime_create_compiled: out of memory");
  eg_status s = eg_program_build(model->graph, &popt, p);
  if (s != EG_OK) {
    free(p);
    return s;
  }
  p->precision = eg_api_precision(&o, popt.target);
  /* the compiled graph: same inputs and outputs as the model's */
  return eg_runtime_create_program(p->graph, p, runtime_options, out);
}

eg_status eg_model_save_compiled(const eg_model *model, const eg_compile_options *options,
                                 const char *path) {
  if (!model || !options || !path)
    return eg_error(EG_ERR_ARGUMENT, "eg_model_save_compiled: model, options and path are "
                    "required");
  EG_TRY(eg_api_require_graph(model, "eg_model_save_compiled"));
  eg_compile_options o;
  eg_partition_options popt;
  EG_TRY(eg_api_partition_options(options, "eg_model_save_compiled", &o, &popt));
  eg_program p;
  EG_TRY(eg_program_build(model->graph, &popt, &p));
  p.precision = eg_api_precision(&o, popt.target);
  eg_status s = eg_egp_write(&p, path);
  eg_program_free(&p);
  return s;
}
