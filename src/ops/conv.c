/* conv.c — aten.convolution and aten.convolution_backward, 2-D, fp32, on the portable CPU
 * kernels (src/kernels/convolution_nchw_f32.h).
 *
 *   convolution(input, weight, bias?, stride, padding, dilation, transposed, output_padding,
 *               groups) -> output
 *   convolution_backward(grad_output, input, weight, bias_sizes?, stride, padding, dilation,
 *               transposed, output_padding, groups, output_mask[3])
 *               -> (grad_input | None, grad_weight | None, grad_bias | None)
 *
 * Rules (ATen's): input [N, Cin, H, W]; weight [Cout, Cin/g, kH, kW], or [Cin, Cout/g, kH, kW]
 * when transposed; stride/padding/dilation/output_padding lists of 1 or 2 (one value applies
 * to both dims); stride, dilation, groups >= 1; padding >= 0; output_padding < stride or
 * < dilation (transposed only); channels divisible by groups; a non-empty output. */
#include <string.h>

#include "kernels/convolution_nchw_f32.h"
#include "ops/op.h"

typedef struct eg_conv_attrs {
  eg_conv2d_params p;
  bool mask[3]; /* backward: the gradients computed, i.e. the tuple elements present */
} eg_conv_attrs;
EG_ATTRS_FIT(eg_conv_attrs);

/* Bound on stride/padding/dilation/output_padding: far beyond any real conv, small enough
 * that every size computed from them stays far from int64 overflow. */
#define EG_CONV_PARAM_MAX ((int64_t)1 << 24)

/* Reads a 1- or 2-element int list into v[2]. */
static eg_status pair(const eg_node *n, int pos, const char *kw, int64_t lo, int64_t v[2]) {
  int count;
  EG_TRY(eg_arg_int_list(n, pos, kw, v, 1, 2, &count));
  if (count == 1) v[1] = v[0];
  for (int i = 0; i < 2; i++)
    if (v[i] < lo || v[i] > EG_CONV_PARAM_MAX)
      return eg_node_error(n, EG_ERR_INVALID, "%s [%lld, %lld] has a value outside [%lld, %lld]",
                           kw, (long long)v[0], (long long)v[1], (long long)lo,
                           (long long)EG_CONV_PARAM_MAX);
  return EG_OK;
}

static eg_status float4d(const eg_node *n, const char *what, const eg_value *v) {
  if (v->dtype != EG_DTYPE_FLOAT32)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "%s dtype %s: convolution runs in float32", what,
                         eg_dtype_name(v->dtype));
  if (v->rank != 4)
    return eg_node_error(n, EG_ERR_UNSUPPORTED, "%s has rank %d: only 2-D convolution (rank-4 "
                         "NCHW tensors) is supported", what, v->rank);
  return EG_OK;
}

/* Parses the convolution parameters shared by both ops (positions differ by `off`: 0 for
 * convolution, where stride is argument 3; 1 for convolution_backward, where it is 4) and
 * derives every size in p from input and weight. */
static eg_status parse_conv(const eg_node *n, const eg_value *x, const eg_value *w, int off,
                            eg_conv2d_params *p) {
  char ws[96];
  memset(p, 0, sizeof *p);
  EG_TRY(pair(n, 3 + off, "stride", 1, p->stride));
  EG_TRY(pair(n, 4 + off, "padding", 0, p->padding));
  EG_TRY(pair(n, 5 + off, "dilation", 1, p->dilation));
  EG_TRY(eg_arg_bool(n, 6 + off, "transposed", &p->transposed));
  EG_TRY(pair(n, 7 + off, "output_padding", 0, p->output_padding));
  EG_TRY(eg_arg_int(n, 8 + off, "groups", &p->groups));
  int64_t g = p->groups;
  if (g < 1) return eg_node_error(n, EG_ERR_INVALID, "groups %lld: must be >= 1", (long long)g);
  p->n = x->shape[0];
  p->c_in = x->shape[1];
  p->h_in = x->shape[2];
  p->w_in = x->shape[3];
  p->k_h = w->shape[2];
  p->k_w = w->shape[3];
  eg_fmt_ints(ws, sizeof ws, w->shape, 4);
  if (p->c_in % g != 0)
    return eg_node_error(n, EG_ERR_INVALID, "input channels %lld not divisible by groups %lld",
                         (long long)p->c_in, (long long)g);
  if (!p->transposed) {
    if (w->shape[1] * g != p->c_in || w->shape[0] % g != 0)
      return eg_node_error(n, EG_ERR_INVALID, "weight %s does not fit input channels %lld and "
                           "groups %lld: expected [Cout, Cin/groups, kH, kW]", ws,
                           (long long)p->c_in, (long long)g);
    for (int i = 0; i < 2; i++)
      if (p->output_padding[i] != 0)
        return eg_node_error(n, EG_ERR_INVALID, "output_padding %lld with transposed=False: "
                             "must be 0", (long long)p->output_padding[i]);
    p->c_out = w->shape[0];
    p->h_out = (p->h_in + 2 * p->padding[0] - p->dilation[0] * (p->k_h - 1) - 1) / p->stride[0] + 1;
    p->w_out = (p->w_in + 2 * p->padding[1] - p->dilation[1] * (p->k_w - 1) - 1) / p->stride[1] + 1;
    if (p->h_in + 2 * p->padding[0] < p->dilation[0] * (p->k_h - 1) + 1 ||
        p->w_in + 2 * p->padding[1] < p->dilation[1] * (p->k_w - 1) + 1)
      return eg_node_error(n, EG_ERR_INVALID, "kernel %lldx%lld (dilation %lld, %lld) larger "
                           "than padded input %lldx%lld", (long long)p->k_h, (long long)p->k_w,
                           (long long)p->dilation[0], (long long)p->dilation[1],
                           (long long)(p->h_in + 2 * p->padding[0]),
                           (long long)(p->w_in + 2 * p->padding[1]));
  } else {
    if (w->shape[0] != p->c_in)
      return eg_node_error(n, EG_ERR_INVALID, "weight %s does not fit input channels %lld: "
                           "transposed expects [Cin, Cout/groups, kH, kW]", ws,
                           (long long)p->c_in);
    for (int i = 0; i < 2; i++)
      if (p->output_padding[i] >= p->stride[i] && p->output_padding[i] >= p->dilation[i])
        return eg_node_error(n, EG_ERR_INVALID, "output_padding %lld not below stride %lld or "
                             "dilation %lld", (long long)p->output_padding[i],
                             (long long)p->stride[i], (long long)p->dilation[i]);
    p->c_out = w->shape[1] * g;
    p->h_out = (p->h_in - 1) * p->stride[0] - 2 * p->padding[0] +
               p->dilation[0] * (p->k_h - 1) + p->output_padding[0] + 1;
    p->w_out = (p->w_in - 1) * p->stride[1] - 2 * p->padding[1] +
               p->dilation[1] * (p->k_w - 1) + p->output_padding[1] + 1;
    if (p->h_out < 1 || p->w_out < 1)
      return eg_node_error(n, EG_ERR_INVALID, "output size %lldx%lld: must be positive",
                           (long long)p->h_out, (long long)p->w_out);
  }
  return EG_OK;
}

static void out_shape(const eg_conv2d_params *p, int64_t s[4]) {
  s[0] = p->n;
  s[1] = p->c_out;
  s[2] = p->h_out;
  s[3] = p->w_out;
}

static const char *const conv_kw[] = {"input", "weight", "bias", "stride", "padding", "dilation",
                                      "transposed", "output_padding", "groups", NULL};

eg_status eg_check_convolution(eg_graph *g, eg_node *n) {
  const eg_value *x, *w, *b;
  eg_conv_attrs *at = EG_ATTRS(n, eg_conv_attrs);
  EG_TRY(eg_node_check_arity(n, 9, 9, conv_kw));
  EG_TRY(eg_arg_tensor(g, n, 0, "input", &x));
  EG_TRY(eg_arg_tensor(g, n, 1, "weight", &w));
  EG_TRY(eg_arg_opt_tensor(g, n, 2, "bias", &b));
  EG_TRY(float4d(n, "input", x));
  EG_TRY(float4d(n, "weight", w));
  EG_TRY(parse_conv(n, x, w, 0, &at->p));
  if (b && (b->dtype != EG_DTYPE_FLOAT32 || b->rank != 1 || b->shape[0] != at->p.c_out))
    return eg_node_error(n, EG_ERR_INVALID, "bias must be float32 [%lld] (output channels)",
                         (long long)at->p.c_out);
  int64_t s[4];
  out_shape(&at->p, s);
  EG_TRY(eg_out_tensor(g, n, EG_DTYPE_FLOAT32, 4, s));
  /* only once the sizes are known to be the recorded ones */
  n->scratch_bytes = eg_convolution_nchw_f32_scratch(&at->p);
  return EG_OK;
}

eg_status eg_run_convolution(const eg_exec *ex, const eg_node *n) {
  const eg_conv_attrs *at = EG_ATTRS(n, const eg_conv_attrs);
  eg_convolution_nchw_f32_prepared(&at->p, eg_exec_arg(ex, n, 0, "input"),
                                   eg_exec_arg(ex, n, 1, "weight"), ex->prepared,
                                   eg_exec_arg(ex, n, 2, "bias"), eg_exec_out(ex, n),
                                   ex->scratch);
  return EG_OK;
}

static const char *const conv_bwd_kw[] = {"grad_output", "input", "weight", "bias_sizes",
                                          "stride", "padding", "dilation", "transposed",
                                          "output_padding", "groups", "output_mask", NULL};

eg_status eg_check_convolution_backward(eg_graph *g, eg_node *n) {
  const eg_value *gy, *x, *w;
  eg_conv_attrs *at = EG_ATTRS(n, eg_conv_attrs);
  EG_TRY(eg_node_check_arity(n, 11, 11, conv_bwd_kw));
  EG_TRY(eg_arg_tensor(g, n, 0, "grad_output", &gy));
  EG_TRY(eg_arg_tensor(g, n, 1, "input", &x));
  EG_TRY(eg_arg_tensor(g, n, 2, "weight", &w));
  EG_TRY(float4d(n, "grad_output", gy));
  EG_TRY(float4d(n, "input", x));
  EG_TRY(float4d(n, "weight", w));
  EG_TRY(parse_conv(n, x, w, 1, &at->p));
  EG_TRY(eg_arg_bool_list(n, 10, "output_mask", at->mask, 3));
  int64_t s[4], bias_sizes[1];
  int nb;
  out_shape(&at->p, s);
  char got[96], want[96];
  if (memcmp(gy->shape, s, sizeof s) != 0)
    return eg_node_error(n, EG_ERR_INVALID, "grad_output shape %s contradicts the convolution's "
                         "output %s", eg_fmt_ints(got, sizeof got, gy->shape, 4),
                         eg_fmt_ints(want, sizeof want, s, 4));
  /* What the kernel computes is what the trace holds: PyTorch 1.13's CPU path returns
   * grad_weight even for output_mask [*, False, True], and the trace records it, so an element
   * present where the mask is False is computed too. One asked for must be present. */
  EG_TRY(eg_out_tuple(g, n, 3));
  const eg_value *t = &g->values[n->output];
  for (int i = 0; i < 3; i++) {
    if (at->mask[i] && t->elems[i] < 0)
      return eg_node_error(n, EG_ERR_INVALID, "output element %d is None but output_mask[%d] "
                           "is True", i, i);
    at->mask[i] = t->elems[i] >= 0;
  }
  /* bias_sizes matters only when grad_bias is computed (autograd passes [0] for a conv
   * without bias, whose mask[2] is False). */
  EG_TRY(eg_arg_opt_int_list(n, 3, "bias_sizes", bias_sizes, 1, 1, &nb));
  if (at->mask[2] && nb == 1 && bias_sizes[0] != at->p.c_out)
    return eg_node_error(n, EG_ERR_INVALID, "bias_sizes [%lld]: expected [%lld] (output "
                         "channels)", (long long)bias_sizes[0], (long long)at->p.c_out);
  n->scratch_bytes = eg_convolution_backward_nchw_f32_scratch(&at->p, at->mask);
  int64_t cout[1] = {at->p.c_out};
  EG_TRY(eg_out_elem(g, n, 0, at->mask[0], EG_DTYPE_FLOAT32, 4, x->shape));
  EG_TRY(eg_out_elem(g, n, 1, at->mask[1], EG_DTYPE_FLOAT32, 4, w->shape));
  return eg_out_elem(g, n, 2, at->mask[2], EG_DTYPE_FLOAT32, 1, cout);
}

eg_status eg_run_convolution_backward(const eg_exec *ex, const eg_node *n) {
  const eg_conv_attrs *at = EG_ATTRS(n, const eg_conv_attrs);
  eg_convolution_backward_nchw_f32_prepared(
      &at->p, at->mask, eg_exec_arg(ex, n, 0, "grad_output"), eg_exec_arg(ex, n, 1, "input"),
      eg_exec_arg(ex, n, 2, "weight"), ex->prepared, eg_exec_elem(ex, n, 0),
      eg_exec_elem(ex, n, 1), eg_exec_elem(ex, n, 2), ex->scratch);
  return EG_OK;
}

/* Only the convolutions prepare anything: what their kernels derive from the weight. */
size_t eg_op_prepared_bytes(const eg_node *n, int32_t *from) {
  const eg_conv_attrs *at = EG_ATTRS(n, const eg_conv_attrs);
  if (n->op == EG_OP_convolution) {
    *from = eg_exec_arg_id(n, 1, "weight");
    return eg_convolution_nchw_f32_prepared_bytes(&at->p);
  }
  if (n->op == EG_OP_convolution_backward) {
    *from = eg_exec_arg_id(n, 2, "weight");
    return eg_convolution_backward_nchw_f32_prepared_bytes(&at->p, at->mask);
  }
  *from = -1;
  return 0;
}

void eg_op_prepare(const eg_node *n, const void *from_data, void *out) {
  const eg_conv_attrs *at = EG_ATTRS(n, const eg_conv_attrs);
  if (n->op == EG_OP_convolution)
    eg_convolution_nchw_f32_prepare(&at->p, from_data, out);
  else if (n->op == EG_OP_convolution_backward)
    eg_convolution_backward_nchw_f32_prepare(&at->p, at->mask, from_data, out);
}
