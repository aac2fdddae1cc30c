/* fuzz_safetensors.c — bytes as a safetensors file, opened with eg_safetensors_open; every
 * entry accepted is looked up by name and its bytes read. */
#include <stdlib.h>

#include "frontend/safetensors.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  eg_safetensors st;
  if (eg_safetensors_open(eg_fuzz_input("input.safetensors", data, size), &st) != EG_OK)
    return 0;
  for (int32_t i = 0; i < st.n; i++) {
    const eg_st_entry *e = &st.entries[i];
    /* The reader's promises: the entry is found by its name, its bytes lie in the buffer and
     * are numel x dtype size. */
    if (eg_safetensors_find(&st, e->name) == NULL) abort();
    if (e->begin > st.buffer_size || e->nbytes > st.buffer_size - e->begin) abort();
    eg_tensor shape = {.dtype = e->dtype, .rank = e->rank};
    for (int d = 0; d < e->rank; d++) shape.shape[d] = e->shape[d];
    if ((size_t)eg_tensor_numel(&shape) * eg_dtype_size(e->dtype) != e->nbytes) abort();
    eg_fuzz_read_bytes(st.buffer + e->begin, e->nbytes);
  }
  eg_safetensors_close(&st);
  return 0;
}
