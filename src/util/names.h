/* names.h — finding a repeated name in a list in O(n log n).
 * The graph JSON loader and the .egp reader both refuse a list (nodes, inputs, outputs,
 * statics) in which a name repeats; comparing every pair took half a minute for 80k nodes. */
#ifndef EG_UTIL_NAMES_H
#define EG_UTIL_NAMES_H

#include <stddef.h>
#include <stdint.h>

/* The names are the `const char *` at the start of each of n structs `stride` bytes apart,
 * from `names`. Returns 1 when a name repeats: *later is the lowest index whose name an
 * earlier entry has and *first that earlier entry (what a pairwise scan would report);
 * 0 when all are distinct; -1 when out of memory. */
int eg_names_find_repeat(const char *const *names, size_t stride, int32_t n, int32_t *later,
                         int32_t *first);

/* Entry i's name in such a list. */
const char *eg_names_at(const char *const *names, size_t stride, int32_t i);

/* The name under which boundary tensor `name` (QNN tensor `tensor` of its graph) appears outside
 * edgegrad: as a graph input or output of the partition's ONNX model (edgegrad export-onnx) and
 * as the file <name>.npy of a partition dump (edgegrad run --dump-partitions). A QNN name made of
 * [A-Za-z0-9_.-] only, not starting with '.', at most 200 bytes, is kept as it is; any other gets
 * each other byte replaced by '_', is cut to 200 bytes and gets "~<tensor>" appended, so the
 * names stay unique within the graph and each is a safe file name. Writes at most `size` bytes,
 * always NUL-terminated (EG_EXPORT_NAME_MAX is always enough). */
#define EG_EXPORT_NAME_MAX 224
void eg_export_name(const char *name, int32_t tensor, char *out, size_t size);

#endif
