/* safetensors.h — reader and writer of the safetensors weight format.
 *
 * Layout (https://github.com/huggingface/safetensors), all little-endian:
 *   bytes [0, 8)        u64 N, the header length
 *   bytes [8, 8+N)      UTF-8 JSON object: for each tensor name
 *                         {"dtype": "F32"|"F64"|"F16"|"I64"|"I32"|"I8"|"U8"|"BOOL",
 *                          "shape": [d0, ...], "data_offsets": [begin, end]}
 *                       and optionally "__metadata__": {string: string}
 *   bytes [8+N, EOF)    the byte buffer; a tensor's bytes are buffer[begin, end), C order.
 * The reader checks every field: known dtype, a shape whose dimensions are in [0, 2^40] and whose
 * non-zero dimensions multiply to at most 2^40 (util/checked.h), begin <= end <= buffer size,
 * end - begin == numel * dtype size. Data is not guaranteed aligned; eg_safetensors_copy copies
 * a tensor out. */
#ifndef EG_FRONTEND_SAFETENSORS_H
#define EG_FRONTEND_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "edgegrad.h"

typedef struct eg_st_entry {
  char *name;
  eg_dtype dtype;
  int32_t rank;
  int64_t shape[EG_MAX_RANK];
  size_t begin, nbytes; /* within the byte buffer */
} eg_st_entry;

typedef struct eg_safetensors {
  unsigned char *file;  /* whole file */
  size_t file_size;
  const unsigned char *buffer; /* byte buffer start */
  size_t buffer_size;
  int32_t n;
  eg_st_entry *entries;
} eg_safetensors;

eg_status eg_safetensors_open(const char *path, eg_safetensors *out);
void eg_safetensors_close(eg_safetensors *st);
/* NULL if there is no tensor of that name. */
const eg_st_entry *eg_safetensors_find(const eg_safetensors *st, const char *name);

/* Writes tensors (names[i] -> tensors[i]) atomically. */
eg_status eg_safetensors_save(const char *path, int n, const char *const *names,
                              const eg_tensor *tensors);

#endif
