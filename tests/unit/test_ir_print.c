/* test_ir_print.c — the text IR (ir/print.h) of tests/data/tiny_step.json: the header, inputs,
 * statics, nodes with traced arguments (ints, lists, bools, None, dtypes, layouts, tuples, a
 * getitem of a masked element) and outputs, spot-checked line by line; and floats print so
 * they read back as floats. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgegrad.h"
#include "eg_test.h"
#include "ir/print.h"
#include "runtime/model.h"

/* The printed text of `g` (malloc'd). */
static char *print_to_string(const eg_graph *g) {
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  if (!f) return NULL;
  eg_graph_print(g, f);
  fclose(f);
  return text;
}

/* `line` occurs in `text` as a whole line. */
static int has_line(const char *text, const char *line) {
  size_t n = strlen(line);
  for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
    if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0')) return 1;
  return 0;
}

#define CHECK_LINE(text, line) EG_CHECK_MSG(has_line(text, line), "missing line: %s", line)

static void test_tiny_step(void) {
  eg_model *m = NULL;
  EG_CHECK(eg_model_load(EG_TEST_DATA "/tiny_step.json", &m) == EG_OK);
  if (!m) return;
  char *text = print_to_string(m->graph);
  EG_CHECK(text != NULL);
  if (text) {
    char header[128];
    snprintf(header, sizeof header, "graph: %d inputs, 1 static, %d nodes, %d outputs",
             m->graph->n_inputs, m->graph->n_nodes, m->graph->n_outputs);
    CHECK_LINE(text, header);
    CHECK_LINE(text, "input input: %0 float32[2, 1, 12, 12]");
    CHECK_LINE(text, "static 0.weight: %7 float32[4, 1, 3, 3] (144 bytes)");
    CHECK_LINE(text, "node convolution: %8 float32[2, 4, 6, 6] = aten.convolution.default(%0, %7, "
                     "%2, [2, 2], [1, 1], [1, 1], False, [0, 0], 1)");
    CHECK_LINE(text, "node nll_loss_forward: %19 (%20, %21) = "
                     "aten.nll_loss_forward.default(%16, %1, None, 1, -100)");
    CHECK_LINE(text, "node ones_like: %24 float32[] = aten.ones_like.default(%22, dtype=float32, "
                     "layout=strided, device=cpu, pin_memory=False, "
                     "memory_format=preserve_format)");
    CHECK_LINE(text, "node getitem_5: _ = getitem(%48, 0)");
    CHECK_LINE(text, "node convolution_backward_1: %48 (None, %49, %50) = "
                     "aten.convolution_backward.default(%47, %0, %7, [4], [2, 2], [1, 1], "
                     "[1, 1], False, [0, 0], 1, [False, False, True])");
    CHECK_LINE(text, "output loss: %22");
    CHECK_LINE(text, "output grad_0_bias: %52");
    /* one line per input, static, node and output, plus the header */
    int lines = 0;
    for (const char *p = text; *p; p++) lines += *p == '\n';
    EG_CHECK(lines == 1 + m->graph->n_inputs + m->graph->n_statics + m->graph->n_nodes +
                          m->graph->n_outputs);
  }
  free(text);
  eg_model_destroy(m);
}

/* Floats keep a '.', an exponent or their inf/nan spelling, so they never read as ints. */
static void test_floats(void) {
  eg_model *m = NULL;
  EG_CHECK(eg_model_load(EG_TEST_DATA "/tiny_step.json", &m) == EG_OK);
  if (!m) return;
  eg_node *n = &m->graph->nodes[0];
  eg_arg saved = n->args[8];
  static const struct {
    double f;
    const char *want;
  } cases[] = {{2.0, ", 2.0)"}, {0.1, ", 0.1)"}, {-1e-30, ", -1e-30)"}, {1.0 / 0.0, ", inf)"}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    n->args[8] = (eg_arg){.kind = EG_ARG_FLOAT, .f = cases[k].f};
    char *text = print_to_string(m->graph);
    char line[256];
    snprintf(line, sizeof line, "[0, 0]%s\n", cases[k].want);
    EG_CHECK_MSG(text && strstr(text, line), "float %g: no '%s'", cases[k].f, cases[k].want);
    free(text);
  }
  n->args[8] = saved;
  eg_model_destroy(m);
}

int main(void) {
  EG_RUN(test_tiny_step);
  EG_RUN(test_floats);
  return eg_test_summary();
}
