/* fuzz_safetensors.c — bytes as a safetensors file, read with eg_safetensors_load (the library's
 * codec, src/api/safetensors.c, its header read with jansson); every entry accepted is looked
 * up by name and its bytes read, every metadata pair looked up by key and read. */
#include <stdlib.h>
#include <string.h>

#include "edgegrad.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  eg_safetensors *st = NULL;
  if (eg_safetensors_load(eg_fuzz_input("input.safetensors", data, size), &st) != EG_OK) {
    if (st) abort(); /* a refused file leaves nothing behind */
    return 0;
  }
  int n = 0, n_meta = 0;
  const eg_safetensors_entry *e = eg_safetensors_entries(st, &n);
  const eg_safetensors_meta *meta = eg_safetensors_metadata(st, &n_meta);
  for (int i = 0; i < n; i++) {
    /* The reader's promises: names are unique (the entry is found by its own name), the shape
     * is one eg_tensor_numel counts, and its numel x dtype size bytes are readable. */
    if (eg_safetensors_find(st, e[i].name) != &e[i]) abort();
    const int64_t numel = eg_tensor_numel(&e[i].t);
    if (numel < 0) abort();
    eg_fuzz_read_bytes(e[i].t.data, (size_t)numel * eg_dtype_size(e[i].t.dtype));
  }
  for (int i = 0; i < n_meta; i++) {
    if (eg_safetensors_meta_get(st, meta[i].key) != meta[i].value) abort();
    eg_fuzz_read_bytes(meta[i].key, strlen(meta[i].key) + 1);
    eg_fuzz_read_bytes(meta[i].value, strlen(meta[i].value) + 1);
  }
  eg_safetensors_destroy(st);
  return 0;
}
