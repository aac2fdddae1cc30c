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

#endif
