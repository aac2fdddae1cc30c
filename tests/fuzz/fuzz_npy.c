/* fuzz_npy.c — bytes as a .npy file, read three ways the library offers: from a file
 * (eg_npy_load), held in memory (eg_npy_parse, as an app's asset) and streamed in pieces of 1 to
 * 16 bytes (eg_npy_read over a source that gives short reads, as a pipe or an .npz member
 * does). The three must agree: all accept the bytes or all refuse them, and what they accept is
 * the same tensor (dtype, shape, every byte), whose every byte is read back. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

/* eg_npy_read's source: the input, handed out in pieces of a length drawn from `state`. */
typedef struct pieces {
  const uint8_t *p;
  size_t left;
  uint32_t state;
} pieces;

static int64_t pieces_read(void *user, void *buf, size_t size) {
  pieces *src = user;
  src->state = src->state * 1664525u + 1013904223u;
  size_t n = 1 + (src->state >> 16) % 16;
  if (n > size) n = size;
  if (n > src->left) n = src->left;
  memcpy(buf, src->p, n);
  src->p += n;
  src->left -= n;
  return (int64_t)n;
}

static size_t nbytes(const eg_tensor *t) {
  return (size_t)eg_tensor_numel(t) * eg_dtype_size(t->dtype);
}

/* Whether two tensors are the same: dtype, rank, shape and bytes. */
static int same(const eg_tensor *a, const eg_tensor *b) {
  if (a->dtype != b->dtype || a->rank != b->rank) return 0;
  for (int d = 0; d < a->rank; d++)
    if (a->shape[d] != b->shape[d]) return 0;
  return nbytes(a) == 0 || memcmp(a->data, b->data, nbytes(a)) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  eg_tensor f = {0}, m = {0}, s = {0};
  const int ok_f = eg_npy_load(eg_fuzz_input("input.npy", data, size), &f) == EG_OK;
  const int ok_m = eg_npy_parse("input.npy", data, size, &m) == EG_OK;
  pieces src = {data, size, (uint32_t)size};
  const int ok_s = eg_npy_read("input.npy", size, pieces_read, &src, &s) == EG_OK;
  if (ok_f != ok_m || ok_f != ok_s) abort(); /* one reader accepts what another refuses */
  if (ok_f) {
    if (eg_tensor_numel(&f) < 0 || !same(&f, &m) || !same(&f, &s)) abort();
    eg_fuzz_read_bytes(f.data, nbytes(&f));
  }
  eg_tensor_free(&f);
  eg_tensor_free(&m);
  eg_tensor_free(&s);
  return 0;
}
