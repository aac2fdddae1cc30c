/* struct_size.c — the struct size rules of the public API (struct_size.h). */
#include "api/struct_size.h"

#include <string.h>

#include "util/error.h"

eg_status eg_struct_size_check(size_t size, size_t align, size_t min, const char *where,
                               const char *type) {
  if (size < min || size > EG_STRUCT_SIZE_MAX || size % align != 0)
    return eg_error(EG_ERR_ARGUMENT, "%s: %s size (%zu bytes): must be the sizeof the caller "
                    "declares it with, a multiple of %zu from %zu to %d (set struct_size: "
                    "the EG_*_INIT initialisers and eg_*_defaults do)", where, type, size, align,
                    min, EG_STRUCT_SIZE_MAX);
  return EG_OK;
}

eg_status eg_struct_read(void *dst, size_t dst_size, size_t align, size_t min, const void *src,
                         const char *where, const char *type) {
  size_t size;
  memcpy(&size, src, sizeof size);
  EG_TRY(eg_struct_size_check(size, align, min, where, type));
  const unsigned char *bytes = src;
  for (size_t i = dst_size; i < size; i++)
    if (bytes[i] != 0)
      return eg_error(EG_ERR_ARGUMENT, "%s: %s byte %zu of %zu (0x%02x): this library's %s "
                      "has %zu bytes; a newer header's fields past them must be left at 0 "
                      "(their default), since this library cannot do what they ask", where,
                      type, i, size, bytes[i], type, dst_size);
  memcpy(dst, src, size < dst_size ? size : dst_size);
  memcpy(dst, &dst_size, sizeof dst_size);
  return EG_OK;
}

eg_status eg_struct_write(void *out, size_t out_size, size_t align, const void *src,
                          size_t src_size, const char *where, const char *type) {
  EG_TRY(eg_struct_size_check(out_size, align, align, where, type));
  size_t n = out_size < src_size ? out_size : src_size;
  memcpy(out, src, n);
  memset((unsigned char *)out + n, 0, out_size - n);
  return EG_OK;
}
