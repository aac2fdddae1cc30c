/* protobuf.c — Protocol Buffers wire-format writer (see protobuf.h). */
#include "util/protobuf.h"

#include <stdlib.h>
#include <string.h>

enum { WIRE_VARINT = 0, WIRE_FIXED32 = 5, WIRE_LEN = 2 };

static bool reserve(eg_pb *b, size_t more) {
  if (b->failed) return false;
  if (more <= b->cap - b->len) return true;
  if (more > SIZE_MAX / 2 - b->len) {
    b->failed = true;
    return false;
  }
  size_t cap = b->cap ? b->cap : 256;
  while (cap - b->len < more) cap *= 2;
  unsigned char *p = realloc(b->data, cap);
  if (!p) {
    b->failed = true;
    return false;
  }
  b->data = p;
  b->cap = cap;
  return true;
}

static void put(eg_pb *b, const void *data, size_t size) {
  if (size == 0 || !reserve(b, size)) return;
  memcpy(b->data + b->len, data, size);
  b->len += size;
}

static void varint(eg_pb *b, uint64_t v) {
  unsigned char buf[10];
  size_t n = 0;
  do {
    buf[n] = (unsigned char)(v & 0x7f);
    v >>= 7;
    if (v) buf[n] |= 0x80;
    n++;
  } while (v);
  put(b, buf, n);
}

static void tag(eg_pb *b, uint32_t field, unsigned wire) { varint(b, (uint64_t)field << 3 | wire); }

void eg_pb_int(eg_pb *b, uint32_t field, int64_t v) {
  tag(b, field, WIRE_VARINT);
  varint(b, (uint64_t)v);
}

void eg_pb_float(eg_pb *b, uint32_t field, float v) {
  uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  const unsigned char le[4] = {(unsigned char)bits, (unsigned char)(bits >> 8),
                               (unsigned char)(bits >> 16), (unsigned char)(bits >> 24)};
  tag(b, field, WIRE_FIXED32);
  put(b, le, sizeof le);
}

void eg_pb_bytes(eg_pb *b, uint32_t field, const void *data, size_t size) {
  tag(b, field, WIRE_LEN);
  varint(b, size);
  put(b, data, size);
}

void eg_pb_string(eg_pb *b, uint32_t field, const char *s) { eg_pb_bytes(b, field, s, strlen(s)); }

void eg_pb_message(eg_pb *b, uint32_t field, const eg_pb *m) {
  if (m->failed) b->failed = true;
  eg_pb_bytes(b, field, m->data, m->len);
}

void eg_pb_append(eg_pb *b, const eg_pb *m) {
  if (m->failed) b->failed = true;
  put(b, m->data, m->len);
}

void eg_pb_free(eg_pb *b) {
  free(b->data);
  *b = (eg_pb){0};
}
