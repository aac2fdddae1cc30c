/* struct_size.h — the struct size rules of the public API (edgegrad.h, "binary compatibility:
 * struct sizes"): reading a caller's sized structure into the library's own layout, and
 * filling a caller's structure of `out_size` bytes from the library's. */
#ifndef EG_API_STRUCT_SIZE_H
#define EG_API_STRUCT_SIZE_H

#include <stddef.h>

#include "edgegrad.h"

/* Checks `size`, the caller's size of a structure called `type` whose alignment is `align`:
 * a multiple of it, from `min` to EG_STRUCT_SIZE_MAX; else EG_ERR_ARGUMENT naming `where`. */
eg_status eg_struct_size_check(size_t size, size_t align, size_t min, const char *where,
                               const char *type);

/* Reads the caller's structure at `src` (its leading size_t struct_size) into `dst`, the
 * library's layout of `dst_size` bytes, which holds the defaults: the caller's bytes up to
 * min(struct_size, dst_size) replace them; struct_size is checked (eg_struct_size_check, at
 * least `min`) and any byte past dst_size must be 0. dst's struct_size becomes dst_size. */
eg_status eg_struct_read(void *dst, size_t dst_size, size_t align, size_t min, const void *src,
                         const char *where, const char *type);

/* Fills the caller's `out` of `out_size` bytes with the library's `src` (`src_size` bytes):
 * the first min(out_size, src_size) bytes, zeros after them. The size is checked first
 * (eg_struct_size_check with min = its alignment); nothing is written when it fails. */
eg_status eg_struct_write(void *out, size_t out_size, size_t align, const void *src,
                          size_t src_size, const char *where, const char *type);

#define EG_STRUCT_READ(type, dst, src, where) \
  eg_struct_read(dst, sizeof(type), _Alignof(type), sizeof(size_t), src, where, #type)
#define EG_STRUCT_WRITE(type, out, out_size, src, where) \
  eg_struct_write(out, out_size, _Alignof(type), src, sizeof(type), where, #type)

#endif
