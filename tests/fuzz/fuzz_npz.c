/* fuzz_npz.c — bytes as an .npz data set, read as `edgegrad train --data X.npz` reads one: the
 * CLI's own reader (src/cli/arrays.c: libzip, each member streamed through eg_npy_read) under
 * a memory budget. Every member named <name>.npy is asked for by name, then a name the archive
 * lacks. The reader's promises, checked here:
 *   - an accepted array is a valid tensor whose every byte can be read, and the budget was
 *     charged at least its bytes before it was read (the stated size, never less);
 *   - a name the archive does not hold is refused;
 *   - the budget never grows, and is never spent beyond what it held.
 * The budget (EG_FUZZ_DATA_BUDGET) also bounds what one input may make the reader allocate. */
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "cli/arrays.h"
#include "fuzz_common.h"

#define EG_FUZZ_DATA_BUDGET ((size_t)16 << 20)
#define EG_FUZZ_NPZ_MAX_MEMBERS 64

/* Asks `a` for array `name`; aborts when a promise above is broken. */
static void get_one(const arrays *a, const char *name, size_t *budget) {
  const size_t before = *budget;
  eg_tensor t;
  int rc = arrays_get(a, name, "asked for by the fuzz target", &t);
  if (*budget > before) abort();
  if (rc != 0) {
    eg_tensor_free(&t); /* as the trainer does after a refusal */
    return;
  }
  int64_t numel = eg_tensor_numel(&t);
  size_t esize = eg_dtype_size(t.dtype);
  if (numel < 0 || esize == 0 || (numel > 0 && !t.data)) abort();
  size_t bytes = (size_t)numel * esize;
  if (before - *budget < bytes) abort(); /* read more than was charged */
  eg_fuzz_read_bytes(t.data, bytes);
  eg_tensor_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[1024]; /* arrays keeps the path: a copy that outlives it */
  snprintf(path, sizeof path, "%s", eg_fuzz_input("input.npz", data, size));
  size_t budget = EG_FUZZ_DATA_BUDGET;
  arrays *a = NULL;
  if (arrays_open(path, "--data", &budget, &a) != 0) return 0;
  /* the member names, from a second reading of the directory (arrays.h lists none) */
  int err = 0;
  zip_t *z = zip_open(path, ZIP_RDONLY, &err);
  zip_int64_t n = z ? zip_get_num_entries(z, 0) : 0;
  for (zip_int64_t i = 0; i < n && i < EG_FUZZ_NPZ_MAX_MEMBERS; i++) {
    const char *member = zip_get_name(z, (zip_uint64_t)i, 0);
    size_t len = member ? strlen(member) : 0;
    if (len <= 4 || len >= 512 || strcmp(member + len - 4, ".npy") != 0) continue;
    char name[512];
    memcpy(name, member, len - 4);
    name[len - 4] = '\0';
    get_one(a, name, &budget);
  }
  /* an array the archive does not hold is refused */
  if (z && zip_name_locate(z, "absent.npy", 0) < 0) {
    eg_tensor t;
    if (arrays_get(a, "absent", "asked for by the fuzz target", &t) == 0) abort();
    eg_tensor_free(&t);
  }
  if (z) zip_discard(z);
  arrays_close(a);
  return 0;
}
