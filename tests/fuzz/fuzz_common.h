/* fuzz_common.h — what the fuzz targets (tests/fuzz/fuzz_*.c) share.
 *
 * Each target is one LLVMFuzzerTestOneInput, built twice: with clang and libFuzzer
 * (-DEG_FUZZ=ON, `make fuzz`) to search, and with the normal compiler linked with
 * replay_main.c to replay the seed corpus and the saved crashes as ctest tests
 * (fuzz/replay_<target>). The library reads files by path, so an input is written to a file in
 * a per-process temporary folder and loaded from there. */
#ifndef EG_FUZZ_COMMON_H
#define EG_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "edgegrad.h"

/* A run (eg_runtime_create + eg_runtime_run) is tried only when the model's tensor values and
 * kernel scratch add up to at most this many bytes: the fuzzer must not run out of memory or
 * time on a well-formed graph that is merely large. Larger models are loaded, described and
 * compiled, not run. */
#define EG_FUZZ_RUN_MAX_BYTES ((size_t)16 << 20)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The path of `name` in this process's temporary folder (made on first use under $TMPDIR or
 * /tmp, removed at exit), with `data` written to it. The string is static, valid until the
 * next call; NULL (after a message on stderr) when the file cannot be written. */
const char *eg_fuzz_write_file(const char *name, const void *data, size_t size);
/* The path of `name` in the temporary folder, without writing it (static, as above). */
const char *eg_fuzz_path(const char *name);
/* The temporary folder itself (an absolute path when $TMPDIR is one), or NULL when it cannot be
 * made. Whatever a target leaves in it is removed at exit. */
const char *eg_fuzz_dir(void);

/* The start of every target: forgets the last error message and writes the input to `name` in
 * the temporary folder (eg_fuzz_write_file); returns its path, aborting when it cannot be
 * written. */
const char *eg_fuzz_input(const char *name, const uint8_t *data, size_t size);

/* Reads every byte of `data` (so ASan sees a bad pointer or length the library returned). */
void eg_fuzz_read_bytes(const void *data, size_t size);

/* Forgets the last error message, so each input starts from a clean error state. */
void eg_fuzz_clear_error(void);

/* Reads everything `edgegrad info` shows of `model` (inputs, outputs, op kinds, stats,
 * training I/O), and for a compiled model everything `edgegrad inspect` shows (program,
 * partitions, QNN tensors, ops, params). */
void eg_fuzz_describe(const eg_model *model);

/* The bytes a run of `model` needs (its tensor values and largest kernel scratch), saturating
 * at SIZE_MAX. */
size_t eg_fuzz_run_bytes(const eg_model *model);

/* Runs `rt` (a runtime of `model`) once with every input set to a fixed pattern, reads every
 * output, and takes one SGD step; failures are statuses, not crashes. */
void eg_fuzz_run(const eg_model *model, eg_runtime *rt);

#endif
