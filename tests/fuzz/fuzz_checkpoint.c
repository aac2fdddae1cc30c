/* fuzz_checkpoint.c — bytes as a training checkpoint, resumed from as `edgegrad train --resume`
 * does: the CLI's own cmd_train (src/cli/train.c, which reads it with the library's safetensors
 * codec, src/api/safetensors.c) run in-process. The bytes are written as
 * ckpt/checkpoint.safetensors in the temporary folder, and the run the seeds come from
 * (tests/fuzz/make_corpus.sh: the tiny training step tests/data/tiny_step.json over its own
 * inputs) resumes from them for a second epoch, which writes the checkpoint again. Two runs,
 * told apart by the optimizer the checkpoint's "run" field names: SGD with momentum, or Adam
 * (two state tensors per parameter).
 *
 * A checkpoint carries a checksum of everything resume reads, so almost every mutation is
 * refused there. An input refused as it is, that parses and carries a checksum, is therefore
 * resumed from a second time with its checksum field re-stamped (checksum(), train.c's
 * algorithm), which takes the mutation on to the checks behind it: the run's signature, the
 * position, every tensor's name, dtype and shape.
 *
 * Promises checked: the exit status is 0, 1 (the run failed) or 2 (bad input), never anything
 * else; a checkpoint the resumed run wrote (or accepted) is one the same run resumes from again,
 * at its end: nothing left to train, exit 0; and checksum() gives the checksum of every
 * checkpoint train.c accepts (so the two stay in step). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "cli/cli.h"
#include "fuzz_common.h"

#ifndef EG_TEST_DATA
#error "EG_TEST_DATA (the tests/data folder) must be defined by the build"
#endif

#define CKPT_FILE "ckpt/checkpoint.safetensors"

/* Whether the `size` bytes at `data` hold the string `s`. */
static bool holds(const uint8_t *data, size_t size, const char *s) {
  const size_t n = strlen(s);
  for (size_t i = 0; n <= size && i <= size - n; i++)
    if (memcmp(data + i, s, n) == 0) return true;
  return false;
}

/* `edgegrad train` for the run the checkpoint is of; 0, 1 or 2. */
static int resume(const char *ckpt_dir, bool adam) {
  char *argv[] = {EG_TEST_DATA "/tiny_step.json",
                  "--data", EG_TEST_DATA "/tiny_step_inputs",
                  "--epochs", "2",
                  "--checkpoint", (char *)ckpt_dir,
                  "--resume",
                  "--threads", "1",
                  "-q",
                  "--optimizer", adam ? "adam" : "sgd",
                  adam ? "--betas" : "--momentum", adam ? "0.8,0.99" : "0.9",
                  NULL};
  int rc = cmd_train((int)(sizeof argv / sizeof *argv) - 1, argv);
  if (getenv("EG_FUZZ_VERBOSE")) printf("fuzz_checkpoint: edgegrad train exited %d\n", rc);
  if (rc < 0 || rc > 2) {
    fprintf(stderr, "fuzz_checkpoint: edgegrad train exited %d\n", rc);
    abort();
  }
  return rc;
}

static int by_name(const void *a, const void *b) {
  return strcmp((*(const eg_safetensors_entry *const *)a)->name,
                (*(const eg_safetensors_entry *const *)b)->name);
}

/* The checksum train.c stamps on `f` (its ckpt_checksum), as 8 hex digits: CRC-32 over every
 * tensor by name ("<name> <dtype> <dims>" as far as 512 bytes keep it, a NUL, its bytes), then
 * over each metadata key of the format and its value (each with its NUL; an absent value as a
 * lone NUL). Returns false when out of memory. */
static bool checksum(const eg_safetensors *f, char out[16]) {
  static const char *const keys[] = {"format", "version", "run", "epoch", "step",
                                     "global_step", "epoch_loss_sum", "rng"};
  int n = 0;
  const eg_safetensors_entry *e = eg_safetensors_entries(f, &n);
  const eg_safetensors_entry **order = malloc(sizeof *order * ((size_t)n + 1));
  if (!order) return false;
  for (int k = 0; k < n; k++) order[k] = &e[k];
  qsort(order, (size_t)n, sizeof *order, by_name);
  uLong crc = crc32(0L, Z_NULL, 0);
  for (int k = 0; k < n; k++) {
    const eg_tensor *t = &order[k]->t;
    char head[512];
    int len = snprintf(head, sizeof head, "%s %s", order[k]->name, eg_dtype_name(t->dtype));
    for (int d = 0; d < t->rank && len < (int)sizeof head - 24; d++)
      len += snprintf(head + len, sizeof head - (size_t)len, " %lld", (long long)t->shape[d]);
    crc = crc32(crc, (const Bytef *)head, (uInt)strlen(head) + 1);
    crc = crc32(crc, t->data, (uInt)((size_t)eg_tensor_numel(t) * eg_dtype_size(t->dtype)));
  }
  free(order);
  for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
    const char *v = eg_safetensors_meta_get(f, keys[k]);
    crc = crc32(crc, (const Bytef *)keys[k], (uInt)strlen(keys[k]) + 1);
    crc = crc32(crc, (const Bytef *)(v ? v : ""), v ? (uInt)strlen(v) + 1 : 1);
  }
  snprintf(out, 16, "%08lx", (unsigned long)crc);
  return true;
}

/* Where in `data` the 8 digits `sum` of the header's "checksum" field are, or NULL. */
static uint8_t *checksum_field(uint8_t *data, size_t size, const char *sum) {
  static const char key[] = "\"checksum\"";
  for (size_t i = 0; i + sizeof key - 1 < size; i++) {
    if (memcmp(data + i, key, sizeof key - 1) != 0) continue;
    size_t j = i + sizeof key - 1;
    while (j < size && (data[j] == ' ' || data[j] == ':')) j++;
    if (j + 10 <= size && data[j] == '"' && memcmp(data + j + 1, sum, 8) == 0 &&
        data[j + 9] == '"')
      return data + j + 1;
  }
  return NULL;
}

/* The input with its checksum re-stamped into *out (malloc'ed), when it parses as a checkpoint
 * whose checksum field (8 digits) differs from its contents'. */
static bool restamp(const char *path, const uint8_t *data, size_t size, uint8_t **out) {
  *out = NULL;
  eg_safetensors *f;
  if (!holds(data, size, "\"checksum\"") || eg_safetensors_load(path, &f) != EG_OK)
    return false;
  const char *sum = eg_safetensors_meta_get(f, "checksum");
  char want[16];
  bool differs = sum && strlen(sum) == 8 && checksum(f, want) && strcmp(sum, want) != 0;
  uint8_t *copy = differs ? malloc(size) : NULL;
  uint8_t *field = copy ? checksum_field(memcpy(copy, data, size), size, sum) : NULL;
  if (field) {
    memcpy(field, want, 8);
    *out = copy;
  } else {
    free(copy);
  }
  eg_safetensors_destroy(f);
  return *out != NULL;
}

/* A run that accepted the checkpoint: checksum() agrees with train.c on it, and what the run
 * left in ckpt/ resumes again. */
static void accepted(const char *dir, const char *path, bool adam) {
  eg_safetensors *f;
  if (eg_safetensors_load(path, &f) == EG_OK) {
    const char *sum = eg_safetensors_meta_get(f, "checksum");
    char want[16];
    if (sum && checksum(f, want) && strcmp(sum, want) != 0) {
      fprintf(stderr, "fuzz_checkpoint: checksum %s of an accepted checkpoint, %s here: keep "
              "checksum() in step with train.c\n", sum, want);
      abort();
    }
    eg_safetensors_destroy(f);
  }
  if (resume(dir, adam) != 0) {
    fprintf(stderr, "fuzz_checkpoint: a checkpoint the run accepted and wrote is refused\n");
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char dir[1024], path[1024];
  snprintf(dir, sizeof dir, "%s", eg_fuzz_path("ckpt"));
  mkdir(dir, 0777); /* made once; an existing folder is the usual case */
  snprintf(path, sizeof path, "%s", eg_fuzz_input(CKPT_FILE, data, size));
  const bool adam = holds(data, size, "optimizer=adam ");
  if (resume(dir, adam) == 0) {
    accepted(dir, path, adam);
    return 0;
  }
  uint8_t *stamped;
  if (!restamp(path, data, size, &stamped)) return 0;
  eg_fuzz_input(CKPT_FILE, stamped, size);
  if (resume(dir, adam) == 0) accepted(dir, path, adam);
  free(stamped);
  return 0;
}
