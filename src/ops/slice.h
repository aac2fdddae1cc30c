/* slice.h — the parsed arguments of aten.slice.Tensor, slice_backward, select.int and
 * select_backward (checked and filled in by src/ops/tensor.c), which the NPU builders read too.
 *
 * The view is dim's elements index, index + step, ..., len of them (ATen's clamped slice of
 * [start, end) with step > 0; select: its one index, step 1, len 1). */
#ifndef EG_OPS_SLICE_H
#define EG_OPS_SLICE_H

#include <stdint.h>

#include "ir/graph.h"

typedef struct eg_slice_attrs {
  int32_t dim;
  int64_t index, step, len;
} eg_slice_attrs;
EG_ATTRS_FIT(eg_slice_attrs);

#endif
