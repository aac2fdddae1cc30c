/* dtype.c — dtype names and sizes (public API). */
#include "edgegrad.h"
#include "util/checked.h"

static const struct {
  const char *name;
  size_t size;
} eg_dtypes[EG_DTYPE_COUNT] = {
    [EG_DTYPE_FLOAT32] = {"float32", 4}, [EG_DTYPE_FLOAT64] = {"float64", 8},
    [EG_DTYPE_FLOAT16] = {"float16", 2}, [EG_DTYPE_INT64] = {"int64", 8},
    [EG_DTYPE_INT32] = {"int32", 4},     [EG_DTYPE_INT8] = {"int8", 1},
    [EG_DTYPE_UINT8] = {"uint8", 1},     [EG_DTYPE_BOOL] = {"bool", 1},
};

const char *eg_dtype_name(eg_dtype dtype) {
  return (unsigned)dtype < EG_DTYPE_COUNT ? eg_dtypes[dtype].name : "?";
}

size_t eg_dtype_size(eg_dtype dtype) {
  return (unsigned)dtype < EG_DTYPE_COUNT ? eg_dtypes[dtype].size : 0;
}

/* -1 for what no reader would accept (util/checked.h's rule), so that the count a caller
 * multiplies by eg_dtype_size cannot have wrapped. */
int64_t eg_tensor_numel(const eg_tensor *t) {
  if (!t || t->rank < 0 || t->rank > EG_MAX_RANK) return -1;
  return eg_shape_numel(t->shape, t->rank, EG_MAX_NUMEL);
}
