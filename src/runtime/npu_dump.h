/* npu_dump.h — an NPU partition's boundary tensors written as .npy files while a compiled
 * runtime runs (eg_runtime_options.dump_partitions_dir, `edgegrad run --dump-partitions DIR`):
 * what lets a partition be checked on its own, e.g. its ONNX model (`edgegrad export-onnx`) fed
 * from the dump and its outputs compared with the dump on another backend.
 *
 * Layout: DIR/partition_<k>/<name>.npy for every boundary tensor of partition k (the name
 * lowering gives its graph, `edgegrad inspect`), <name> the backend's tensor name (eg_backend_rt
 * describe_tensor) through eg_export_name (util/names.h). The inputs are written just before the partition runs, the
 * outputs just after; two outputs of one tensor write its file once (the first one's). Each
 * file holds the IR value as the CPU side and PyTorch see it: the IR dtype (int64 for a value
 * the NPU narrows to int32, float32 for one it holds quantized) and the IR shape, NCHW. The
 * runtime's buffer already holds it so, except for a value the runtime keeps NHWC between
 * partitions (`held_nhwc`, eg_nhwc_between_partitions): that one is permuted back to NCHW
 * for the file. Files are written atomically (eg_npy_save); folders are made when missing.
 *
 * Cost: nothing unless called. A dump allocates (paths, a permuted copy) and writes files while
 * the run runs; the runtime's memory plan is unchanged. */
#ifndef EG_RUNTIME_NPU_DUMP_H
#define EG_RUNTIME_NPU_DUMP_H

#include <stdbool.h>

#include "backends/lowered.h"

/* Checks `dir` when a runtime is created, before any run: an existing folder, or a path whose
 * parent is an existing folder (the first dump creates it). EG_ERR_ARGUMENT naming `dir`
 * otherwise; nothing is created. */
eg_status eg_npu_dump_check(const char *dir);

/* Writes the inputs (outputs false) or outputs of partition `k` (lowered as `hp`) of graph `g`
 * from the runtime's per-value buffers `data` into dir/partition_<k>, making dir and that
 * folder when missing. `held_nhwc` (per value id, or NULL: none) marks the values whose buffer
 * holds NHWC order. EG_ERR_IO naming the path when a folder or file cannot be made. */
eg_status eg_npu_dump_write(const char *dir, int32_t k, const eg_graph *g,
                            const eg_lowered *hp, bool outputs, void *const *data,
                            const bool *held_nhwc);

#endif
