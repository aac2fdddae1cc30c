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
 *   aten.slice.Tensor(x, dim, start, end, step)
 *                                     -> StridedSlice: dim's axis from ATen's clamped start,
 *                                        stride step, the result's extent of it; every other
 *                                        axis whole; in x's axis order (a channel slice of an
 *                                        NHWC value, e.g. the backward of a concatenation
 *                                        such as SqueezeNet's Fire modules, stays NHWC)
 *   aten.select.int(x, dim, index)    -> StridedSlice of the one index + Reshape dropping dim
 *                                        (traced order: the rank changes)
 *   aten.select_backward(g, sizes, dim, index), aten.slice_backward(g, sizes, dim, start, end,
 *   step 1)                           -> [Reshape adding dim back] + Pad (CONSTANT 0) along
 *                                        dim: zeros but the selected/sliced block (float32;
 *                                        slice_backward in g's axis order, select_backward
 *                                        traced; a step > 1 is declined: no strided Pad)
 *   aten.split.Tensor / split_with_sizes(x, split, dim)
 *                                     -> a StridedSlice per piece that is read (the next
 *                                        block of its extent along dim), in x's axis order
 *                                        (ShuffleNetV2's channel split of an NHWC value)
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

#include "backends/htp/compile/builders/builders.h"
#include "ops/slice.h"

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
  return eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, &tensor, 1, &out, 1, NULL, 0);
}

/* Writes `in` (rank, dims) into `out` (a tensor of the same element count) transposed by
 * perm: a Transpose, or a Reshape when the permutation moves no byte. */
static eg_status emit_permute(eg_htp_lower *L, int32_t in, int rank, const uint32_t *dims,
                              const uint32_t *perm, int32_t out) {
  if (perm_is_reshape(rank, dims, perm))
    return eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, &in, 1, &out, 1, NULL, 0);
  uint32_t pd[1] = {(uint32_t)rank};
  eg_htp_qnn_param p = eg_htp_qnn_param_u32_tensor("perm", 1, pd, perm);
  return eg_htp_op(L, EG_HTP_QNN_OP_TRANSPOSE, &in, 1, &out, 1, &p, 1);
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
  return eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, &in, 1, &out, 1, NULL, 0);
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

/* expand: rank 4 to rank 4, in x's order (pass layout_nhwc lays such an expand out as
 * FOLLOW): x itself when it adds no element, else Tile by the result's held dims over x's;
 * from a lower rank, a view when it adds no element, else x (traced order, as the result)
 * right-aligned to the result's rank by a Reshape that adds leading 1s, then Tile by the
 * result's dims over x's (each x dim is 1 or the result's, as ATen's expand requires). */
static eg_status expand_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const int32_t x_id = eg_htp_arg(n, 0, "self");
  const eg_value *x = &g->values[x_id], *y = &g->values[n->output];
  const bool held = x->rank == 4 && y->rank == 4;
  if (!held && eg_value_numel(x) == eg_value_numel(y)) return lower_view_of(L, n, x_id);
  const eg_axis_order axes = held ? eg_htp_axes(x) : EG_AXES_TRACED;
  EG_TRY(eg_htp_want_axes(L, x_id, axes, "self"));
  EG_TRY(eg_htp_want_axes(L, n->output, axes, "result"));
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
  if (held && eg_value_numel(x) == eg_value_numel(y)) return define_as(L, n->output, in);
  if (lead > 0) {
    int32_t r;
    EG_TRY(eg_htp_temp(L, "ranked", eg_htp_value_dtype(x), y->rank, padded, &r));
    EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, &in, 1, &r, 1, NULL, 0));
    in = r;
  }
  EG_TRY(eg_htp_define(L, n->output, &out));
  const uint32_t md[1] = {(uint32_t)y->rank};
  const eg_htp_qnn_param p = eg_htp_qnn_param_u32_tensor("multiples", 1, md, mult);
  return eg_htp_op(L, EG_HTP_QNN_OP_TILE, &in, 1, &out, 1, &p, 1);
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
  eg_htp_qnn_param p = eg_htp_qnn_param_u32("axis", (uint32_t)eg_htp_axis(y, eg_wrap_dim(dim, rank)));
  return eg_htp_op(L, EG_HTP_QNN_OP_CONCAT, in, list->list.n, &out, 1, &p, 1);
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
    EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, &t, 1, &in[i], 1, NULL, 0));
  }
  EG_TRY(eg_htp_define(L, n->output, &out));
  eg_htp_qnn_param p = eg_htp_qnn_param_u32("axis", (uint32_t)d);
  return eg_htp_op(L, EG_HTP_QNN_OP_CONCAT, in, list->list.n, &out, 1, &p, 1);
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
/* A StridedSlice of QNN tensor `in` (graph value x) into QNN tensor `out`: ATen dim `dim`'s
 * elements begin, begin + step, ... (`len` of them); every other axis whole. */
static eg_status emit_strided_slice(eg_htp_lower *L, const eg_value *x, int32_t in, int dim,
                                    int64_t begin, int64_t step, int64_t len, int32_t out) {
  uint32_t dims[EG_MAX_RANK];
  eg_htp_dims(x, dims);
  int32_t ranges[EG_MAX_RANK * 3];
  for (int a = 0; a < x->rank; a++) {
    ranges[3 * a] = 0;
    ranges[3 * a + 1] = (int32_t)dims[a];
    ranges[3 * a + 2] = 1;
  }
  const int axis = eg_htp_axis(x, dim);
  ranges[3 * axis] = (int32_t)begin;
  ranges[3 * axis + 1] = (int32_t)(begin + (len - 1) * step + 1);
  ranges[3 * axis + 2] = (int32_t)step;
  const uint32_t rdims[2] = {(uint32_t)x->rank, 3};
  const eg_htp_qnn_param r = eg_htp_qnn_param_i32_tensor("ranges", 2, rdims, ranges);
  return eg_htp_op(L, EG_HTP_QNN_OP_STRIDED_SLICE, &in, 1, &out, 1, &r, 1);
}

/* The same into graph value `out_value`. */
static eg_status strided_slice(eg_htp_lower *L, const eg_value *x, int32_t in, int dim,
                               int64_t begin, int64_t step, int64_t len, int32_t out_value) {
  int32_t out;
  EG_TRY(eg_htp_define(L, out_value, &out));
  return emit_strided_slice(L, x, in, dim, begin, step, len, out);
}

/* The same into a new temp `what` of dims `dims` (x's dtype), returned in *out. */
static eg_status strided_slice_into(eg_htp_lower *L, const eg_value *x, int32_t in, int dim,
                                    int64_t begin, int64_t step, int64_t len, const char *what,
                                    const uint32_t *dims, int32_t *out) {
  EG_TRY(eg_htp_temp(L, what, eg_htp_value_dtype(x), x->rank, dims, out));
  return emit_strided_slice(L, x, in, dim, begin, step, len, *out);
}

/* StridedSlice's ranges are int32: dim's extent (and a step) must fit. */
static bool ranges_fit(const eg_value *x, int dim, int64_t step, char *reason, size_t size) {
  if (x->shape[dim] <= INT32_MAX && step <= INT32_MAX) return true;
  snprintf(reason, size, "dim %d of extent %lld, step %lld: StridedSlice's ranges are int32",
           dim, (long long)x->shape[dim], (long long)step);
  return false;
}

/* ---- split ---- */

static int split_dim(const eg_graph *g, const eg_node *n) {
  int64_t dim = 0;
  eg_arg_opt_int(n, 2, "dim", &dim);
  return eg_wrap_dim(dim, eg_htp_arg_value(g, n, 0, "self")->rank);
}

static bool split_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                           char *reason, size_t size) {
  (void)t;
  const int32_t xv = eg_htp_arg(n, 0, "self");
  if (!eg_htp_move_tensor_ok(g, xv, reason, size)) return false;
  const eg_value *o = &g->values[n->output];
  for (int32_t e = 0; e < o->n_elems; e++)
    if (eg_htp_elem_used(g, n, e) && !eg_htp_move_tensor_ok(g, o->elems[e], reason, size))
      return false;
  return ranges_fit(&g->values[xv], split_dim(g, n), 1, reason, size);
}

static eg_status split_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const int32_t xv = eg_htp_arg(n, 0, "self");
  const eg_value *x = &g->values[xv], *o = &g->values[n->output];
  const int d = split_dim(g, n);
  int32_t in;
  EG_TRY(eg_htp_input(L, xv, &in));
  int64_t begin = 0;
  for (int32_t e = 0; e < o->n_elems; e++) {
    const int32_t piece = o->elems[e];
    const int64_t len = g->values[piece].shape[d];
    if (eg_htp_elem_used(g, n, e)) {
      EG_TRY(eg_htp_want_axes(L, piece, eg_htp_axes(x), "piece"));
      EG_TRY(strided_slice(L, x, in, d, begin, 1, len, piece));
    }
    begin += len;
  }
  return EG_OK;
}

/* ---- select, select_backward, slice_backward ---- */

static bool select_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                            char *reason, size_t size) {
  (void)t;
  if (!eg_htp_self_and_result_move_ok(g, n, reason, size)) return false;
  const eg_slice_attrs *at = EG_ATTRS(n, const eg_slice_attrs);
  return ranges_fit(eg_htp_arg_value(g, n, 0, "self"), at->dim, 1, reason, size);
}

static eg_status select_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const int32_t xv = eg_htp_arg(n, 0, "self");
  const eg_value *x = &g->values[xv];
  const eg_slice_attrs *at = EG_ATTRS(n, const eg_slice_attrs);
  EG_TRY(eg_htp_want_axes(L, xv, EG_AXES_TRACED, "self"));
  EG_TRY(eg_htp_want_axes(L, n->output, EG_AXES_TRACED, "result"));
  uint32_t dims[EG_MAX_RANK];
  eg_htp_dims(x, dims);
  dims[at->dim] = 1;
  int32_t in, picked, out;
  EG_TRY(eg_htp_input(L, xv, &in));
  EG_TRY(strided_slice_into(L, x, in, at->dim, at->index, 1, 1, "picked", dims, &picked));
  EG_TRY(eg_htp_define(L, n->output, &out));
  return eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, &picked, 1, &out, 1, NULL, 0);
}

static bool view_backward_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                                   char *reason, size_t size) {
  (void)t;
  const int32_t gv = eg_htp_arg(n, 0, "grad_output");
  if (!eg_htp_float_tensor_ok(g, gv, reason, size) ||
      !eg_htp_float_tensor_ok(g, n->output, reason, size))
    return false;
  const eg_slice_attrs *at = EG_ATTRS(n, const eg_slice_attrs);
  if (at->step != 1) {
    snprintf(reason, size, "step %lld: the NPU form pads one block (QNN's Pad has no stride)",
             (long long)at->step);
    return false;
  }
  return ranges_fit(&g->values[n->output], at->dim, 1, reason, size);
}

/* select_backward / slice_backward: grad_output (its dim back as 1 for a select) padded with
 * zeros along dim to the input's extent. */
static eg_status view_backward_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const int32_t gv = eg_htp_arg(n, 0, "grad_output");
  const eg_value *y = &g->values[n->output];
  const eg_slice_attrs *at = EG_ATTRS(n, const eg_slice_attrs);
  const bool select = n->op == EG_OP_select_backward;
  const eg_axis_order order = select ? EG_AXES_TRACED : eg_htp_axes(&g->values[gv]);
  EG_TRY(eg_htp_want_axes(L, gv, order, "grad_output"));
  EG_TRY(eg_htp_want_axes(L, n->output, order, "result"));
  uint32_t dims[EG_MAX_RANK], amounts[2 * EG_MAX_RANK] = {0};
  eg_htp_dims(y, dims);
  const int axis = eg_htp_axis(y, at->dim);
  amounts[2 * axis] = (uint32_t)at->index;
  amounts[2 * axis + 1] = (uint32_t)(y->shape[at->dim] - at->index - at->len);
  int32_t in, out;
  EG_TRY(eg_htp_input(L, gv, &in));
  if (select) {
    int32_t kept;
    dims[axis] = 1;
    EG_TRY(eg_htp_temp(L, "kept_dim", EG_HTP_QNN_DTYPE_FLOAT_32, y->rank, dims, &kept));
    EG_TRY(eg_htp_op(L, EG_HTP_QNN_OP_RESHAPE, &in, 1, &kept, 1, NULL, 0));
    in = kept;
  }
  EG_TRY(eg_htp_define(L, n->output, &out));
  const uint32_t pdims[2] = {(uint32_t)y->rank, 2};
  const eg_htp_qnn_param p[3] = {eg_htp_qnn_param_u32("scheme", 0),
                             eg_htp_qnn_param_u32_tensor("pad_amount", 2, pdims, amounts),
                             eg_htp_qnn_param_f32("pad_constant_value", 0.0f)};
  return eg_htp_op(L, EG_HTP_QNN_OP_PAD, &in, 1, &out, 1, p, 3);
}

/* ---- slice ---- */

static bool slice_supports(const eg_graph *g, const eg_node *n, const eg_target *t,
                           char *reason, size_t size) {
  (void)t;
  if (!eg_htp_self_and_result_move_ok(g, n, reason, size)) return false;
  const eg_slice_attrs *at = EG_ATTRS(n, const eg_slice_attrs);
  return ranges_fit(eg_htp_arg_value(g, n, 0, "self"), at->dim, at->step, reason, size);
}

static eg_status slice_lower(eg_htp_lower *L, const eg_graph *g, const eg_node *n) {
  const int32_t xv = eg_htp_arg(n, 0, "self");
  const eg_value *x = &g->values[xv];
  const eg_slice_attrs *at = EG_ATTRS(n, const eg_slice_attrs);
  EG_TRY(eg_htp_want_axes(L, n->output, eg_htp_axes(x), "result"));
  int32_t in;
  EG_TRY(eg_htp_input(L, xv, &in));
  return strided_slice(L, x, in, at->dim, at->index, at->step, at->len, n->output);
}

const eg_htp_builder eg_htp_builder_cat = {"aten.cat -> Concat", 0, cat_supports, cat_lower};
const eg_htp_builder eg_htp_builder_slice_Tensor = {"aten.slice.Tensor -> StridedSlice", 0,
                                                    slice_supports, slice_lower};
const eg_htp_builder eg_htp_builder_split_Tensor = {
    "aten.split.Tensor -> StridedSlice per piece", 0, split_supports, split_lower};
const eg_htp_builder eg_htp_builder_split_with_sizes = {
    "aten.split_with_sizes -> StridedSlice per piece", 0, split_supports, split_lower};
const eg_htp_builder eg_htp_builder_select_int = {
    "aten.select.int -> StridedSlice + Reshape", 0, select_supports, select_lower};
const eg_htp_builder eg_htp_builder_select_backward = {
    "aten.select_backward -> Reshape + Pad (CONSTANT 0)", 0, view_backward_supports,
    view_backward_lower};
const eg_htp_builder eg_htp_builder_slice_backward = {
    "aten.slice_backward (step 1) -> Pad (CONSTANT 0)", 0, view_backward_supports,
    view_backward_lower};
const eg_htp_builder eg_htp_builder_stack = {"aten.stack -> Reshape + Concat", 0, stack_supports,
                                             stack_lower};
