/* egp_write.h — writing a compiled program file (format: program/egp_format.h). */
#ifndef EG_COMPILER_EGP_WRITE_H
#define EG_COMPILER_EGP_WRITE_H

#include <stddef.h>

#include "program/program.h"

/* Writes program `p` (its graph, placement, lowered partitions, steps and target) to `path`
 * atomically (util/file.h). */
eg_status eg_egp_write(const eg_program *p, const char *path);
/* The same bytes into a malloc'ed buffer (*data, *size; free with free()). */
eg_status eg_egp_write_memory(const eg_program *p, void **data, size_t *size);

#endif
