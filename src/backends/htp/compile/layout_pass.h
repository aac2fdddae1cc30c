/* layout_pass.h — the htp backend's compile-time pass over a lowered partition's QNN graph that
 * decides how the executor runs its layout Transposes (exec_plan.h): which it folds, which it
 * skips with their reader or producer taking the other layout. It reads the graph only (tensor
 * types, dtypes, dims, perms, conv attrs), never a thread count or precision, so a compiled
 * program runs every partition the same way on every host; the lowering runs it on every
 * partition it lowers (lower.h) and the .egp stores its result.
 *
 * Decisions, in graph order:
 *   FOLD  a Transpose of a FLOAT_32 STATIC tensor or of a folded Transpose's output into a
 *         NATIVE FLOAT_32 tensor (the dgrad graph's Transpose of a frozen HWIO weight costs
 *         8-14% of a ResNet layer's input gradient when run every time);
 *   SKIP, filter read OI: a folded Transpose [0,1,3,2] of a STATIC weight whose every reader
 *         (at least one) reads it as the filter (input 1) of a TransposeConv2d of group 1: those
 *         read the forward conv's HWIO weight as it is (a frozen conv's weight held once);
 *   SKIP, filter read OIHW: a Transpose [2,3,1,0] (Conv2d filters) or [2,3,0,1]
 *         (TransposeConv2d filters) of an APP_WRITE FLOAT_32 (trainable, OIHW) weight into a
 *         NATIVE tensor whose every reader (at least one) reads it as input 1 of such an op that
 *         takes the OIHW weight (groups 1; a Conv2d not run by Winograd) and has few pixels
 *         against its channels (EG_HTP_OIHW_PIXELS_PER_C: the gather is per pixel, the permute
 *         per weight element; ResNet's layers 3 and 4): the trainable weights' permutes cost
 *         ResNet-18's full-training step 25 of 87 ms, three weight-sized Transposes per conv;
 *   SKIP, y_dst: a Transpose [3,0,1,2] that is the only reader of a NATIVE Conv2d output (the
 *         weight gradient's [ci, kh, kw, co] back to OIHW) whose Conv2d takes the mode (groups
 *         1, not Winograd): the Conv2d writes the Transpose's output itself;
 *   ALIAS a Reshape eg_htp_reshape_aliases allows (the grouped weight gradient's two per
 *         depthwise conv, the tap form's, a partition input's): its output is its input's
 *         bytes, no copy;
 *   FUSED, last: every elementwise op eg_htp_fuse_candidate allows (its output read by one
 *         later elementwise op alone, over the same elements), unless its group's tail does
 *         not fit the chain kernel (eg_htp_fused_group_fits), whose group then runs op by op:
 *         batch norm's apply (x_c * scale + shift), its backward's input gradient (four ops
 *         over the tensor), ReLU6's backward (two comparisons and two Selects) each run as one
 *         pass instead of writing and reading back a tensor per op; a group read by a
 *         ReduceSum or ReduceMean over every dim but the last (batch norm's variance and
 *         running variance: (x - mean)^2 per channel) is summed by the reduction, without
 *         the squares' tensor. */
#ifndef EG_BACKENDS_HTP_LAYOUT_PASS_H
#define EG_BACKENDS_HTP_LAYOUT_PASS_H

#include "backends/htp/exec_plan.h"
#include "backends/htp/qnn_graph.h"

enum { EG_HTP_OIHW_PIXELS_PER_C = 4 };

/* *out (initialised here, the caller frees it) <- the plan of graph g. */
eg_status eg_htp_layout_pass(const eg_htp_qnn_graph *g, eg_htp_exec_plan *out);

#endif
