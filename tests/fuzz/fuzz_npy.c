/* fuzz_npy.c — bytes as a .npy file, read with eg_npy_load (the public API: eg_file_read +
 * eg_npy_parse, which also reads .npz members in memory); an accepted tensor's every byte is
 * read back. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  eg_tensor t;
  if (eg_npy_load(eg_fuzz_input("input.npy", data, size), &t) != EG_OK) return 0;
  eg_fuzz_read_bytes(t.data, (size_t)eg_tensor_numel(&t) * eg_dtype_size(t.dtype));
  eg_tensor_free(&t);
  return 0;
}
