/* fuzz_safetensors.c — bytes as a safetensors file, opened with eg_safetensors_open; every
 * entry accepted is looked up by name and its bytes read. */
#include <stdlib.h>

#include "frontend/safetensors.h"
#include "fuzz_common.h"

static volatile unsigned eg_fuzz_st_sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  eg_fuzz_clear_error();
  const char *path = eg_fuzz_write_file("input.safetensors", data, size);
  if (!path) abort();
  eg_safetensors st;
  if (eg_safetensors_open(path, &st) != EG_OK) return 0;
  unsigned sum = 0;
  for (int32_t i = 0; i < st.n; i++) {
    const eg_st_entry *e = &st.entries[i];
    /* The reader's promises: the entry is found by its name, its bytes lie in the buffer and
     * are numel x dtype size. */
    if (eg_safetensors_find(&st, e->name) == NULL) abort();
    if (e->begin > st.buffer_size || e->nbytes > st.buffer_size - e->begin) abort();
    eg_tensor shape = {.dtype = e->dtype, .rank = e->rank};
    for (int d = 0; d < e->rank; d++) shape.shape[d] = e->shape[d];
    if ((size_t)eg_tensor_numel(&shape) * eg_dtype_size(e->dtype) != e->nbytes) abort();
    for (size_t b = 0; b < e->nbytes; b++) sum += st.buffer[e->begin + b];
  }
  eg_fuzz_st_sink += sum;
  eg_safetensors_close(&st);
  return 0;
}
