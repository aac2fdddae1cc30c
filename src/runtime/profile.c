/* profile.c — per-step costs and the Chrome trace of the runtime's profile (profile.h). */
#include "runtime/profile.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cost.h"
#include "util/error.h"
#include "util/file.h"

static void cpu_entry(const eg_graph *g, const eg_node *n, eg_profile_entry *e) {
  *e = (eg_profile_entry){.name = n->name, .op = eg_op_target(n->op), .target = "cpu",
                          .n_nodes = 1, .flops = eg_node_flops(g, n),
                          .bytes = eg_node_bytes(g, n)};
}

eg_status eg_run_profile_create(const eg_graph *g, const eg_program *p, eg_npu_step **npu,
                                eg_run_profile **out) {
  *out = NULL;
  eg_run_profile *prof = calloc(1, sizeof *prof);
  const int32_t n = p ? p->n_steps : g->n_nodes;
  const int32_t n_parts = p ? p->parts.n_partitions : 0;
  enum { NAME = 24 };
  if (prof) {
    prof->n = n;
    prof->e = calloc((size_t)n + 1, sizeof *prof->e);
    prof->names = malloc((size_t)n_parts * NAME + 1);
    prof->op_times = calloc((size_t)n + 1, sizeof *prof->op_times);
  }
  if (!prof || !prof->e || !prof->names || !prof->op_times) {
    eg_run_profile_destroy(prof);
    return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory for the profile");
  }
  for (int32_t k = 0; k < n; k++) {
    if (!p) {
      cpu_entry(g, &g->nodes[k], &prof->e[k]);
      continue;
    }
    const eg_program_step *st = &p->steps[k];
    if (st->partition < 0) {
      cpu_entry(g, &g->nodes[st->node], &prof->e[k]);
      continue;
    }
    const eg_partition *part = &p->parts.partitions[st->partition];
    char *name = prof->names + (size_t)st->partition * NAME;
    snprintf(name, NAME, "partition %d", st->partition);
    eg_profile_entry *e = &prof->e[k];
    *e = (eg_profile_entry){.name = name, .op = "npu partition", .target = "npu",
                            .n_nodes = part->n_nodes};
    for (int32_t j = 0; j < part->n_nodes; j++) {
      e->flops += eg_node_flops(g, &g->nodes[part->nodes[j]]);
      e->bytes += eg_node_bytes(g, &g->nodes[part->nodes[j]]);
    }
    const eg_lowered *lp = &p->lowered[st->partition];
    eg_npu_partition_info info = {0};
    lp->backend->describe(lp->graph, &info);
    const size_t n_ops = (size_t)info.num_ops;
    prof->op_times[k] = calloc(2 * n_ops + 1, sizeof(int64_t));
    if (!prof->op_times[k]) {
      eg_run_profile_destroy(prof);
      return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory for the profile");
    }
    eg_npu_step_set_op_times(npu[st->partition], prof->op_times[k]);
  }
  prof->program = p;
  *out = prof;
  return EG_OK;
}

void eg_run_profile_destroy(eg_run_profile *prof) {
  if (!prof) return;
  for (int32_t k = 0; prof->op_times && k < prof->n; k++) free(prof->op_times[k]);
  free(prof->op_times);
  free(prof->e);
  free(prof->names);
  free(prof);
}

/* ---- the Chrome trace ---- */

typedef struct text {
  char *s;
  size_t n, cap;
  bool oom;
} text;

static void put(text *t, const char *fmt, ...) {
  for (;;) {
    if (t->oom) return;
    va_list ap;
    va_start(ap, fmt);
    const int w = vsnprintf(t->s ? t->s + t->n : NULL, t->s ? t->cap - t->n : 0, fmt, ap);
    va_end(ap);
    if (w < 0) {
      t->oom = true;
      return;
    }
    if (t->s && (size_t)w < t->cap - t->n) {
      t->n += (size_t)w;
      return;
    }
    size_t cap = t->cap ? t->cap * 2 : 4096;
    while (cap < t->n + (size_t)w + 1) cap *= 2;
    char *s = realloc(t->s, cap);
    if (!s) {
      t->oom = true;
      return;
    }
    t->s = s;
    t->cap = cap;
  }
}

/* `s` as a JSON string. */
static void put_string(text *t, const char *s) {
  put(t, "\"");
  for (const unsigned char *c = (const unsigned char *)s; c && *c; c++) {
    if (*c == '"' || *c == '\\') put(t, "\\%c", *c);
    else if (*c < 0x20) put(t, "\\u%04x", *c);
    else put(t, "%c", *c);
  }
  put(t, "\"");
}

/* An NPU step's ops (QNN ops for htp) as events nested in its own (each op is named after the
 * node it comes from); ops folded at create did not run and have none. */
static void put_ops(text *t, const eg_run_profile *prof, int32_t k) {
  const eg_lowered *lp = &prof->program->lowered[prof->program->steps[k].partition];
  const int64_t *times = prof->op_times[k];
  eg_npu_partition_info info = {0};
  lp->backend->describe(lp->graph, &info);
  for (int32_t j = 0; j < info.num_ops; j++) {
    if (!times[2 * j]) continue;
    eg_npu_op_info op = {0};
    lp->backend->describe_op(lp->graph, j, &op);
    put(t, ",\n{\"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"name\": ");
    put_string(t, op.name);
    put(t, ", \"cat\": \"qnn\", \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"op\": \"%s\"}}",
        (double)(times[2 * j] - prof->t0) / 1e3, (double)times[2 * j + 1] / 1e3,
        op.type);
  }
}

eg_status eg_run_profile_write_trace(const eg_run_profile *prof, const char *path) {
  text t = {0};
  put(&t, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  for (int32_t k = 0; k < prof->n; k++) {
    const eg_profile_entry *e = &prof->e[k];
    put(&t, "%s{\"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"name\": ", k ? ",\n" : "");
    put_string(&t, e->name);
    put(&t, ", \"cat\": \"%s\", \"ts\": %.3f, \"dur\": %.3f, \"args\": {\"op\": ", e->target,
        (double)e->start_ns / 1e3, (double)e->ns / 1e3);
    put_string(&t, e->op);
    put(&t, ", \"nodes\": %d, \"flops\": %.0f, \"bytes\": %" PRId64 ", \"convert_us\": %.3f}}",
        e->n_nodes, e->flops, e->bytes, (double)e->convert_ns / 1e3);
    if (prof->op_times[k]) put_ops(&t, prof, k);
  }
  put(&t, "\n]}\n");
  if (t.oom) {
    free(t.s);
    return eg_error(EG_ERR_NOMEM, "profile trace %s: out of memory", path);
  }
  const eg_file_part part = {t.s, t.n};
  eg_status s = eg_file_write_atomic(path, &part, 1);
  free(t.s);
  return s;
}
