/* sum_dense — sums of a dense, C-ordered tensor over any set of its dims (aten.sum / aten.mean).
 *
 * The caller describes the reduction once with eg_sum_geom_init (shape + which dims are
 * reduced); the geometry drops size-1 dims and merges neighbouring dims that are all reduced or
 * all kept, so every reduction becomes alternating groups, e.g. a bias gradient
 * [N, C, H, W] over {0, 2, 3} -> [N:reduced, C:kept, H*W:reduced]. The kernels then make one
 * linear pass over the input: each contiguous run of the innermost group is summed into one
 * accumulator (innermost reduced) or added element-wise into a row of accumulators (innermost
 * kept). No output element is gathered with a stride, so reducing leading dims costs the same as
 * reducing trailing ones.
 *
 * Accumulators: double for floating inputs, int64 (wrapping, as ATen's) for integer and bool
 * inputs. float32 inputs are first summed in float over short stretches (at most 512 adjacent
 * elements, or 16 rows of one column), like pairwise summation, so long sums keep ~1e-7
 * relative accuracy. `acc` has out_numel elements and is fully overwritten. Results do not
 * depend on the number of threads: every accumulator sums its inputs in the same order, and a
 * full reduction sums fixed-size chunks whose partial sums are combined in order.
 *
 * Kernels know nothing about graphs and never allocate: scratch is at least
 * eg_sum_dense_scratch(g) bytes (may be 0), 8-byte aligned. */
#ifndef EG_KERNELS_SUM_DENSE_H
#define EG_KERNELS_SUM_DENSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edgegrad.h"

typedef struct eg_sum_geom {
  int rank;                        /* number of groups; 0 when the input has one element */
  int64_t size[EG_MAX_RANK];       /* group sizes, outermost first */
  bool reduced[EG_MAX_RANK];       /* alternates between neighbours */
  int64_t out_stride[EG_MAX_RANK]; /* accumulator stride of each group, 0 when reduced */
  int64_t in_numel, out_numel;
} eg_sum_geom;

/* Describes summing an input of `shape` (rank dims, rank <= EG_MAX_RANK) over the dims d with
 * reduced[d]. The output has out_numel = product of the kept dims' sizes. */
void eg_sum_geom_init(eg_sum_geom *g, int rank, const int64_t *shape, const bool *reduced);

/* Bytes of scratch the kernels need for this geometry. */
size_t eg_sum_dense_scratch(const eg_sum_geom *g);

void eg_sum_dense_f32(const eg_sum_geom *g, const float *x, double *acc, void *scratch);
void eg_sum_dense_f64(const eg_sum_geom *g, const double *x, double *acc, void *scratch);
void eg_sum_dense_i64(const eg_sum_geom *g, const int64_t *x, int64_t *acc, void *scratch);
void eg_sum_dense_i32(const eg_sum_geom *g, const int32_t *x, int64_t *acc, void *scratch);
void eg_sum_dense_i8(const eg_sum_geom *g, const int8_t *x, int64_t *acc, void *scratch);
/* uint8 and bool (one byte, 0 or 1). */
void eg_sum_dense_u8(const eg_sum_geom *g, const uint8_t *x, int64_t *acc, void *scratch);

/* eg_sum_dense_f32 of the squared deviations d * d, d = x + alpha * m (each rounded to float,
 * as the elementwise kernels round them), without storing them: bit for bit the sum of the
 * tensor the sub and mul kernels would write (a batch norm's variance statistic,
 * runtime/fuse.h). m holds one value per output element (per_output: each element's d uses
 * the m of the output element it is summed into) or one value. g must reduce its innermost
 * group (x as [N, C, H, W] summed over {0, 2, 3} with H * W > 1, m one value per channel). */
void eg_sum_sq_dev_f32(const eg_sum_geom *g, const float *x, const float *m, float alpha,
                       bool per_output, double *acc, void *scratch);

#endif
