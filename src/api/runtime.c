/* runtime.c — eg_runtime_* of the public API, a facade over the runtime engine
 * (runtime/engine.h): it reads the caller's options by the struct size rules, checks arguments
 * (NULLs, indices, inputs against the graph, the order of calls) and converts between the
 * public structures and the engine's values; the engine plans, binds and runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/runtime.h"
#include "api/struct_size.h"
#include "program/egp_format.h"
#include "runtime/model.h"
#include "util/error.h"

/* The caller's `options` read by the struct size rules (NULL: the defaults) and their ranges
 * checked, into *o. */
static eg_status read_options(const eg_runtime_options *options, eg_runtime_options *o) {
  *o = (eg_runtime_options)EG_RUNTIME_OPTIONS_INIT;
  if (options) EG_TRY(EG_STRUCT_READ(eg_runtime_options, o, options, "eg_runtime_create"));
  if (o->num_threads < 0)
    return eg_error(EG_ERR_ARGUMENT, "eg_runtime_create: num_threads (%d): must be >= 0 (0: the "
                    "process default)", o->num_threads);
  if ((unsigned)o->precision > (unsigned)EG_PRECISION_FP16)
    return eg_error(EG_ERR_ARGUMENT, "eg_runtime_create: precision (%d): must be "
                    "EG_PRECISION_DEFAULT (the program's), _FP32 or _FP16", (int)o->precision);
  return EG_OK;
}

eg_status eg_runtime_create(const eg_model *model, eg_runtime **out) {
  return eg_runtime_create_with_options(model, NULL, out);
}

eg_status eg_runtime_create_with_options(const eg_model *model, const eg_runtime_options *options,
                                         eg_runtime **out) {
  if (!out) return eg_error(EG_ERR_ARGUMENT, "eg_runtime_create: out is NULL");
  *out = NULL;
  if (!model) return eg_error(EG_ERR_ARGUMENT, "eg_runtime_create: model is NULL");
  eg_runtime_options o;
  EG_TRY(read_options(options, &o));
  /* a .egp runs as compiled */
  return eg_engine_create(model->graph, model->compiled ? &model->compiled->program : NULL,
                          false, &o, out);
}

eg_status eg_runtime_create_program(const eg_graph *g, eg_program *program,
                                    const eg_runtime_options *options, eg_runtime **out) {
  *out = NULL;
  eg_runtime_options o;
  const eg_status s = read_options(options, &o);
  if (s != EG_OK) {
    eg_program_free(program);
    free(program);
    return s;
  }
  return eg_engine_create(g, program, true, &o, out);
}

void eg_runtime_destroy(eg_runtime *rt) { eg_engine_destroy(rt); }

/* The one check of an input value against graph input `name`; *index is its input index. */
static eg_status check_input(const eg_graph *g, const char *name, const eg_tensor *value,
                             int32_t *index) {
  int32_t i = 0;
  while (i < g->n_inputs && strcmp(g->inputs[i].name, name) != 0) i++;
  if (i == g->n_inputs) {
    char names[512] = "";
    size_t used = 0;
    for (int32_t k = 0; k < g->n_inputs && used < sizeof names; k++)
      used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", k ? ", " : "",
                               g->inputs[k].name);
    return eg_error(EG_ERR_ARGUMENT, "input %s: no such input: the model's inputs are %s", name,
                    names);
  }
  const eg_value *v = &g->values[g->inputs[i].value];
  bool same = value->dtype == v->dtype && value->rank == v->rank;
  for (int d = 0; same && d < v->rank; d++) same = value->shape[d] == v->shape[d];
  if (!same) {
    char got[160], want[160];
    return eg_error(EG_ERR_ARGUMENT, "input %s: given %s %s: the model expects %s %s", name,
                    eg_dtype_name(value->dtype),
                    eg_fmt_ints(got, sizeof got, value->shape,
                                value->rank >= 0 && value->rank <= EG_MAX_RANK ? value->rank : 0),
                    eg_dtype_name(v->dtype), eg_fmt_ints(want, sizeof want, v->shape, v->rank));
  }
  if (eg_value_nbytes(v) && !value->data)
    return eg_error(EG_ERR_ARGUMENT, "input %s: data is NULL", name);
  *index = i;
  return EG_OK;
}

eg_status eg_model_check_input(const eg_model *model, const char *name, const eg_tensor *value) {
  if (!model || !name || !value)
    return eg_error(EG_ERR_ARGUMENT, "eg_model_check_input: NULL argument");
  int32_t i;
  return check_input(model->graph, name, value, &i);
}

eg_status eg_runtime_set_input(eg_runtime *rt, const char *name, const eg_tensor *value) {
  if (!rt || !name || !value)
    return eg_error(EG_ERR_ARGUMENT, "eg_runtime_set_input: NULL argument");
  const eg_graph *g = eg_runtime_graph(rt);
  int32_t i;
  EG_TRY(check_input(g, name, value, &i));
  const size_t bytes = eg_value_nbytes(&g->values[g->inputs[i].value]);
  if (bytes) memcpy(eg_engine_value(rt, g->inputs[i].value), value->data, bytes);
  eg_engine_input_given(rt, i);
  return EG_OK;
}

eg_status eg_runtime_run(eg_runtime *rt) {
  if (!rt) return eg_error(EG_ERR_ARGUMENT, "eg_runtime_run: runtime is NULL");
  const eg_graph *g = eg_runtime_graph(rt);
  for (int32_t i = 0; i < g->n_inputs; i++)
    if (!eg_engine_input_is_set(rt, i))
      return eg_error(EG_ERR_ARGUMENT, "input %s: not set: every input needs a value before "
                      "running", g->inputs[i].name);
  return eg_engine_run(rt);
}

eg_status eg_runtime_output(const eg_runtime *rt, int index, eg_tensor *out) {
  if (!rt || !out) return eg_error(EG_ERR_ARGUMENT, "eg_runtime_output: NULL argument");
  const eg_graph *g = eg_runtime_graph(rt);
  if (index < 0 || index >= g->n_outputs)
    return eg_error(EG_ERR_ARGUMENT, "eg_runtime_output: index %d out of range [0, %d)", index,
                    g->n_outputs);
  if (!eg_engine_ran(rt))
    return eg_error(EG_ERR_STATE, "eg_runtime_output: no successful run yet: outputs exist after "
                    "eg_runtime_run returns EG_OK");
  int32_t id = g->outputs[index].value;
  const eg_value *v = &g->values[id];
  memset(out, 0, sizeof *out);
  out->dtype = v->dtype;
  out->rank = v->rank;
  memcpy(out->shape, v->shape, sizeof v->shape);
  out->data = eg_engine_value(rt, id);
  return EG_OK;
}

eg_status eg_runtime_input(const eg_runtime *rt, int index, eg_tensor *out) {
  if (!rt || !out) return eg_error(EG_ERR_ARGUMENT, "eg_runtime_input: NULL argument");
  const eg_graph *g = eg_runtime_graph(rt);
  if (index < 0 || index >= g->n_inputs)
    return eg_error(EG_ERR_ARGUMENT, "eg_runtime_input: index %d out of range [0, %d)", index,
                    g->n_inputs);
  if (!eg_engine_input_is_set(rt, index))
    return eg_error(EG_ERR_ARGUMENT, "input %s: not set", g->inputs[index].name);
  const eg_value *v = &g->values[g->inputs[index].value];
  memset(out, 0, sizeof *out);
  out->dtype = v->dtype;
  out->rank = v->rank;
  memcpy(out->shape, v->shape, sizeof v->shape);
  out->data = eg_engine_value(rt, g->inputs[index].value);
  return EG_OK;
}

int eg_runtime_profile_count(const eg_runtime *rt) {
  const eg_run_profile *prof = rt ? eg_engine_profile(rt) : NULL;
  return prof && prof->ran ? prof->n : 0;
}

eg_status(eg_runtime_profile_entry)(const eg_runtime *rt, int index, eg_profile_entry *out,
                                    size_t out_size) {
  if (!rt || !out) return eg_error(EG_ERR_ARGUMENT, "eg_runtime_profile_entry: NULL argument");
  const int n = eg_runtime_profile_count(rt);
  if (index < 0 || index >= n)
    return eg_error(EG_ERR_ARGUMENT, "eg_runtime_profile_entry: index (%d) out of range [0, %d)%s",
                    index, n,
                    eg_engine_profile(rt) ? "" : ": the runtime was made without options.profile");
  return EG_STRUCT_WRITE(eg_profile_entry, out, out_size, &eg_engine_profile(rt)->e[index],
                         "eg_runtime_profile_entry");
}

int64_t eg_runtime_profile_total_ns(const eg_runtime *rt) {
  return eg_runtime_profile_count(rt) ? eg_engine_profile(rt)->total_ns : 0;
}

eg_status eg_runtime_profile_write_trace(const eg_runtime *rt, const char *path) {
  if (!rt || !path)
    return eg_error(EG_ERR_ARGUMENT, "eg_runtime_profile_write_trace: NULL argument");
  if (!eg_runtime_profile_count(rt))
    return eg_error(EG_ERR_ARGUMENT, "profile trace %s: no profiled run: make the runtime with "
                    "options.profile and run it first", path);
  return eg_run_profile_write_trace(eg_engine_profile(rt), path);
}

/* ---- training (the roles the exporter records, see edgegrad.h) ---- */

void eg_model_training_io(const eg_model *model, int *num_params, int *num_buffers) {
  int p = 0, b = 0;
  const eg_graph *g = model ? model->graph : NULL;
  for (int32_t i = 0; g && i < g->n_inputs; i++) {
    const eg_named *e = &g->inputs[i];
    p += e->role == EG_ROLE_PARAMETER && e->pair >= 0;
    b += e->role == EG_ROLE_BUFFER && e->pair >= 0;
  }
  if (num_params) *num_params = p;
  if (num_buffers) *num_buffers = b;
}
