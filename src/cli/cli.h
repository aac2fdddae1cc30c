/* cli.h — what the CLI's files share: exit statuses and the one-line error printer. */
#ifndef EG_CLI_CLI_H
#define EG_CLI_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "edgegrad.h"
#include "options.h"

#define EXIT_FAIL 1
#define EXIT_USAGE 2

/* Prints "edgegrad: <message>" as one line on stderr; returns `code`. */
int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* fail() with eg_last_error(): input-caused statuses exit 2, the rest (memory, a run) 1. */
int fail_status(eg_status s);

/* "[2, 3, 8, 8]" into buf. */
void format_shape(char *buf, size_t size, const eg_tensor *t);

/* eg_model_load for command `cmd`, which reads `reads` ("a graph JSON or a compiled program"):
 * a file that is neither says in its one-line message what it is instead (a safetensors file,
 * a .npy array, a zip archive), by its first bytes. 0, or the exit status after the message. */
int load_model(const char *cmd, const char *reads, const char *path, eg_model **out);
#define READS_MODEL "a graph JSON or a compiled program"

/* A runtime for model `m` read from `path` for command `cmd`: on the CPU kernels, compiled for
 * compile->soc in memory, or the compiled program `m` is (then --soc is refused);
 * a refusal under --max-memory names it (`max_memory`, as given). 0, or the exit status after
 * the message. */
int cli_runtime(const char *cmd, const eg_model *m, const char *path,
                const eg_compile_options *compile, const eg_runtime_options *options,
                const char *max_memory, eg_runtime **rt);

/* --precision fp16|fp32 as an OPT_CHOICE: EG_PRECISION_FP16 or _FP32 (precision.c). */
extern const opt_choice precision_choices[];

/* Whether input `d` is trained: a parameter or a state buffer, with its gradient or update
 * output (the roles the exporter records). */
bool is_trained(const eg_tensor_desc *d);

/* The help texts (usage.c). */
extern const char usage_main[], usage_run[], usage_info[], usage_targets[], usage_compile[],
    usage_inspect[], usage_export_onnx[], usage_train[];

/* edgegrad train (train.c), and its options. */
int cmd_train(int argc, char **argv);
extern const opt_command train_command;

/* The commands (main.c), in the order `edgegrad --help` lists them, then {NULL}: each one's
 * name, entry point (its arguments after the name) and option table (NULL: a command that
 * parses its arguments itself). */
typedef struct cli_command {
  const char *name;
  int (*main)(int argc, char **argv);
  const opt_command *options;
} cli_command;
extern const cli_command cli_commands[];
/* edgegrad's own options, before any command (--help, --version). */
extern const opt_command cli_options;

#endif
