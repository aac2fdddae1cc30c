/* shape.c — NPU builders for views, copies, permutes and concatenation.
 *
 *   aten.view / _unsafe_view / reshape / _reshape_alias(x, size)
 *                                     -> Reshape (no op when the QNN dims stay)
 *   aten.expand(x, size)              -> a view as above when it adds no element (every
 *                                        expanded dim is 1 -> 1, new leading dims are 1); a
 *                                        broadcast -> [Reshape to the result's rank] + Tile
 *       Tile rather than a broadcasting ElementWiseMultiply by ones (what QNN's ONNX Runtime
 *       EP makes of ONNX Expand): QNN HTP takes Tile as it is, in fp32 and fp16 graphs alike
 *       (one-op probes on SM8650: the EP keeps ONNX Tile a QNN Tile, results equal to ONNX
 *       Runtime's CPU after the fp16 rounding of the input), and Tile only moves elements, so
 *       it is exact in every dtype, the int32 of int64 values included, where a Multiply by
 *       ones is float arithmetic only.
 *   aten.t(x)                         -> Transpose perm [1,0] (rank < 2: a copy)
 *   aten.permute(x, dims)             -> Transpose (ATen's perm composed with the layouts)
 *   aten.transpose.int(x, d0, d1)     -> Transpose, as permute with d0 and d1 swapped
 *   aten.clone(x, memory_format=...)  -> Transpose perm [0,2,3,1] (traced -> NHWC) or
 *                                        [0,3,1,2] (NHWC -> traced) when x and the result are
 *                                        held in different axis orders: the conversions pass
 *                                        layout_nhwc inserts; else as the copies below
 *   aten.detach / alias / clone / lift_fresh_copy / _to_copy (same dtype)
 *                                     -> no op: the result names x's tensor (eg_htp_alias);
 *                                        a same-dims Reshape when it leaves the partition
 *   aten.cat(tensors, dim)            -> Concat(axis = eg_htp_axis(result, dim))
 *   aten.stack(tensors, dim)          -> Reshape of each input to the result's rank (a 1 at
 *                                        dim) + Concat(axis dim); traced order only
 *
 * Layout (eg_value.axes, set by pass layout_nhwc; lower.h): ATen's views are defined on the
 * traced (NCHW) element order, so a view takes a rank-4 x and gives a rank-4 result in traced
 * order only — the pass converts an NHWC value before it (a clone, above) — and lowering fails
 * on an NHWC one rather than reshaping channels-last bytes. A Transpose that moves no byte (its
 * non-1 dims keep their order, e.g. [N,1,1,C] -> [N,C,1,1]) is emitted as a Reshape.
 * permute reads x in either order and computes one QNN perm: output axis b holds ATen output dim
 * D(b) (eg_htp_aten_dim of the result), which is input dim dims[D(b)], found at input axis
 * eg_htp_axis of it. cat's inputs are held in the result's order.
 *
 * Constraints: float32 tensors (the executor's dtype) or int64 ones, held as INT_32 (pass
 * i64_to_i32; these ops only move elements, builders/common.c), one dtype per node (no
 * conversions), no empty tensors (QNN dims are >= 1), no quantized input to a broadcasting
 * expand (its Reshape temporary is a plain tensor),
 * cat, stack: inputs of one rank, at most 64 of them (QNN Concat's limit here). */
#include <stdio.h>
#include <string.h>

#include "backends/htp/builders/builders.h"

/* ---- layout helpers ---- */

/* True when transposing `dims` by `perm` moves no byte: the non-1 dims keep their order. */
static bool perm_is_reshape(int rank, const uint32_t *dims, const uint32_t *perm) {
  int last = -1;
  for (int k = 0; k < rank; k++) {
    if (dims[perm[k]] == 1) continue;
    if ((int)perm[k] < last) return false;
    last = (int)perm[k];
  }
  return true;
}

static bool same_dims(int rank, const uint32_t *a, const uint32_t *b) {
  for (int d = 0; d < rank; d++)
    if (a[d] != b[d]) return false;
  return true;
}

/* IR value `value` (the node's result) is `tensor`, which already has its QNN dims: an alias,
 * or a same-dims Reshape into the APP_READ tensor when the value leaves the partition. */
static eg_status define_as(eg_htp_lower *L, int32_t value, int32_t tensor) {
  if (!eg_htp_is_needed_outside(L, value)) return eg_htp_alias(L, value, tensor);
  int32_t out;
  EG_TRY(eg_htp_define(L, value, &out));
  return eg_htp_op(L, EG_QNN_OP_RESHAPE, &tensor, 1, &out, 1, NULL, 0);
}

/* Writes `in` (rank, dims) into `out` (a tensor of the same element count) transposed by
 * perm: a Transpose, or a Reshape when the permutation moves no byte. */
static eg_status emit_permute(eg_htp_lower *L, int32_t in, int rank, const uint32_t *dims,
                              const uint32_t *perm, int32_t out) {
  if (perm_is_reshape(rank, dims, perm))
    return eg_htp_op(L, EG_QNN_OP_RESHAPE, &in, 1, &out, 1, NULL, 0);
  uint32_t pd[1] = {(uint32_t)rank};
  eg_qnn_param p = eg_qnn_param_u32_tensor("perm", 1, pd, perm);
  return eg_htp_op(L, EG_QNN_OP_TRANSPOSE, &in, 1, &out, 1, &p, 1);
}

/* ---- views: view, _unsafe_view, reshape, _reshape_alias, expand ---- */

/* The ATen reshape of x into the node's result y: both in traced order (file comment), so a
 * Reshape into y's dims, or nothing when they are x's. */
static eg_status lower_view_of(eg_htp_lower *L, const eg_node *n, int32_t x_id) {
  const eg_graph *g = eg_htp_ir(L);
  const eg_value *x = &g->values[x_id], *y = &g->values[n->output];
  EG_TRY(eg_htp_want_axes(L, x_id, EG_AXES_TRACED, "self"));
  EG_TRY(eg_htp_want_axes(L, n->output, EG_AXES_TRACED, "result"));
  int32_t in, out;
  EG_TRY(eg_htp_input(L, x_id, &in));
  uint32_t x_dims[EG_MAX_RANK], y_dims[EG_MAX_RANK];
  eg_htp_dims(x, x_dims);
  eg_htp_dims(y, y_dims);
  if (x->rank == y->rank && same_dims(x->rank, x_dims, y_dims)) return define_as(L, n->output, in);
  EG_TRY(eg_htp_define(L, n->output, &out));
  return eg_htp_op(L, EG_QNN_OP_RESHAPE, &in, 1, &out, 1, NULL, 0);
}

static eg_status view_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  (void)g;
  return lower_view_of(L, n, eg_htp_arg(n, 0, "self"));
}

static bool view_supports(const eg_graph *g, const eg_node *n, const eg_target *t, char *reason,
                          size_t size) {
  (void)t;
  return eg_htp_self_and_result_move_ok(g, n, reason, size);
}

static bool expand_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                            char *reason, size_t size) {
  (void)t;
  if (!eg_htp_self_and_result_move_ok(g, n, reason, size)) return false;
  const int32_t x_id = eg_htp_arg(n, 0, "self");
  const eg_value *x = &g->values[x_id], *y = &g->values[n->output];
  if (eg_value_numel(x) != eg_value_numel(y) && eg_htp_held_quantized(g, x_id)) {
    char a[160], b[160];
    snprintf(reason, size, "expand %s to %s broadcasts a quantized tensor: the NPU Tile "
             "lowering takes float and int tensors only", eg_fmt_ints(a, sizeof a, x->shape,
             x->rank), eg_fmt_ints(b, sizeof b, y->shape, y->rank));
    return false;
  }
  return true;
}

/* expand: a view when it adds no element; else x (traced order, as the result: pass
 * layout_nhwc holds expand's rank-4 values so) right-aligned to the result's rank by a
 * Reshape that adds leading 1s, then Tile by the result's dims over x's (each x dim is 1 or
 * the result's, as ATen's expand requires). */
static eg_status expand_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const int32_t x_id = eg_htp_arg(n, 0, "self");
  const eg_value *x = &g->values[x_id], *y = &g->values[n->output];
  if (eg_value_numel(x) == eg_value_numel(y)) return lower_view_of(L, n, x_id);
  EG_TRY(eg_htp_want_axes(L, x_id, EG_AXES_TRACED, "self"));
  EG_TRY(eg_htp_want_axes(L, n->output, EG_AXES_TRACED, "result"));
  uint32_t x_dims[EG_MAX_RANK], y_dims[EG_MAX_RANK], padded[EG_MAX_RANK], mult[EG_MAX_RANK];
  eg_htp_dims(x, x_dims);
  eg_htp_dims(y, y_dims);
  const int lead = y->rank - x->rank;
  for (int d = 0; d < y->rank; d++) {
    padded[d] = d < lead ? 1 : x_dims[d - lead];
    mult[d] = y_dims[d] / padded[d];
  }
  int32_t in, out;
  EG_TRY(eg_htp_input(L, x_id, &in));
  if (lead > 0) {
    int32_t r;
    EG_TRY(eg_htp_temp(L, "ranked", eg_htp_value_dtype(x), y->rank, padded, &r));
    EG_TRY(eg_htp_op(L, EG_QNN_OP_RESHAPE, &in, 1, &r, 1, NULL, 0));
    in = r;
  }
  EG_TRY(eg_htp_define(L, n->output, &out));
  const uint32_t md[1] = {(uint32_t)y->rank};
  const eg_qnn_param p = eg_qnn_param_u32_tensor("multiples", 1, md, mult);
  return eg_htp_op(L, EG_QNN_OP_TILE, &in, 1, &out, 1, &p, 1);
}

/* ---- t, permute ---- */

/* Transposes self by ATen permutation `perm` (output dim d is input dim perm[d]). */
static eg_status lower_permute(eg_htp_lower *L, const eg_node *n, const int *perm) {
  const eg_graph *g = eg_htp_ir(L);
  const int32_t x_id = eg_htp_arg(n, 0, "self");
  const eg_value *x = &g->values[x_id], *y = &g->values[n->output];
  const int rank = x->rank;
  uint32_t q[EG_MAX_RANK], dims[EG_MAX_RANK];
  bool identity = true;
  for (int b = 0; b < rank; b++) {
    q[b] = (uint32_t)eg_htp_axis(x, perm[eg_htp_aten_dim(y, b)]);
    identity = identity && q[b] == (uint32_t)b;
  }
  int32_t in, out;
  EG_TRY(eg_htp_input(L, x_id, &in));
  if (identity) return define_as(L, n->output, in);
  eg_htp_dims(x, dims);
  EG_TRY(eg_htp_define(L, n->output, &out));
  return emit_permute(L, in, rank, dims, q, out);
}

static eg_status t_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const int rank = g->values[eg_htp_arg(n, 0, "self")].rank;
  static const int swap[2] = {1, 0}, keep[2] = {0, 1};
  return lower_permute(L, n, rank == 2 ? swap : keep);
}

static eg_status permute_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const int rank = g->values[eg_htp_arg(n, 0, "self")].rank;
  int64_t dims[EG_MAX_RANK];
  int k;
  EG_TRY(eg_arg_int_list(n, 1, "dims", dims, 0, EG_MAX_RANK, &k));
  int perm[EG_MAX_RANK];
  for (int d = 0; d < k; d++) perm[d] = eg_wrap_dim(dims[d], rank);
  return lower_permute(L, n, perm);
}

static eg_status transpose_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const int rank = g->values[eg_htp_arg(n, 0, "self")].rank;
  int64_t d0, d1;
  EG_TRY(eg_arg_int(n, 1, "dim0", &d0));
  EG_TRY(eg_arg_int(n, 2, "dim1", &d1));
  const int w0 = eg_wrap_dim(d0, rank), w1 = eg_wrap_dim(d1, rank);
  int perm[EG_MAX_RANK];
  for (int d = 0; d < rank; d++) perm[d] = d == w0 ? w1 : d == w1 ? w0 : d;
  return lower_permute(L, n, perm);
}

/* ---- detach, clone, lift_fresh_copy, _to_copy ---- */

/* A copy: an alias of x's tensor, or the Transpose between the two axis orders when x and the
 * result are held in different ones (pass layout_nhwc's conversions). */
static eg_status copy_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  static const uint32_t to_nhwc[4] = {0, 2, 3, 1}, to_nchw[4] = {0, 3, 1, 2};
  const int32_t x_id = eg_htp_arg(n, 0, "self");
  const eg_value *x = &g->values[x_id];
  int32_t in, out;
  EG_TRY(eg_htp_input(L, x_id, &in));
  const bool x_nhwc = eg_htp_is_nhwc(x), y_nhwc = eg_htp_is_nhwc(&g->values[n->output]);
  if (x_nhwc == y_nhwc) return define_as(L, n->output, in);
  uint32_t dims[EG_MAX_RANK];
  eg_htp_dims(x, dims);
  EG_TRY(eg_htp_define(L, n->output, &out));
  return emit_permute(L, in, 4, dims, x_nhwc ? to_nchw : to_nhwc, out);
}

static bool to_copy_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                             char *reason, size_t size) {
  (void)t;
  const int32_t x = eg_htp_arg(n, 0, "self");
  if (x >= 0 && g->values[x].dtype != g->values[n->output].dtype) {
    snprintf(reason, size, "dtype conversion %s -> %s: the NPU lowering takes only same-dtype "
             "copies", eg_dtype_name(g->values[x].dtype),
             eg_dtype_name(g->values[n->output].dtype));
    return false;
  }
  return eg_htp_self_and_result_move_ok(g, n, reason, size);
}

/* ---- cat ---- */

/* The tensors list of cat (inputs of the result's rank) and stack (`lost` = 1: one rank
 * less): QNN Concat's input count, one dtype, one rank; stack also takes no quantized input
 * (its Reshape temporaries are plain tensors). */
static bool joined_supports(const eg_graph *g, const eg_node *n, int lost, char *reason,
                            size_t size) {
  const eg_arg *list = eg_node_arg(n, 0, "tensors");
  if (!list || list->kind != EG_ARG_LIST || list->list.n < 1) {
    snprintf(reason, size, "argument tensors is not a list of tensors");
    return false;
  }
  if (list->list.n > 64) {
    snprintf(reason, size, "%d inputs: the NPU Concat takes at most 64", (int)list->list.n);
    return false;
  }
  const int rank = g->values[n->output].rank - lost;
  for (int32_t i = 0; i < list->list.n; i++) {
    const eg_arg *a = &list->list.items[i];
    if (a->kind != EG_ARG_VALUE || g->values[a->value].kind != EG_VALUE_TENSOR) {
      snprintf(reason, size, "tensors[%d] is not a tensor", (int)i);
      return false;
    }
    if (!eg_htp_move_tensor_ok(g, a->value, reason, size)) return false;
    if (g->values[a->value].dtype != g->values[n->output].dtype) {
      snprintf(reason, size, "tensors[%d] is %s, the result %s: the NPU Concat joins tensors "
               "of one dtype", (int)i, eg_dtype_name(g->values[a->value].dtype),
               eg_dtype_name(g->values[n->output].dtype));
      return false;
    }
    if (g->values[a->value].rank != rank) {
      snprintf(reason, size, "tensors[%d] has rank %d, the result %d: the NPU Concat joins "
               "tensors of one rank", (int)i, g->values[a->value].rank, rank + lost);
      return false;
    }
    if (lost && eg_htp_held_quantized(g, a->value)) {
      snprintf(reason, size, "tensors[%d] is quantized: the NPU stack lowering reshapes float "
               "tensors only", (int)i);
      return false;
    }
  }
  return eg_htp_move_tensor_ok(g, n->output, reason, size);
}

static bool cat_supports(const eg_graph *g, const eg_node *n, const eg_target *t, char *reason,
                         size_t size) {
  (void)t;
  return joined_supports(g, n, 0, reason, size);
}

static bool stack_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                           char *reason, size_t size) {
  (void)t;
  return joined_supports(g, n, 1, reason, size);
}

static eg_status cat_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const eg_arg *list = eg_node_arg(n, 0, "tensors");
  const int rank = g->values[n->output].rank;
  int64_t dim = 0;
  EG_TRY(eg_arg_opt_int(n, 1, "dim", &dim));
  const eg_value *y = &g->values[n->output];
  int32_t in[64], out;
  for (int32_t i = 0; i < list->list.n; i++) {
    EG_TRY(eg_htp_want_axes(L, list->list.items[i].value, eg_htp_axes(y), "input"));
    EG_TRY(eg_htp_input(L, list->list.items[i].value, &in[i]));
  }
  EG_TRY(eg_htp_define(L, n->output, &out));
  eg_qnn_param p = eg_qnn_param_u32("axis", (uint32_t)eg_htp_axis(y, eg_wrap_dim(dim, rank)));
  return eg_htp_op(L, EG_QNN_OP_CONCAT, in, list->list.n, &out, 1, &p, 1);
}

/* stack: every input (traced order, as the result) reshaped to the result's dims with 1 at
 * dim, then one Concat along dim. */
static eg_status stack_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const eg_arg *list = eg_node_arg(n, 0, "tensors");
  const eg_value *y = &g->values[n->output];
  int64_t dim = 0;
  EG_TRY(eg_arg_opt_int(n, 1, "dim", &dim));
  const int d = eg_wrap_dim(dim, y->rank);
  EG_TRY(eg_htp_want_axes(L, n->output, EG_AXES_TRACED, "result"));
  uint32_t dims[EG_MAX_RANK];
  eg_htp_dims(y, dims);
  dims[d] = 1;
  int32_t in[64], out;
  for (int32_t i = 0; i < list->list.n; i++) {
    const int32_t x = list->list.items[i].value;
    int32_t t;
    char what[32];
    snprintf(what, sizeof what, "in%d", (int)i);
    EG_TRY(eg_htp_want_axes(L, x, EG_AXES_TRACED, "input"));
    EG_TRY(eg_htp_input(L, x, &t));
    EG_TRY(eg_htp_temp(L, what, eg_htp_value_dtype(&g->values[x]), y->rank, dims, &in[i]));
    EG_TRY(eg_htp_op(L, EG_QNN_OP_RESHAPE, &t, 1, &in[i], 1, NULL, 0));
  }
  EG_TRY(eg_htp_define(L, n->output, &out));
  eg_qnn_param p = eg_qnn_param_u32("axis", (uint32_t)d);
  return eg_htp_op(L, EG_QNN_OP_CONCAT, in, list->list.n, &out, 1, &p, 1);
}

/* ---- the builders ---- */

#define VIEW_BUILDER(id, mapping)                                                              \
  const eg_htp_builder eg_htp_builder_##id = {mapping, 0, view_supports, view_lower};
#define COPY_BUILDER(id, mapping)                                                              \
  const eg_htp_builder eg_htp_builder_##id = {mapping, 0, view_supports, copy_lower};

VIEW_BUILDER(view, "aten.view -> [Transpose] + Reshape + [Transpose]")
VIEW_BUILDER(_unsafe_view, "aten._unsafe_view -> [Transpose] + Reshape + [Transpose]")
VIEW_BUILDER(reshape, "aten.reshape -> [Transpose] + Reshape + [Transpose]")
VIEW_BUILDER(_reshape_alias, "aten._reshape_alias -> [Transpose] + Reshape + [Transpose]")
COPY_BUILDER(detach, "aten.detach -> (alias)")
COPY_BUILDER(alias, "aten.alias -> (alias)")
COPY_BUILDER(clone, "aten.clone -> (alias), or Transpose between axis orders")
COPY_BUILDER(lift_fresh_copy, "aten.lift_fresh_copy -> (alias)")

const eg_htp_builder eg_htp_builder_expand = {"aten.expand -> Reshape, or [Reshape] + Tile", 0,
                                              expand_supports, expand_lower};
const eg_htp_builder eg_htp_builder__to_copy = {"aten._to_copy (same dtype) -> (alias)", 0,
                                                to_copy_supports, copy_lower};
const eg_htp_builder eg_htp_builder_t = {"aten.t -> Transpose", 0, view_supports, t_lower};
const eg_htp_builder eg_htp_builder_permute = {"aten.permute -> Transpose", 0, view_supports,
                                               permute_lower};
const eg_htp_builder eg_htp_builder_transpose_int = {"aten.transpose.int -> Transpose", 0,
                                                     view_supports, transpose_lower};
const eg_htp_builder eg_htp_builder_cat = {"aten.cat -> Concat", 0, cat_supports, cat_lower};
const eg_htp_builder eg_htp_builder_stack = {"aten.stack -> Reshape + Concat", 0, stack_supports,
                                             stack_lower};
