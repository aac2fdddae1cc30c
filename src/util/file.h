/* file.h — how edgegrad opens, reads and writes files; every reader and writer goes through here.
 *
 * Reading: eg_file_open_read (edgegrad.h) refuses anything but a regular file before a blocking
 * open could hang on it (a FIFO without a writer, a terminal), so a wrong path is an error,
 * never a hang. eg_file_read reads at most `max_size` bytes (a larger file is an error, never a
 * truncation).
 *
 * Writing: eg_file_write_atomic (edgegrad.h) writes a new file beside the target under a random
 * name, created with O_EXCL (never through a file or symbolic link planted at that name), and
 * renames it over the target, so readers see the old file or the new one, never half of one. */
#ifndef EG_UTIL_FILE_H
#define EG_UTIL_FILE_H

#include <stddef.h>

#include "edgegrad.h"

eg_status eg_file_read(const char *path, size_t max_size, void **data, size_t *size);

/* Reads exactly `n` bytes of `fd` into `buf`; `path` names it in messages. */
eg_status eg_file_read_fd(const char *path, int fd, void *buf, size_t n);

/* Folder part of `path` ("." if none) joined with `name`, malloc'ed; NULL when out of memory. */
char *eg_path_sibling(const char *path, const char *name);

#endif
