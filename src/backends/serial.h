/* serial.h — how a backend stores its lowered partitions in a compiled program file (.egp,
 * program/egp_format.h) without knowing the file's layout: the NPU section holds, per
 * partition, the name of the backend that owns it and a record of bytes only that backend
 * reads (its eg_backend.write puts them, its eg_backend_rt.read gets them back). The file's
 * writer (compiler/egp_write.c) implements the sink, its reader (program/egp_read.c) the
 * source; a backend only calls these functions.
 *
 * Encoding: little-endian; a string is an index into the file's STRINGS section (each distinct
 * string stored once); static bytes are a range of the STATIC section (64-byte aligned,
 * identical ranges stored once, shared with the IR's statics), read back in place: the bytes
 * stay valid as long as the program read from the file. */
#ifndef EG_BACKENDS_SERIAL_H
#define EG_BACKENDS_SERIAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edgegrad.h"
#include "util/error.h"

typedef struct eg_egp_sink eg_egp_sink;     /* compiler/egp_write.c */
typedef struct eg_egp_source eg_egp_source; /* program/egp_read.c */

/* Writing: nothing fails here; running out of memory is reported when the file is written. */
void eg_sink_u8(eg_egp_sink *s, uint32_t v);
void eg_sink_u32(eg_egp_sink *s, uint32_t v);
void eg_sink_i32(eg_egp_sink *s, int32_t v);
void eg_sink_u64(eg_egp_sink *s, uint64_t v);
void eg_sink_i64(eg_egp_sink *s, int64_t v);
void eg_sink_f32(eg_egp_sink *s, float v);
/* A string (NULL: an absent optional one). */
void eg_sink_str(eg_egp_sink *s, const char *str);
/* Bytes of the STATIC section: stored once however often they are put (u64 offset, u64
 * nbytes in the record). */
void eg_sink_static(eg_egp_sink *s, const void *data, size_t nbytes);

/* Reading: every call checks what it reads against the bytes left in the record; a failure
 * leaves the one-line message "<file>: NPU: <what>: ..." and returns its status. `what`
 * names the field for that message. */
eg_status eg_source_u8(eg_egp_source *s, const char *what, uint8_t *out);
eg_status eg_source_bool(eg_egp_source *s, const char *what, bool *out);
eg_status eg_source_u32(eg_egp_source *s, const char *what, uint32_t *out);
eg_status eg_source_i32(eg_egp_source *s, const char *what, int32_t *out);
eg_status eg_source_u64(eg_egp_source *s, const char *what, uint64_t *out);
eg_status eg_source_i64(eg_egp_source *s, const char *what, int64_t *out);
eg_status eg_source_f32(eg_egp_source *s, const char *what, float *out);
/* A string; with `optional`, NULL for an absent one. */
eg_status eg_source_str(eg_egp_source *s, const char *what, bool optional, const char **out);
/* A count of records of at least `min_each` bytes each that fit in the bytes left, at most
 * `max`. */
eg_status eg_source_count(eg_egp_source *s, const char *what, size_t min_each, uint32_t max,
                          int32_t *out);
/* An id in [lo, hi). */
eg_status eg_source_id(eg_egp_source *s, const char *what, int32_t lo, int32_t hi, int32_t *out);
/* A STATIC range of exactly `nbytes` bytes: its first byte, in place. */
eg_status eg_source_static(eg_egp_source *s, const char *what, size_t nbytes, const void **data);
/* A format error of the record: the message "<file>: NPU: " then the formatted text. */
eg_status eg_source_error(eg_egp_source *s, eg_status st, const char *fmt, ...) EG_PRINTF(3, 4);
/* The same prefix before the message a callee left (e.g. a graph builder's rule). */
eg_status eg_source_prefix(eg_egp_source *s, eg_status st, const char *fmt, ...) EG_PRINTF(3, 4);

#endif
