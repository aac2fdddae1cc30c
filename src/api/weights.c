/* weights.c — the first values of a training step's parameters and buffers, from the files
 * the exporter writes (STEM.init.safetensors, each under its PyTorch state_dict name), a whole
 * state_dict saved with safetensors, or a folder of <input>.npy: eg_model_read_weights and
 * eg_runtime_load_weights. Every value is read and checked against its input before any is
 * handed back, so a refusal leaves the runtime as it was. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/runtime.h"
#include "ir/graph.h"
#include "runtime/model.h"
#include "util/error.h"

/* A safetensors file read for `path`; a malformed one is "<path>: not a safetensors file
 * edgegrad can read (<why>)". */
eg_status eg_safetensors_load_for(const char *path, eg_safetensors **out) {
  const eg_status s = eg_safetensors_load(path, out);
  if (s != EG_ERR_FORMAT && s != EG_ERR_UNSUPPORTED) return s;
  const char *m = eg_last_error();
  const size_t n = strlen(path);
  const char *why = strncmp(m, path, n) == 0 && m[n] == ':' && m[n + 1] == ' ' ? m + n + 2 : m;
  char *copy = strdup(why);
  eg_error(s, "%s: not a safetensors file edgegrad can read (%s)", path, copy ? copy : why);
  free(copy);
  return s;
}

static bool name_ok(const char *name) {
  return name[0] && strcmp(name, ".") != 0 && strcmp(name, "..") != 0 && !strchr(name, '/') &&
         !strchr(name, '\\');
}

/* A copy of `t` (a view into a file's bytes, maybe unaligned) in malloc'ed memory. */
static eg_status copy_tensor(const eg_tensor *t, eg_tensor *out) {
  const size_t bytes = (size_t)eg_tensor_numel(t) * eg_dtype_size(t->dtype);
  *out = *t;
  if (!(out->data = malloc(bytes + 1))) return eg_error(EG_ERR_NOMEM, "weights: out of memory");
  memcpy(out->data, t->data, bytes);
  return EG_OK;
}

static eg_status read_one(const eg_graph *g, int i, const char *path, bool dir,
                          const eg_safetensors *f, eg_tensor *out) {
  eg_tensor_desc d;
  eg_graph_describe(g, true, i, &d);
  eg_status s = EG_OK;
  if (dir) {
    if (!name_ok(d.name))
      return eg_error(EG_ERR_ARGUMENT, "%s: input %s: not usable as a file name", path, d.name);
    const size_t len = strlen(path) + strlen(d.name) + 6;
    char *file = malloc(len);
    if (!file) return eg_error(EG_ERR_NOMEM, "weights: out of memory");
    snprintf(file, len, "%s/%s.npy", path, d.name);
    s = eg_npy_load(file, out);
    free(file);
  } else {
    const eg_safetensors_entry *e = d.state_dict ? eg_safetensors_find(f, d.state_dict) : NULL;
    if (!e) e = eg_safetensors_find(f, d.name);
    if (!e)
      return eg_error(EG_ERR_ARGUMENT, "%s: no tensor %s%s%s%s: every parameter and buffer needs "
                      "a first value", path, d.state_dict ? d.state_dict : d.name,
                      d.state_dict ? " (nor " : "", d.state_dict ? d.name : "",
                      d.state_dict ? ")" : "");
    s = copy_tensor(&e->t, out);
  }
  if (s != EG_OK) return s;
  /* checked as eg_runtime_set_input checks it: name, dtype, shape */
  char want[128], got[128];
  bool same = out->dtype == d.tensor.dtype && out->rank == d.tensor.rank;
  for (int k = 0; same && k < out->rank; k++) same = out->shape[k] == d.tensor.shape[k];
  if (!same)
    return eg_error(EG_ERR_ARGUMENT, "%s: %s: %s %s, input %s is %s %s: a value of another model",
                    path, d.state_dict ? d.state_dict : d.name, eg_dtype_name(out->dtype),
                    eg_fmt_ints(got, sizeof got, out->shape, out->rank), d.name,
                    eg_dtype_name(d.tensor.dtype),
                    eg_fmt_ints(want, sizeof want, d.tensor.shape, d.tensor.rank));
  return EG_OK;
}

static eg_status read_weights(const eg_graph *g, const char *path, const bool *skip,
                              eg_tensor *vals) {
  struct stat st;
  if (stat(path, &st) != 0)
    return eg_error(EG_ERR_IO, "%s: cannot open (%s)", path, strerror(errno));
  const bool dir = S_ISDIR(st.st_mode);
  eg_safetensors *f = NULL;
  eg_status s = dir ? EG_OK : eg_safetensors_load_for(path, &f);
  for (int i = 0; s == EG_OK && i < g->n_inputs; i++) {
    eg_tensor_desc d;
    eg_graph_describe(g, true, i, &d);
    if ((d.role != EG_ROLE_PARAMETER && d.role != EG_ROLE_BUFFER) || (skip && skip[i])) continue;
    s = read_one(g, i, path, dir, f, &vals[i]);
  }
  eg_safetensors_destroy(f);
  for (int i = 0; s != EG_OK && i < g->n_inputs; i++) eg_tensor_free(&vals[i]);
  return s;
}

eg_status eg_model_read_weights(const eg_model *m, const char *path, const bool *skip,
                                eg_tensor *values) {
  if (!m || !path || !values)
    return eg_error(EG_ERR_ARGUMENT, "eg_model_read_weights: %s is NULL",
                    !m ? "model" : !path ? "path" : "values");
  return read_weights(m->graph, path, skip, values);
}

eg_status eg_runtime_load_weights(eg_runtime *rt, const char *path) {
  if (!rt || !path)
    return eg_error(EG_ERR_ARGUMENT, "eg_runtime_load_weights: %s is NULL", !rt ? "runtime" : "path");
  const eg_graph *g = eg_runtime_graph(rt);
  eg_tensor *vals = calloc((size_t)g->n_inputs + 1, sizeof *vals);
  if (!vals) return eg_error(EG_ERR_NOMEM, "eg_runtime_load_weights: out of memory");
  eg_status s = read_weights(g, path, NULL, vals);
  for (int i = 0; i < g->n_inputs; i++) {
    if (s == EG_OK && vals[i].data) s = eg_runtime_set_input(rt, g->inputs[i].name, &vals[i]);
    eg_tensor_free(&vals[i]);
  }
  free(vals);
  return s;
}
