/* file.h — whole-file reads and atomic writes.
 * eg_file_read reads at most `max_size` bytes (a larger file is an error, never a truncation).
 * eg_file_write_atomic writes all parts to "<path>.tmp.<pid>" in the same folder, flushes, and
 * renames it over `path`, so readers see the old file or the new one, never half of one. */
#ifndef EG_UTIL_FILE_H
#define EG_UTIL_FILE_H

#include <stddef.h>

#include "edgegrad.h"

eg_status eg_file_read(const char *path, size_t max_size, void **data, size_t *size);

typedef struct eg_file_part {
  const void *data;
  size_t size;
} eg_file_part;
eg_status eg_file_write_atomic(const char *path, const eg_file_part *parts, int n_parts);

/* Folder part of `path` ("." if none) joined with `name`, malloc'ed; NULL when out of memory. */
char *eg_path_sibling(const char *path, const char *name);

#endif
