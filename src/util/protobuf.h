/* protobuf.h — a writer of Protocol Buffers' wire format, enough to emit ONNX models
 * (api/export_onnx.c) without a protobuf library or generated code: varints, fixed32 floats,
 * length-delimited bytes and embedded messages, fields in the order the caller writes them.
 *
 * A message is built in an eg_pb buffer; an embedded message is built in its own buffer and
 * appended with eg_pb_message (length first, as the format needs). Repeated scalars are written
 * one tag per element (proto2's unpacked form, which every parser accepts). Out of memory
 * latches `failed`: the writes after it do nothing and the caller checks once at the end. */
#ifndef EG_UTIL_PROTOBUF_H
#define EG_UTIL_PROTOBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct eg_pb {
  unsigned char *data;
  size_t len, cap;
  bool failed;
} eg_pb;

/* Field `field` as a varint: int32/int64/enum/bool (negative values take ten bytes). */
void eg_pb_int(eg_pb *b, uint32_t field, int64_t v);
/* Field `field` as a fixed32 float. */
void eg_pb_float(eg_pb *b, uint32_t field, float v);
/* Field `field` as length-delimited bytes (string, bytes). */
void eg_pb_bytes(eg_pb *b, uint32_t field, const void *data, size_t size);
void eg_pb_string(eg_pb *b, uint32_t field, const char *s);
/* Field `field` holding the embedded message `m` (which the caller still owns). A failed `m`
 * fails `b`. */
void eg_pb_message(eg_pb *b, uint32_t field, const eg_pb *m);
/* Appends the bytes of `m` as they are (fields written into `m` become fields of `b`). */
void eg_pb_append(eg_pb *b, const eg_pb *m);
/* Frees the buffer and resets it to empty. */
void eg_pb_free(eg_pb *b);

#endif
