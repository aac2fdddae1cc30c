/* npu_step.c — see npu_step.h. */
#include "runtime/npu_step.h"

#include <stdlib.h>
#include <string.h>

#include "ir/edit.h"
#include "kernels/transpose_f32.h"
#include "ops/op.h"
#include "util/clock.h"
#include "util/error.h"

typedef struct staged {
  int32_t value;      /* the IR value */
  const eg_value *v;  /* its type */
  void *ir;           /* its runtime buffer */
  void *stage;        /* the bound buffer: `ir` itself unless converted, else in the work block */
  bool nhwc;
  bool narrow;        /* int64 held as int32 by the NPU graph (eg_value.npu_int32) */
  const char *label;  /* the value's name, for run-time errors */
  eg_boundary_qview *q; /* held quantized (eg_boundary.quant): its tensor's grid */
  void *nhwc_ir;      /* converted (narrow or q) and nhwc: the value in NHWC order, IR dtype */
  int32_t repeats;    /* an output: the earlier output whose bytes it repeats, else -1 */
  bool same_tensor;   /* repeats one of the same tensor: bound to its buffer, no staging */
  bool copied;        /* an input copied as it is into a staging buffer (mark_copies) */
} staged;

/* Whether the bound buffer differs from the IR buffer (a layout, width or quantization to
 * convert, or a copy); other values are bound in place. */
static bool converted(const staged *st) { return st->nhwc || st->narrow || st->q || st->copied; }

/* Bytes of the bound buffer: int32 elements for a narrowed int64 value. */
static size_t stage_bytes(const staged *st) {
  if (st->q) return (size_t)eg_value_numel(st->v) * eg_dtype_size(st->q->v.storage);
  return st->narrow ? (size_t)eg_value_numel(st->v) * sizeof(int32_t) : eg_value_nbytes(st->v);
}

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

struct eg_npu_step {
  const eg_backend_executor *backend; /* runs the partition (backends/executor.h) */
  void *ex;
  int32_t program_step;       /* its step in the program's order */
  int32_t n_in, n_out;
  staged *in, *out;
  eg_backend_binding *bin, *bout; /* bout: one per distinct output tensor */
  int32_t n_bout;
  int32_t *out_binding;       /* per output boundary: its binding index */
  size_t staging_bytes;       /* the converted values' buffers, at the start of the work block */
  int32_t n_work;             /* the executor's spans (eg_backend_executor.spans) */
  const eg_backend_span *work;
  size_t *work_at;            /* in one block: each one's offset after the staging (EG_PLAN_NONE:
                                 an op's scratch, in the shared scratch) */
  size_t work_bytes;          /* and the executor's part of the block */
  int32_t n_spans;            /* >= 0: the executor's spans and the staging planned one by one */
  eg_plan_block *spans;
  /* where the runtime's plan put its memory in the activation arena: each span (span_at;
   * EG_PLAN_NONE: a scratch span given no bytes), or else one block (block_at) */
  size_t *span_at;
  size_t block_at;
};

void eg_npu_permute_nc(const void *src, void *dst, const int64_t *s, size_t es, bool to_nhwc) {
  const int64_t n = s[0], c = s[1], hw = s[2] * s[3];
  if (es == 4) {
    const int64_t dims[3] = {n, to_nhwc ? c : hw, to_nhwc ? hw : c};
    static const uint32_t perm[3] = {0, 2, 1};
    eg_transpose_f32(3, dims, perm, src, dst);
    return;
  }
  const unsigned char *x = src;
  unsigned char *y = dst;
  for (int64_t b = 0; b < n; b++)
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t p = 0; p < hw; p++) {
        size_t nchw = (size_t)((b * c + ch) * hw + p), nhwc = (size_t)((b * hw + p) * c + ch);
        if (to_nhwc) memcpy(y + nhwc * es, x + nchw * es, es);
        else memcpy(y + nchw * es, x + nhwc * es, es);
      }
}

static eg_status stage_all(const eg_graph *g, const eg_boundary *b, int32_t n,
                           const bool *held_nhwc, staged *st) {
  for (int32_t k = 0; k < n; k++) {
    const eg_value *v = &g->values[b[k].value];
    /* nhwc is the value's axes (the backend's lowering and .egp reader): rank 4 only */
    if (b[k].nhwc && (v->rank != 4 || v->axes != EG_AXES_NHWC))
      return eg_error(EG_ERR_INVALID, "npu step: boundary value %s (rank %d) is staged NHWC but "
                      "its axes are not: a boundary has its value's axis order",
                      eg_value_label(g, b[k].value), v->rank);
    /* a value the runtime holds NHWC already is bound as it is */
    const bool permute = b[k].nhwc && !(held_nhwc && held_nhwc[b[k].value]);
    st[k] = (staged){.value = b[k].value, .v = v, .nhwc = permute,
                     .narrow = b[k].narrow,
                     .label = eg_value_label(g, b[k].value)};
  }
  return EG_OK;
}

/* Quantized boundaries (pass fold_qdq). The CPU holds a quantized value's float value; the NPU
 * graph its integers (the boundary tensor's fixed-point dtype and encoding). Staging in
 * quantizes (kernels/quant_f32.h, after the NHWC permute), reading out dequantizes (before the
 * permute back): an NPU reader sees q(x), the CPU gets dq(q(x)), which is what the traced QDQ
 * model's readers consume (fold_qdq leaves no CPU reader of the float x itself). */
static eg_status stage_quant_list(const eg_lowered *lp, const eg_boundary *b, int32_t n,
                                  staged *st) {
  for (int32_t k = 0; k < n; k++) {
    if (!b[k].quant) continue;
    st[k].q = calloc(1, sizeof *st[k].q);
    if (!st[k].q) return eg_error(EG_ERR_NOMEM, "npu step: out of memory");
    EG_TRY(lp->backend->quant_view(lp->graph, b[k].tensor, st[k].q));
  }
  return EG_OK;
}

static eg_status stage_quant(eg_npu_step *s, const eg_lowered *hp) {
  EG_TRY(stage_quant_list(hp, hp->inputs, s->n_in, s->in));
  return stage_quant_list(hp, hp->outputs, s->n_out, s->out);
}

static void unstage_quant(eg_npu_step *s) {
  for (int32_t k = 0; s->in && s->out && k < s->n_in + s->n_out; k++) {
    staged *st = k < s->n_in ? &s->in[k] : &s->out[k - s->n_in];
    if (!st->q) continue;
    eg_boundary_qview_free(st->q);
    free(st->q);
  }
}

/* Outputs holding the same values alike (same dtype, shape, axis order and conversion): of one
 * tensor, or a copy of another output (a detach the backward reads of a ReLU's result a CPU
 * max pool reads: eg_copy_source, through chains). A later one repeats the first one's bytes,
 * so it is not converted on its own — the runtime plans both on one buffer
 * (eg_npu_step_output_repeats), else run copies the first one's converted bytes; one of the
 * same tensor needs no staging either. */
static bool same_layout(const staged *a, const staged *b) {
  bool same = a->v->dtype == b->v->dtype && a->v->rank == b->v->rank &&
              a->v->axes == b->v->axes && a->nhwc == b->nhwc && a->narrow == b->narrow &&
              !a->q && !b->q;
  for (int d = 0; same && d < a->v->rank; d++) same = a->v->shape[d] == b->v->shape[d];
  return same;
}

int32_t eg_npu_copy_root(const eg_graph *g, int32_t v) {
  for (int32_t hops = 0; hops < g->n_values; hops++) {
    const eg_value *x = &g->values[v];
    const int32_t src = x->role == EG_ROLE_NODE ? eg_copy_source(g, &g->nodes[x->def]) : -1;
    if (src < 0 || src == v) break;
    v = src;
  }
  return v;
}

bool eg_npu_outputs_same_bytes(const eg_lowered *hp, const int32_t *root, int32_t i,
                               int32_t j) {
  return hp->outputs[i].tensor == hp->outputs[j].tensor || root[i] == root[j];
}

static eg_status find_repeats(eg_npu_step *s, const eg_graph *g, const eg_lowered *hp) {
  int32_t *root = malloc(((size_t)s->n_out + 1) * sizeof(int32_t));
  if (!root) return eg_error(EG_ERR_NOMEM, "npu step: out of memory");
  for (int32_t k = 0; k < s->n_in; k++) s->in[k].repeats = -1;
  for (int32_t k = 0; k < s->n_out; k++) {
    staged *st = &s->out[k];
    root[k] = eg_npu_copy_root(g, st->value);
    st->repeats = -1;
    st->same_tensor = false;
    for (int32_t j = 0; j < k && st->repeats < 0; j++)
      if (s->out[j].repeats < 0 && eg_npu_outputs_same_bytes(hp, root, j, k) &&
          same_layout(&s->out[j], st)) {
        st->repeats = j;
        st->same_tensor = s->out_binding[j] == s->out_binding[k];
      }
  }
  free(root);
  return EG_OK;
}

int32_t eg_npu_step_output_repeats(const eg_npu_step *s, int32_t k) {
  return k >= 0 && k < s->n_out && s->out[k].repeats >= 0 ? s->out[s->out[k].repeats].value : -1;
}

/* Offsets of the converted values' buffers in the work block (eg_npu_step_bind turns them
 * into pointers): the bound buffer, and the NHWC-ordered IR-dtype buffer when narrowed or
 * quantized and NHWC. Unconverted values are bound to their IR buffers. */
static void lay_out_staging(eg_npu_step *s) {
  size_t at = 0;
  for (int32_t k = 0; k < s->n_in + s->n_out; k++) {
    staged *st = k < s->n_in ? &s->in[k] : &s->out[k - s->n_in];
    if (!converted(st) || st->same_tensor) continue;
    st->stage = (void *)at;
    at += align64(stage_bytes(st) + 1);
    if (st->nhwc && (st->narrow || st->q)) {
      st->nhwc_ir = (void *)at;
      at += align64(eg_value_nbytes(st->v) + 1);
    }
  }
  s->staging_bytes = at;
}

static void copy_quantized(const staged *st, bool into_stage, const void *from_stage) {
  if (into_stage) {
    const float *src = st->ir;
    if (st->nhwc) {
      eg_npu_permute_nc(st->ir, st->nhwc_ir, st->v->shape, sizeof(float), true);
      src = st->nhwc_ir;
    }
    eg_quantize_f32(&st->q->v, src, st->stage);
  } else {
    float *dst = st->nhwc ? st->nhwc_ir : st->ir;
    eg_dequantize_f32(&st->q->v, from_stage, dst);
    if (st->nhwc) eg_npu_permute_nc(st->nhwc_ir, st->ir, st->v->shape, sizeof(float), false);
  }
}

static eg_status bind(eg_npu_step *s, const eg_lowered *hp) {
  s->bin = calloc((size_t)s->n_in + 1, sizeof *s->bin);
  s->bout = calloc((size_t)s->n_out + 1, sizeof *s->bout);
  s->out_binding = calloc((size_t)s->n_out + 1, sizeof(int32_t));
  if (!s->bin || !s->bout || !s->out_binding) return eg_error(EG_ERR_NOMEM, "npu step: out of memory");
  for (int32_t k = 0; k < s->n_in; k++)
    s->bin[k] = (eg_backend_binding){hp->inputs[k].tensor, NULL, stage_bytes(&s->in[k])};
  for (int32_t k = 0; k < s->n_out; k++) {
    int32_t j = 0;
    while (j < s->n_bout && s->bout[j].tensor != hp->outputs[k].tensor) j++;
    if (j == s->n_bout)
      s->bout[s->n_bout++] = (eg_backend_binding){hp->outputs[k].tensor, NULL, stage_bytes(&s->out[k])};
    s->out_binding[k] = j;
  }
  return EG_OK;
}

static eg_status tensor_spans(eg_npu_step *s, const eg_lowered *hp, const eg_partition *part,
                              const int32_t *node_of);
static bool ops_to_nodes(const eg_graph *g, const eg_lowered *lp, const eg_partition *part,
                         int32_t *node_of);

/* Per tensor of lp's graph (nt of them): the last op reading it, the op writing it (-1: none);
 * reader and writer hold nt + 1 each. */
static void readers_writers(const eg_lowered *lp, int32_t nt, int32_t *reader, int32_t *writer) {
  eg_npu_partition_info info = {0};
  lp->backend->describe(lp->graph, &info);
  for (int32_t t = 0; t < nt; t++) reader[t] = writer[t] = -1;
  for (int32_t k = 0; k < info.num_ops; k++) {
    eg_npu_op_info op = {0};
    lp->backend->describe_op(lp->graph, k, &op);
    for (int32_t i = 0; i < op.num_inputs; i++)
      if (op.inputs[i] >= 0 && op.inputs[i] < nt) reader[op.inputs[i]] = k;
    for (int32_t i = 0; i < op.num_outputs; i++)
      if (op.outputs[i] >= 0 && op.outputs[i] < nt) writer[op.outputs[i]] = k;
  }
}

/* The last op reading input tensor t's bound buffer: through the executor's aliases of it
 * (eg_backend_executor.input_last_op), else its last reader. */
static int32_t input_read_until(const eg_npu_step *s, int32_t t, const int32_t *reader) {
  return s->backend->input_last_op ? s->backend->input_last_op(s->ex, t) : reader[t];
}

/* An input bound in place is the runtime's value, which the plan keeps live until the last
 * node reading it (a node of the partition or later); its tensor's bytes, though, may be read
 * by later ops through an executor alias (a Reshape of it that moves nothing), on behalf of a
 * later node of the partition that reads the Reshape's value, not this one. Such an input,
 * when no node of the partition from that op's node on reads the value (node_of: per op its
 * node, NULL when the ops are not told apart by node: then any read past its last reader), is
 * copied into a staging buffer instead, whose span reaches that op. */
static eg_status mark_copies(eg_npu_step *s, const eg_graph *g, const eg_lowered *lp,
                             const eg_partition *part, const int32_t *node_of) {
  eg_npu_partition_info info = {0};
  lp->backend->describe(lp->graph, &info);
  const int32_t nt = info.num_tensors;
  int32_t *reader = malloc(2 * ((size_t)nt + 1) * sizeof(int32_t));
  if (!reader) return eg_error(EG_ERR_NOMEM, "npu step: out of memory");
  readers_writers(lp, nt, reader, reader + nt + 1);
  for (int32_t k = 0; k < s->n_in; k++) {
    staged *st = &s->in[k];
    const int32_t t = s->bin[k].tensor;
    if (converted(st) || t < 0 || t >= nt) continue;
    const int32_t last = input_read_until(s, t, reader);
    if (last <= reader[t]) continue;
    bool read = false;
    for (int32_t j = part->n_nodes - 1; node_of && !read && j >= 0; j--) {
      read = eg_node_reads(&g->nodes[part->nodes[j]], st->value);
      if (part->nodes[j] == node_of[last]) break;
    }
    st->copied = !read;
  }
  free(reader);
  return EG_OK;
}

/* The executor's spans (checked: each over ops of its graph), and their layout in the step's
 * block: each span, in the executor's order, at the lowest offset that overlaps no earlier
 * span live at one of its ops; an op's scratch span gets none (the op uses the shared
 * scratch). */
static eg_status pack_work(eg_npu_step *s, const eg_lowered *hp) {
  eg_npu_partition_info info = {0};
  hp->backend->describe(hp->graph, &info);
  const eg_backend_span *w = NULL;
  const int32_t n = s->backend->spans(s->ex, &w);
  for (int32_t i = 0; i < n; i++)
    if (w[i].first_op < 0 || w[i].first_op > w[i].last_op || w[i].last_op >= info.num_ops ||
        w[i].bytes % 64)
      return eg_error(EG_ERR_INVALID, "npu step: executor span %d (ops %d..%d, %zu bytes): "
                      "must be ops of its graph (%d ops), first not after last, a multiple of "
                      "64 bytes", (int)i, (int)w[i].first_op, (int)w[i].last_op, w[i].bytes,
                      (int)info.num_ops);
  if (n < 0 || !(s->work_at = malloc(((size_t)(n > 0 ? n : 0) + 1) * sizeof(size_t))))
    return n < 0 ? eg_error(EG_ERR_INVALID, "npu step: executor spans (%d): a count >= 0",
                            (int)n)
                 : eg_error(EG_ERR_NOMEM, "npu step: out of memory");
  s->work = w;
  s->n_work = n;
  for (int32_t i = 0; i < n; i++) {
    s->work_at[i] = EG_PLAN_NONE;
    if (w[i].tensor < 0) continue;
    size_t off = 0;
    for (bool moved = true; moved;) { /* bump past every live conflict until none is left */
      moved = false;
      for (int32_t j = 0; j < i; j++) {
        if (s->work_at[j] == EG_PLAN_NONE) continue;
        const bool live = w[j].first_op <= w[i].last_op && w[i].first_op <= w[j].last_op;
        if (live && off < s->work_at[j] + w[j].bytes && s->work_at[j] < off + w[i].bytes) {
          off = s->work_at[j] + w[j].bytes;
          moved = true;
        }
      }
    }
    s->work_at[i] = off;
    if (off + w[i].bytes > s->work_bytes) s->work_bytes = off + w[i].bytes;
  }
  return EG_OK;
}

eg_status eg_npu_step_create(const eg_graph *g, const eg_lowered *hp, const eg_partition *part,
                             int32_t program_step, const bool *held_nhwc, eg_precision precision,
                             eg_npu_step **out) {
  *out = NULL;
  eg_npu_step *s = calloc(1, sizeof *s);
  if (!s) return eg_error(EG_ERR_NOMEM, "npu step: out of memory");
  s->n_in = hp->n_inputs;
  s->n_out = hp->n_outputs;
  s->n_spans = -1;
  s->program_step = program_step;
  s->block_at = EG_PLAN_NONE;
  s->in = calloc((size_t)s->n_in + 1, sizeof(staged));
  s->out = calloc((size_t)s->n_out + 1, sizeof(staged));
  eg_status st = s->in && s->out ? EG_OK : eg_error(EG_ERR_NOMEM, "npu step: out of memory");
  if (st == EG_OK) st = stage_all(g, hp->inputs, s->n_in, held_nhwc, s->in);
  if (st == EG_OK) st = stage_all(g, hp->outputs, s->n_out, held_nhwc, s->out);
  if (st == EG_OK) st = stage_quant(s, hp);
  if (st == EG_OK) st = bind(s, hp);
  if (st == EG_OK) st = find_repeats(s, g, hp);
  s->backend = hp->backend->executor;
  if (st == EG_OK) st = s->backend->create(hp->graph, precision, &s->ex);
  eg_npu_partition_info info = {0};
  hp->backend->describe(hp->graph, &info);
  int32_t *node_of = calloc((size_t)info.num_ops + 1, sizeof(int32_t));
  if (st == EG_OK && !node_of) st = eg_error(EG_ERR_NOMEM, "npu step: out of memory");
  const bool by_node = st == EG_OK && part->n_nodes > 0 && ops_to_nodes(g, hp, part, node_of);
  if (st == EG_OK) st = mark_copies(s, g, hp, part, by_node ? node_of : NULL);
  if (st == EG_OK) lay_out_staging(s);
  if (st == EG_OK) st = pack_work(s, hp);
  if (st == EG_OK) st = tensor_spans(s, hp, part, by_node ? node_of : NULL);
  free(node_of);
  if (st != EG_OK) {
    eg_npu_step_destroy(s);
    return st;
  }
  *out = s;
  return EG_OK;
}

int32_t eg_npu_step_program_step(const eg_npu_step *s) { return s->program_step; }

size_t eg_npu_step_block_bytes(const eg_npu_step *s) {
  return s->staging_bytes + s->work_bytes;
}

/* Whether op name `op` is "<node>_op<k>" (k >= 1, as lowering numbers a node's later ops). */
static bool later_op_of(const char *op, const char *node) {
  const size_t n = strlen(node);
  if (strncmp(op, node, n) != 0 || strncmp(op + n, "_op", 3) != 0) return false;
  const char *d = op + n + 3;
  if (*d < '1' || *d > '9') return false;
  while (*d >= '0' && *d <= '9') d++;
  return *d == '\0';
}

/* The partition's nodes by name, for bsearch: name and place in the partition. */
typedef struct named_node {
  const char *name;
  int32_t at;
} named_node;

static int by_name(const void *a, const void *b) {
  return strcmp(((const named_node *)a)->name, ((const named_node *)b)->name);
}

static int32_t node_named(const named_node *sorted, int32_t n, const char *name) {
  const named_node key = {name, 0}, *hit = bsearch(&key, sorted, (size_t)n, sizeof key, by_name);
  return hit ? hit->at : -1;
}

/* Per op of the partition's graph, the node (graph id) lowering emitted it for: it walks the
 * partition's nodes in order (some emit no op) and names a node's ops "<node>", then
 * "<node>_op<k>" (op names are unique in a graph). false when the names do not say it
 * unambiguously: an op that could be the current node's later op and another node's first. */
static bool ops_to_nodes(const eg_graph *g, const eg_lowered *lp, const eg_partition *part,
                         int32_t *node_of) {
  eg_npu_partition_info info = {0};
  lp->backend->describe(lp->graph, &info);
  named_node *sorted = calloc((size_t)part->n_nodes + 1, sizeof *sorted);
  if (!sorted) return false;
  for (int32_t j = 0; j < part->n_nodes; j++)
    sorted[j] = (named_node){g->nodes[part->nodes[j]].name, j};
  qsort(sorted, (size_t)part->n_nodes, sizeof *sorted, by_name);
  bool ok = true;
  for (int32_t k = 0, at = -1; ok && k < info.num_ops; k++) {
    eg_npu_op_info op = {0};
    lp->backend->describe_op(lp->graph, k, &op);
    const char *name = op.name;
    const int32_t first_of = node_named(sorted, part->n_nodes, name);
    const bool later = at >= 0 && later_op_of(name, g->nodes[part->nodes[at]].name);
    ok = (first_of > at) != later; /* exactly one reading */
    if (ok && !later) at = first_of;
    if (ok) node_of[k] = part->nodes[at];
  }
  free(sorted);
  return ok;
}

/* The staged (converted) values' buffers as spans, in lay_out_staging's order, after the
 * executor's: an input's from the conversions in (tick 0, the partition's first node) to the
 * last op reading its bytes (input_read_until), an output's from the op writing it to the
 * conversions out (tick ops + 1, the last node); the NHWC-ordered IR-dtype buffers only at
 * those conversions. */
static int32_t staging_spans(const eg_npu_step *s, const eg_lowered *lp, const eg_partition *part,
                             const int32_t *node_of, eg_plan_block *spans) {
  eg_npu_partition_info info = {0};
  lp->backend->describe(lp->graph, &info);
  const int32_t no = info.num_ops, nt = info.num_tensors;
  const int32_t first = part->nodes[0], last = part->nodes[part->n_nodes - 1];
  /* per tensor: the last op reading it, the op writing it */
  int32_t *reader = malloc(2 * ((size_t)nt + 1) * sizeof(int32_t)), *writer = reader + nt + 1;
  int32_t n = 0;
  if (!reader) return -1;
  readers_writers(lp, nt, reader, writer);
  for (int32_t k = 0; k < s->n_in + s->n_out; k++) {
    const bool in = k < s->n_in;
    const staged *st = in ? &s->in[k] : &s->out[k - s->n_in];
    if (!converted(st) || st->same_tensor) continue;
    const int32_t t = in ? s->bin[k].tensor : s->bout[s->out_binding[k - s->n_in]].tensor;
    const int32_t op = in ? input_read_until(s, t, reader) : writer[t];
    const eg_plan_block at_start = {0, first, first, 0, 0};
    const eg_plan_block at_end = {0, last, last, no + 1, no + 1};
    eg_plan_block b = in ? at_start : at_end;
    if (in && op >= 0) b.last_node = node_of[op], b.last_tick = op + 1;
    if (!in) b.first_node = op >= 0 ? node_of[op] : first, b.first_tick = op >= 0 ? op + 1 : 0;
    b.bytes = align64(stage_bytes(st) + 1);
    spans[n++] = b;
    if (st->nhwc && (st->narrow || st->q)) {
      spans[n] = in ? at_start : at_end;
      spans[n++].bytes = align64(eg_value_nbytes(st->v) + 1);
    }
  }
  free(reader);
  return n;
}

/* The spans (eg_npu_step_spans) of a step just created; none (n_spans -1) when the ops cannot
 * be told apart by node (node_of NULL; else per op its node: ops_to_nodes). EG_ERR_NOMEM
 * only. */
static eg_status tensor_spans(eg_npu_step *s, const eg_lowered *hp, const eg_partition *part,
                              const int32_t *node_of) {
  const eg_backend_span *wt = s->work;
  const int32_t nw = s->n_work, ns = 2 * (s->n_in + s->n_out);
  if (!node_of) return EG_OK;
  eg_plan_block *spans = calloc((size_t)nw + (size_t)ns + 1, sizeof *spans);
  if (!spans) return eg_error(EG_ERR_NOMEM, "npu step: out of memory");
  /* ticks: 0 the conversions in, op k's k + 1, ops + 1 the conversions out (pack_work checked
   * the ops) */
  for (int32_t i = 0; i < nw; i++)
    spans[i] = (eg_plan_block){wt[i].bytes, node_of[wt[i].first_op], node_of[wt[i].last_op],
                               wt[i].first_op + 1, wt[i].last_op + 1};
  const int32_t n_staged = staging_spans(s, hp, part, node_of, spans + nw);
  if (n_staged < 0) {
    free(spans);
    return EG_OK;
  }
  s->spans = spans;
  s->n_spans = nw + n_staged;
  return EG_OK;
}

int32_t eg_npu_step_spans(const eg_npu_step *s, const eg_plan_block **out) {
  *out = s->n_spans >= 0 ? s->spans : NULL;
  return s->n_spans;
}

int32_t eg_npu_step_input_span(const eg_npu_step *s, int32_t k) {
  if (s->n_spans < 0 || k < 0 || k >= s->n_in || !converted(&s->in[k])) return -1;
  int32_t at = s->n_work; /* the staging spans, in lay_out_staging's order */
  for (int32_t j = 0; j < k; j++)
    if (converted(&s->in[j])) at += s->in[j].nhwc && (s->in[j].narrow || s->in[j].q) ? 2 : 1;
  return at;
}

void eg_npu_step_place_block(eg_npu_step *s, size_t offset) {
  free(s->span_at);
  s->span_at = NULL;
  s->block_at = offset;
}

eg_status eg_npu_step_place_spans(eg_npu_step *s, const size_t *offsets) {
  size_t *at = malloc(((size_t)(s->n_spans > 0 ? s->n_spans : 0) + 1) * sizeof *at);
  if (!at) return eg_error(EG_ERR_NOMEM, "npu step: out of memory");
  for (int32_t i = 0; i < s->n_spans; i++) at[i] = offsets[i];
  free(s->span_at);
  s->span_at = at;
  return EG_OK;
}

bool eg_npu_step_span_is_scratch(const eg_npu_step *s, int32_t i) {
  return i >= 0 && i < s->n_work && s->work[i].tensor < 0;
}

size_t eg_npu_step_scratch_bytes(const eg_npu_step *s) { return s->backend->scratch_bytes(s->ex); }

eg_status eg_npu_step_bind(eg_npu_step *s, const eg_graph *g, void *const *data,
                           unsigned char *arena, void *scratch) {
  unsigned char *base = arena + (s->block_at == EG_PLAN_NONE ? 0 : s->block_at);
  const bool spans = s->span_at != NULL; /* placed span by span, else in one block */
  int32_t at = s->n_work;
  if (spans && s->n_spans < 0)
    return eg_error(EG_ERR_STATE, "npu step: placed as spans, but the step has none");
  /* each span's buffer: the executor's, then (placed as spans) the staging's */
  void **tensors = malloc(((size_t)(spans ? s->n_spans : s->n_work) + 1) * sizeof *tensors);
  if (!tensors) return eg_error(EG_ERR_NOMEM, "npu step: out of memory");
  for (int32_t i = 0; spans && i < s->n_spans; i++)
    tensors[i] = s->span_at[i] == EG_PLAN_NONE ? NULL : arena + s->span_at[i];
  for (int32_t i = 0; !spans && i < s->n_work; i++)
    tensors[i] = s->work_at[i] == EG_PLAN_NONE ? NULL : base + s->staging_bytes + s->work_at[i];
  for (int32_t k = 0; k < s->n_in + s->n_out; k++) {
    staged *st = k < s->n_in ? &s->in[k] : &s->out[k - s->n_in];
    if (!data[st->value]) {
      free(tensors);
      return eg_error(EG_ERR_INVALID, "npu step: boundary value %s has no runtime buffer: a "
                      "value crossing a partition boundary is planned",
                      eg_value_label(g, st->value));
    }
    st->ir = data[st->value];
    if (!converted(st) || st->same_tensor) { /* bound in place, or to the first one's */
      st->stage = converted(st) ? NULL : st->ir;
      continue;
    }
    if (spans) { /* the spans after the executor's, in lay_out_staging's order */
      st->stage = tensors[at++];
      if (st->nhwc_ir) st->nhwc_ir = tensors[at++];
      continue;
    }
    st->stage = base + (size_t)st->stage;
    if (st->nhwc_ir) st->nhwc_ir = base + (size_t)st->nhwc_ir;
  }
  for (int32_t k = 0; k < s->n_in; k++) s->bin[k].data = s->in[k].stage;
  for (int32_t k = 0; k < s->n_out; k++)
    if (!s->bout[s->out_binding[k]].data) s->bout[s->out_binding[k]].data = s->out[k].stage;
  s->backend->set_spans(s->ex, tensors, scratch);
  free(tensors);
  return EG_OK;
}

void eg_npu_step_destroy(eg_npu_step *s) {
  if (!s) return;
  if (s->ex) s->backend->destroy(s->ex);
  unstage_quant(s);
  free(s->spans);
  free(s->span_at);
  free(s->work_at);
  free(s->in);
  free(s->out);
  free(s->bin);
  free(s->bout);
  free(s->out_binding);
  free(s);
}

/* A narrowed int64 value (pass i64_to_i32): each element checked and narrowed to int32 when
 * staged in — a value outside int32 is a run-time error naming the value, never a silent
 * truncation — and widened back to int64 when read out. Rank 4 is permuted as int64 (`nhwc_ir`). */
static eg_status copy_narrowed(const staged *st, bool into_stage, const void *from_stage) {
  const int64_t n = eg_value_numel(st->v);
  if (into_stage) {
    const int64_t *ir = st->ir;
    for (int64_t i = 0; i < n; i++)
      if (ir[i] < INT32_MIN || ir[i] > INT32_MAX)
        return eg_error(EG_ERR_RUNTIME, "npu step: value %s: element %lld = %lld is outside "
                        "int32: int64 values are held as int32 inside NPU partitions (pass "
                        "i64_to_i32)", st->label, (long long)i, (long long)ir[i]);
    const int64_t *src = ir;
    if (st->nhwc) {
      eg_npu_permute_nc(st->ir, st->nhwc_ir, st->v->shape, sizeof(int64_t), true);
      src = st->nhwc_ir;
    }
    int32_t *dst = st->stage;
    for (int64_t i = 0; i < n; i++) dst[i] = (int32_t)src[i];
  } else {
    const int32_t *src = from_stage;
    int64_t *dst = st->nhwc ? st->nhwc_ir : st->ir;
    for (int64_t i = 0; i < n; i++) dst[i] = src[i];
    if (st->nhwc) eg_npu_permute_nc(st->nhwc_ir, st->ir, st->v->shape, sizeof(int64_t), false);
  }
  return EG_OK;
}

/* Into the bound buffer (into_stage) or from bound buffer `from_stage` back to the IR buffer. */
static eg_status copy_value(const staged *st, bool into_stage, const void *from_stage) {
  if (st->narrow) return copy_narrowed(st, into_stage, from_stage);
  if (st->q) {
    copy_quantized(st, into_stage, from_stage);
    return EG_OK;
  }
  size_t es = eg_dtype_size(st->v->dtype), nb = eg_value_nbytes(st->v);
  if (into_stage) {
    if (st->nhwc) eg_npu_permute_nc(st->ir, st->stage, st->v->shape, es, true);
    else if (st->stage != st->ir) memcpy(st->stage, st->ir, nb);
  } else {
    if (st->nhwc) eg_npu_permute_nc(from_stage, st->ir, st->v->shape, es, false);
    else if (from_stage != st->ir) memcpy(st->ir, from_stage, nb);
  }
  return EG_OK;
}

eg_status eg_npu_step_run(eg_npu_step *s, int64_t *convert_ns) {
  const int64_t t0 = convert_ns ? eg_now_ns() : 0;
  for (int32_t k = 0; k < s->n_in; k++)
    if (converted(&s->in[k])) EG_TRY(copy_value(&s->in[k], true, NULL));
  const int64_t t1 = convert_ns ? eg_now_ns() : 0;
  EG_TRY(s->backend->run(s->ex, s->bin, s->n_in, s->bout, s->n_bout));
  const int64_t t2 = convert_ns ? eg_now_ns() : 0;
  /* an output bound in place needs nothing, unless a second value names the same tensor */
  for (int32_t k = 0; k < s->n_out; k++) {
    const staged *st = &s->out[k];
    if (st->repeats < 0) EG_TRY(copy_value(st, false, s->bout[s->out_binding[k]].data));
    else if (st->ir != s->out[st->repeats].ir)
      memcpy(st->ir, s->out[st->repeats].ir, eg_value_nbytes(st->v));
  }
  if (convert_ns) *convert_ns = (t1 - t0) + (eg_now_ns() - t2);
  return EG_OK;
}

void eg_npu_step_set_op_times(eg_npu_step *s, int64_t *times) {
  s->backend->set_op_times(s->ex, times);
}
