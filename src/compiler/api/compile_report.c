/* compile_report.c — eg_compile_report_* of the public API: the placement for a SoC of the nodes of a
 * model's compiled graph (the graph after the pass pipeline, program.h; partition.h does the
 * placing) and its JSON form (docs/report-format.md).
 *
 * A report copies the node names and targets it shows, so it outlives the model. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/api/compile_options.h"
#include "api/struct_size.h"
#include "api/targets.h"
#include "compiler/compile.h"
#include "ops/cost.h"
#include "runtime/model.h"
#include "util/error.h"
#include "util/file.h"
#include "util/log.h"

#define EG_REPORT_FORMAT "edgegrad.placement"
#define EG_REPORT_VERSION 1

struct eg_compile_report {
  const eg_target *target;
  eg_precision precision; /* the options' (FP32 or FP16): what the NPU partitions' floats are */
  eg_partitioning part;   /* its arena also holds names[] and targets[] */
  const char **names;     /* per node */
  const char **targets;   /* per node, as traced */
  const char **sources;   /* per node: the traced node a pass made it from, or NULL */
  double *flops;          /* per node: eg_node_flops of the compiled graph's node */
  double flops_total, flops_npu;
};

/* "N of M nodes would run on the CPU (a: why; b: why; c: why; and K more)". */
static eg_status no_fallback_error(const eg_compile_report *r) {
  int n_cpu = 0;
  char listed[1024] = "";
  size_t used = 0;
  for (int32_t i = 0; i < r->part.n_nodes; i++) {
    if (r->part.nodes[i].npu) continue;
    if (n_cpu++ < 3 && used < sizeof listed)
      used += (size_t)snprintf(listed + used, sizeof listed - used, "%s%s: %s",
                               n_cpu > 1 ? "; " : "", r->names[i], r->part.nodes[i].reason);
  }
  if (n_cpu > 3 && used < sizeof listed)
    snprintf(listed + used, sizeof listed - used, "; and %d more", n_cpu - 3);
  return eg_error(EG_ERR_UNSUPPORTED, "compile for %s: %d of %d nodes would run on the CPU (%s): "
                  "--no-fallback requires every node on the NPU", r->target->soc, n_cpu,
                  r->part.n_nodes, listed);
}

/* eg_program_place with the --dump-after text going to the log callback, one message per dump
 * (each "# after PASS" line starts a new one). */
static eg_status place(const eg_graph *g, const eg_partition_options *popt, const char *dump_after,
                       eg_graph **compiled, eg_partitioning *part) {
  if (!dump_after || !eg_log_enabled())
    return eg_program_place(g, popt, dump_after, NULL, compiled, part);
  char *text = NULL;
  size_t size = 0;
  FILE *dump = open_memstream(&text, &size);
  if (!dump) return eg_error(EG_ERR_NOMEM, "compile: out of memory for the --dump-after text");
  eg_status s = eg_program_place(g, popt, dump_after, dump, compiled, part);
  fclose(dump);
  for (char *at = text; at && *at;) {
    char *next = strstr(at + 1, "# after ");
    while (next && next[-1] != '\n') next = strstr(next + 1, "# after ");
    if (next) next[-1] = '\0';
    eg_log_text(EG_LOG_DEBUG, at);
    at = next;
  }
  free(text);
  return s;
}

static eg_status copy_names(eg_compile_report *r, const eg_graph *g) {
  eg_arena *a = r->part.arena;
  r->names = eg_arena_array(a, (size_t)g->n_nodes + 1, sizeof(char *));
  r->targets = eg_arena_array(a, (size_t)g->n_nodes + 1, sizeof(char *));
  r->sources = eg_arena_array(a, (size_t)g->n_nodes + 1, sizeof(char *));
  r->flops = eg_arena_array(a, (size_t)g->n_nodes + 1, sizeof(double));
  if (!r->names || !r->targets || !r->sources || !r->flops)
    return eg_error(EG_ERR_NOMEM, "compile: out of memory");
  for (int32_t i = 0; i < g->n_nodes; i++) {
    r->names[i] = eg_arena_strdup(a, g->nodes[i].name);
    if (g->nodes[i].source && !(r->sources[i] = eg_arena_strdup(a, g->nodes[i].source)))
      return eg_error(EG_ERR_NOMEM, "compile: out of memory");
    r->targets[i] = eg_op_target(g->nodes[i].op); /* static */
    if (!r->names[i]) return eg_error(EG_ERR_NOMEM, "compile: out of memory");
    r->flops[i] = eg_node_flops(g, &g->nodes[i]);
    r->flops_total += r->flops[i];
    if (r->part.nodes[i].npu) r->flops_npu += r->flops[i];
  }
  return EG_OK;
}

eg_status eg_compile_report_create(const eg_model *model, const eg_compile_options *options,
                                   eg_compile_report **out) {
  if (!out) return eg_error(EG_ERR_ARGUMENT, "eg_compile_report_create: out is NULL");
  *out = NULL;
  if (!model || !options)
    return eg_error(EG_ERR_ARGUMENT, "eg_compile_report_create: model and options are required");
  EG_TRY(eg_api_require_graph(model, "eg_compile_report_create"));
  eg_compile_options o;
  eg_partition_options popt;
  EG_TRY(eg_api_partition_options(options, "eg_compile_report_create", &o, &popt));
  eg_compile_report *r = calloc(1, sizeof *r);
  if (!r) return eg_error(EG_ERR_NOMEM, "compile: out of memory");
  r->target = popt.target;
  r->precision = eg_api_precision(&o, popt.target);
  eg_graph *compiled = NULL; /* the graph after the passes: the nodes that are placed */
  eg_status s = place(model->graph, &popt, o.dump_after, &compiled, &r->part);
  if (s == EG_OK) s = copy_names(r, compiled);
  eg_graph_destroy(compiled);
  if (s != EG_OK) {
    eg_compile_report_destroy(r);
    return s;
  }
  *out = r;
  for (int32_t i = 0; o.no_fallback && i < r->part.n_nodes; i++)
    if (!r->part.nodes[i].npu) return no_fallback_error(r);
  return EG_OK;
}

void eg_compile_report_destroy(eg_compile_report *r) {
  if (!r) return;
  eg_partitioning_free(&r->part);
  free(r);
}

const char *eg_compile_report_precision(const eg_compile_report *r) {
  return r ? eg_precision_name(r->precision) : NULL;
}

void(eg_compile_report_target)(const eg_compile_report *r, eg_target_info *out,
                               size_t out_size) {
  if (!out) return;
  (void)eg_target_info_write(r ? r->target : NULL, out, out_size, "eg_compile_report_target");
}

int eg_compile_report_num_nodes(const eg_compile_report *r) { return r ? r->part.n_nodes : 0; }

eg_status(eg_compile_report_node)(const eg_compile_report *r, int index, eg_placement_info *out,
                                  size_t out_size) {
  if (!r || !out)
    return eg_error(EG_ERR_ARGUMENT, "eg_compile_report_node: %s is NULL", r ? "out" : "report");
  if (index < 0 || index >= r->part.n_nodes)
    return eg_error(EG_ERR_ARGUMENT, "eg_compile_report_node: index %d out of range [0, %d)",
                    index, r->part.n_nodes);
  const eg_node_placement *p = &r->part.nodes[index];
  const eg_placement_info info = {.name = r->names[index], .target = r->targets[index],
                                  .placement = p->npu ? EG_PLACEMENT_NPU : EG_PLACEMENT_CPU,
                                  .partition = p->partition, .reason = p->reason,
                                  .source = r->sources[index], .flops = r->flops[index]};
  return EG_STRUCT_WRITE(eg_placement_info, out, out_size, &info, "eg_compile_report_node");
}

void eg_compile_report_flops(const eg_compile_report *r, double *total, double *npu) {
  if (total) *total = r ? r->flops_total : 0;
  if (npu) *npu = r ? r->flops_npu : 0;
}

int eg_compile_report_num_partitions(const eg_compile_report *r) {
  return r ? r->part.n_partitions : 0;
}

eg_status eg_compile_report_partition(const eg_compile_report *r, int index, int *num_nodes,
                                      const int32_t **nodes) {
  if (!r || !num_nodes || !nodes)
    return eg_error(EG_ERR_ARGUMENT, "eg_compile_report_partition: %s is NULL",
                    !r ? "report" : !num_nodes ? "num_nodes" : "nodes");
  if (index < 0 || index >= r->part.n_partitions)
    return eg_error(EG_ERR_ARGUMENT, "eg_compile_report_partition: index %d out of range "
                    "[0, %d)", index, r->part.n_partitions);
  *num_nodes = r->part.partitions[index].n_nodes;
  *nodes = r->part.partitions[index].nodes;
  return EG_OK;
}

int eg_compile_report_num_warnings(const eg_compile_report *r) {
  return r ? r->part.n_warnings : 0;
}

const char *eg_compile_report_warning(const eg_compile_report *r, int index) {
  return r && index >= 0 && index < r->part.n_warnings ? r->part.warnings[index] : NULL;
}

int eg_compile_report_num_notes(const eg_compile_report *r) { return r ? r->part.n_notes : 0; }

const char *eg_compile_report_note(const eg_compile_report *r, int index) {
  return r && index >= 0 && index < r->part.n_notes ? r->part.notes[index] : NULL;
}

/* ---- JSON ---- */

/* A JSON string of `s`; bytes that are not valid UTF-8 (a skip name from a command line, in a
 * warning) become '?' rather than failing the whole report. */
static json_t *json_text(const char *s) {
  json_t *j = json_string(s);
  if (j) return j;
  char *copy = strdup(s);
  if (!copy) return NULL;
  for (char *c = copy; *c; c++)
    if ((unsigned char)*c >= 0x80) *c = '?';
  j = json_string(copy);
  free(copy);
  return j;
}

static json_t *nodes_json(const eg_compile_report *r) {
  json_t *arr = json_array();
  for (int32_t i = 0; arr && i < r->part.n_nodes; i++) {
    const eg_node_placement *p = &r->part.nodes[i];
    json_t *o = json_pack("{s:s, s:s, s:s, s:o, s:o, s:I}", "name", r->names[i], "target",
                          r->targets[i], "placement", p->npu ? "npu" : "cpu", "partition",
                          p->npu ? json_integer(p->partition) : json_null(), "reason",
                          p->npu ? json_null() : json_text(p->reason), "flops",
                          (json_int_t)llround(r->flops[i]));
    if (o && r->sources[i] && json_object_set_new(o, "source", json_text(r->sources[i])) != 0) {
      json_decref(o);
      o = NULL;
    }
    if (!o || json_array_append_new(arr, o) != 0) {
      json_decref(arr);
      return NULL;
    }
  }
  return arr;
}

static json_t *partitions_json(const eg_compile_report *r) {
  json_t *arr = json_array();
  for (int32_t k = 0; arr && k < r->part.n_partitions; k++) {
    const eg_partition *part = &r->part.partitions[k];
    json_t *names = json_array();
    for (int32_t j = 0; names && j < part->n_nodes; j++)
      if (json_array_append_new(names, json_string(r->names[part->nodes[j]])) != 0) {
        json_decref(names);
        names = NULL;
      }
    json_t *o = names ? json_pack("{s:i, s:s, s:o}", "id", (int)k, "precision",
                                  eg_precision_name(r->precision), "nodes", names)
                      : NULL;
    if (!o || json_array_append_new(arr, o) != 0) {
      json_decref(arr);
      return NULL;
    }
  }
  return arr;
}

static json_t *lines_json(const char *const *lines, int32_t n) {
  json_t *arr = json_array();
  for (int32_t i = 0; arr && i < n; i++)
    if (json_array_append_new(arr, json_text(lines[i])) != 0) {
      json_decref(arr);
      arr = NULL;
    }
  return arr;
}

static json_t *report_json(const eg_compile_report *r) {
  json_t *warnings = lines_json(r->part.warnings, r->part.n_warnings);
  json_t *notes = lines_json(r->part.notes, r->part.n_notes);
  json_t *nodes = nodes_json(r), *parts = partitions_json(r);
  if (!warnings || !notes || !nodes || !parts) {
    json_decref(warnings);
    json_decref(notes);
    json_decref(nodes);
    json_decref(parts);
    return NULL;
  }
  const eg_target *t = r->target;
  const double share = r->flops_total > 0 ? r->flops_npu / r->flops_total : 0;
  /* "o" steals the references, also when json_pack fails */
  return json_pack("{s:s, s:i, s:s, s:s, s:i, s:b, s:s, s:{s:I, s:I, s:f}, s:o, s:o, s:o, s:o}",
                   "format", EG_REPORT_FORMAT, "version", EG_REPORT_VERSION, "soc", t->soc,
                   "product", t->product, "htp_arch", t->htp_arch, "fp16",
                   (t->features & EG_NPU_FEATURE_FLOAT) != 0, "precision",
                   eg_precision_name(r->precision), "flops", "total",
                   (json_int_t)llround(r->flops_total), "npu", (json_int_t)llround(r->flops_npu),
                   "npu_share", share, "nodes", nodes, "partitions", parts, "warnings", warnings,
                   "notes", notes);
}

eg_status eg_compile_report_write_json(const eg_compile_report *r, const char *path) {
  if (!r || !path)
    return eg_error(EG_ERR_ARGUMENT, "eg_compile_report_write_json: report and path are "
                    "required");
  json_t *root = report_json(r);
  char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
  json_decref(root);
  if (!text) return eg_error(EG_ERR_NOMEM, "%s: out of memory writing the report", path);
  eg_file_part parts[2] = {{text, strlen(text)}, {"\n", 1}};
  eg_status s = eg_file_write_atomic(path, parts, 2);
  free(text);
  return s;
}
