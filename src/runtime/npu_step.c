/* npu_step.c — see npu_step.h. */
#include "runtime/npu_step.h"

#include <stdlib.h>
#include <string.h>

#include "util/error.h"

typedef struct staged {
  const eg_value *v;  /* the IR value's type */
  void *ir;           /* its runtime buffer */
  void *stage;        /* the bound buffer (NHWC for rank 4) */
  bool nhwc;
} staged;

struct eg_npu_step {
  eg_qnn_executor *ex;
  int32_t n_in, n_out;
  staged *in, *out;
  eg_qnn_binding *bin, *bout; /* bout: one per distinct output tensor */
  int32_t n_bout;
  int32_t *out_binding;       /* per output boundary: its binding index */
};

/* NCHW <-> NHWC for element size es; to_nhwc chooses the direction. */
static void permute_nc(const unsigned char *src, unsigned char *dst, const int64_t *s, size_t es,
                       bool to_nhwc) {
  int64_t n = s[0], c = s[1], hw = s[2] * s[3];
  for (int64_t b = 0; b < n; b++)
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t p = 0; p < hw; p++) {
        size_t nchw = (size_t)((b * c + ch) * hw + p), nhwc = (size_t)((b * hw + p) * c + ch);
        if (to_nhwc) memcpy(dst + nhwc * es, src + nchw * es, es);
        else memcpy(dst + nchw * es, src + nhwc * es, es);
      }
}

static eg_status stage_all(const eg_graph *g, const eg_htp_boundary *b, int32_t n,
                           void *const *data, staged *st) {
  for (int32_t k = 0; k < n; k++) {
    const eg_value *v = &g->values[b[k].value];
    st[k] = (staged){.v = v, .ir = data[b[k].value], .nhwc = b[k].nhwc};
    st[k].stage = aligned_alloc(64, (eg_value_nbytes(v) + 64) & ~(size_t)63);
    if (!st[k].stage) return eg_error(EG_ERR_NOMEM, "npu step: out of memory");
  }
  return EG_OK;
}

static eg_status bind(eg_npu_step *s, const eg_htp_partition *hp) {
  s->bin = calloc((size_t)s->n_in + 1, sizeof *s->bin);
  s->bout = calloc((size_t)s->n_out + 1, sizeof *s->bout);
  s->out_binding = calloc((size_t)s->n_out + 1, sizeof(int32_t));
  if (!s->bin || !s->bout || !s->out_binding) return eg_error(EG_ERR_NOMEM, "npu step: out of memory");
  for (int32_t k = 0; k < s->n_in; k++)
    s->bin[k] = (eg_qnn_binding){hp->inputs[k].tensor, s->in[k].stage, eg_value_nbytes(s->in[k].v)};
  for (int32_t k = 0; k < s->n_out; k++) {
    int32_t j = 0;
    while (j < s->n_bout && s->bout[j].tensor != hp->outputs[k].tensor) j++;
    if (j == s->n_bout)
      s->bout[s->n_bout++] = (eg_qnn_binding){hp->outputs[k].tensor, s->out[k].stage,
                                               eg_value_nbytes(s->out[k].v)};
    s->out_binding[k] = j;
  }
  return EG_OK;
}

eg_status eg_npu_step_create(const eg_graph *g, const eg_htp_partition *hp, void *const *data,
                             eg_npu_step **out) {
  *out = NULL;
  eg_npu_step *s = calloc(1, sizeof *s);
  if (!s) return eg_error(EG_ERR_NOMEM, "npu step: out of memory");
  s->n_in = hp->n_inputs;
  s->n_out = hp->n_outputs;
  s->in = calloc((size_t)s->n_in + 1, sizeof(staged));
  s->out = calloc((size_t)s->n_out + 1, sizeof(staged));
  eg_status st = s->in && s->out ? EG_OK : eg_error(EG_ERR_NOMEM, "npu step: out of memory");
  if (st == EG_OK) st = stage_all(g, hp->inputs, s->n_in, data, s->in);
  if (st == EG_OK) st = stage_all(g, hp->outputs, s->n_out, data, s->out);
  if (st == EG_OK) st = bind(s, hp);
  if (st == EG_OK) st = eg_qnn_executor_create(hp->graph, &s->ex);
  if (st != EG_OK) {
    eg_npu_step_destroy(s);
    return st;
  }
  *out = s;
  return EG_OK;
}

void eg_npu_step_destroy(eg_npu_step *s) {
  if (!s) return;
  eg_qnn_executor_destroy(s->ex);
  for (int32_t k = 0; s->in && k < s->n_in; k++) free(s->in[k].stage);
  for (int32_t k = 0; s->out && k < s->n_out; k++) free(s->out[k].stage);
  free(s->in);
  free(s->out);
  free(s->bin);
  free(s->bout);
  free(s->out_binding);
  free(s);
}

static void copy_value(const staged *st, bool into_stage, const void *from_stage) {
  size_t es = eg_dtype_size(st->v->dtype), nb = eg_value_nbytes(st->v);
  if (into_stage) {
    if (st->nhwc) permute_nc(st->ir, st->stage, st->v->shape, es, true);
    else memcpy(st->stage, st->ir, nb);
  } else {
    if (st->nhwc) permute_nc(from_stage, st->ir, st->v->shape, es, false);
    else memcpy(st->ir, from_stage, nb);
  }
}

eg_status eg_npu_step_run(eg_npu_step *s) {
  for (int32_t k = 0; k < s->n_in; k++) copy_value(&s->in[k], true, NULL);
  EG_TRY(eg_qnn_executor_execute(s->ex, s->bin, s->n_in, s->bout, s->n_bout));
  for (int32_t k = 0; k < s->n_out; k++) copy_value(&s->out[k], false, s->bout[s->out_binding[k]].data);
  return EG_OK;
}
