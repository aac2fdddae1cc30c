/* fuzz_npy.c — bytes as a .npy file, read with eg_npy_load (the public API); an accepted
 * tensor's every byte is read back. */
#include <stdlib.h>

#include "fuzz_common.h"

static volatile unsigned eg_fuzz_npy_sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  eg_fuzz_clear_error();
  const char *path = eg_fuzz_write_file("input.npy", data, size);
  if (!path) abort();
  eg_tensor t;
  if (eg_npy_load(path, &t) == EG_OK) {
    const unsigned char *p = t.data;
    size_t bytes = (size_t)eg_tensor_numel(&t) * eg_dtype_size(t.dtype);
    unsigned sum = 0;
    for (size_t i = 0; i < bytes; i++) sum += p[i];
    eg_fuzz_npy_sink += sum;
    eg_tensor_free(&t);
  }
  return 0;
}
