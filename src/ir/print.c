/* print.c — the graph's text form (see print.h). Reads the graph only. */
#include "ir/print.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void print_type(const eg_value *v, FILE *out) {
  fprintf(out, "%s[", eg_dtype_name(v->dtype));
  for (int d = 0; d < v->rank; d++) fprintf(out, "%s%lld", d ? ", " : "", (long long)v->shape[d]);
  fputc(']', out);
  /* compiler annotations (graph.h), in braces: {nhwc, npu int32, q int8 axis 0 scale ... zp ...} */
  const eg_quant *q = v->quant;
  if (v->axes == EG_AXES_TRACED && !v->npu_int32 && !q) return;
  const char *sep = "";
  fputc('{', out);
  if (v->axes == EG_AXES_NHWC) fputs("nhwc", out), sep = ", ";
  if (v->npu_int32) fprintf(out, "%snpu int32", sep), sep = ", ";
  if (q) {
    fprintf(out, "%sq %s [%lld, %lld]", sep, eg_dtype_name(q->dtype), (long long)q->qmin,
            (long long)q->qmax);
    if (q->axis >= 0) fprintf(out, " axis %d", q->axis);
    for (int32_t i = 0; i < q->n && i < 4; i++)
      fprintf(out, " %s%.9g/%lld", i ? "" : "scale/zp ", q->scale[i], (long long)q->zero_point[i]);
    if (q->n > 4) fprintf(out, " ... (%d)", q->n);
  }
  fputc('}', out);
}

/* %id and its type: "%7 float32[2, 3]" or "%9 (%10, None)". */
static void print_value(const eg_graph *g, int32_t id, FILE *out) {
  if (id < 0 || id >= g->n_values) {
    fprintf(out, "%%%d ?", id);
    return;
  }
  const eg_value *v = &g->values[id];
  fprintf(out, "%%%d ", id);
  if (v->kind == EG_VALUE_TENSOR) {
    print_type(v, out);
    return;
  }
  fputc('(', out);
  for (int32_t e = 0; e < v->n_elems; e++) {
    if (e) fputs(", ", out);
    if (v->elems[e] < 0) fputs("None", out);
    else fprintf(out, "%%%d", v->elems[e]);
  }
  fputc(')', out);
}

static void print_float(double f, FILE *out) {
  if (isnan(f)) {
    fputs("nan", out);
    return;
  }
  if (isinf(f)) {
    fputs(f < 0 ? "-inf" : "inf", out);
    return;
  }
  char buf[40];
  snprintf(buf, sizeof buf, "%.17g", f);
  /* the shortest of %.9g..%.17g that reads back exactly */
  for (int p = 9; p < 17; p++) {
    char t[40];
    snprintf(t, sizeof t, "%.*g", p, f);
    if (strtod(t, NULL) == f) {
      memcpy(buf, t, sizeof t);
      break;
    }
  }
  fputs(buf, out);
  if (!strpbrk(buf, ".e")) fputs(".0", out);
}

static void print_arg(const eg_arg *a, FILE *out) {
  switch (a->kind) {
  case EG_ARG_NONE: fputs("None", out); break;
  case EG_ARG_INT: fprintf(out, "%lld", (long long)a->i); break;
  case EG_ARG_FLOAT: print_float(a->f, out); break;
  case EG_ARG_BOOL: fputs(a->b ? "True" : "False", out); break;
  case EG_ARG_VALUE: fprintf(out, "%%%d", a->value); break;
  case EG_ARG_LIST:
    fputc('[', out);
    for (int32_t i = 0; i < a->list.n; i++) {
      if (i) fputs(", ", out);
      print_arg(&a->list.items[i], out);
    }
    fputc(']', out);
    break;
  case EG_ARG_DTYPE: fputs(eg_dtype_name(a->dtype), out); break;
  case EG_ARG_LAYOUT:
  case EG_ARG_DEVICE:
  case EG_ARG_MEMORY_FORMAT: fputs(a->str ? a->str : "?", out); break;
  case EG_ARG_STR: fprintf(out, "'%s'", a->str ? a->str : "?"); break;
  default: fputs("?", out); break;
  }
}

static void print_node(const eg_graph *g, const eg_node *n, FILE *out) {
  fprintf(out, "node %s: ", n->name);
  if (n->output < 0) fputc('_', out);
  else print_value(g, n->output, out);
  fprintf(out, " = %s(", (unsigned)n->op < EG_OP_COUNT ? eg_op_target(n->op) : "?");
  for (int32_t a = 0; a < n->n_args; a++) {
    if (a) fputs(", ", out);
    print_arg(&n->args[a], out);
  }
  for (int32_t k = 0; k < n->n_kwargs; k++) {
    fprintf(out, "%s%s=", n->n_args + k ? ", " : "", n->kwarg_names[k]);
    print_arg(&n->kwargs[k], out);
  }
  fputs(")\n", out);
}

void eg_graph_print(const eg_graph *g, FILE *out) {
  fprintf(out, "graph: %d input%s, %d static%s, %d node%s, %d output%s\n", g->n_inputs,
          g->n_inputs == 1 ? "" : "s", g->n_statics, g->n_statics == 1 ? "" : "s", g->n_nodes,
          g->n_nodes == 1 ? "" : "s", g->n_outputs, g->n_outputs == 1 ? "" : "s");
  for (int32_t i = 0; i < g->n_inputs; i++) {
    fprintf(out, "input %s: ", g->inputs[i].name);
    print_value(g, g->inputs[i].value, out);
    fputc('\n', out);
  }
  for (int32_t i = 0; i < g->n_statics; i++) {
    fprintf(out, "static %s: ", g->statics[i].name);
    print_value(g, g->statics[i].value, out);
    fprintf(out, " (%zu bytes)\n", g->statics[i].nbytes);
  }
  for (int32_t i = 0; i < g->n_nodes; i++) print_node(g, &g->nodes[i], out);
  for (int32_t i = 0; i < g->n_outputs; i++) fprintf(out, "output %s: %%%d\n", g->outputs[i].name,
                                                     g->outputs[i].value);
}
