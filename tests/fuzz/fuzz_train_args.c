/* fuzz_train_args.c — bytes as the arguments of `edgegrad train`, each followed by a NUL byte
 * (a last one without it counts too), into argv (each argument its own allocation of its exact size, so ASan sees a read past one), then
 * the CLI's own cmd_train (src/cli/train.c) run in-process from inside the temporary folder.
 * That is the options parser (parse_train_args), the output checks (check_outputs: --out,
 * --log, --checkpoint) and the model's loading; the temporary folder holds no model, so no run
 * gets further, and nothing is written (the checks only look).
 *
 * Promise checked: the exit status is 0 (--help), 1 or 2, never anything else. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "fuzz_common.h"

#define EG_FUZZ_MAX_ARGS 256

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  eg_fuzz_clear_error();
  int argc = size && data[size - 1] != 0; /* a last argument without its NUL counts too */
  for (size_t i = 0; i < size; i++) argc += data[i] == 0;
  if (argc > EG_FUZZ_MAX_ARGS) return 0;
  char **argv = calloc((size_t)argc + 1, sizeof *argv);
  if (!argv) abort();
  const uint8_t *p = data, *end = data + size;
  for (int k = 0; k < argc; k++) {
    const uint8_t *nul = memchr(p, 0, (size_t)(end - p));
    size_t len = nul ? (size_t)(nul - p) : (size_t)(end - p);
    if (!(argv[k] = malloc(len + 1))) abort();
    memcpy(argv[k], p, len);
    argv[k][len] = '\0';
    p += len + (nul != NULL);
  }
  /* relative paths name files of the temporary folder, which the run leaves as it found it */
  int cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cwd < 0 || chdir(eg_fuzz_dir()) != 0) abort();
  int rc = cmd_train(argc, argv);
  if (fchdir(cwd) != 0) abort();
  close(cwd);
  if (rc < 0 || rc > 2) {
    fprintf(stderr, "fuzz_train_args: edgegrad train exited %d\n", rc);
    abort();
  }
  for (int k = 0; k < argc; k++) free(argv[k]);
  free(argv);
  return 0;
}
