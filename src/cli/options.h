/* options.h — the one option parser of every edgegrad command. A command declares its options
 * as a const table of opt_def (name, short alias, kind, the value's name for messages, where in
 * the command's argument struct the value goes) and its positional arguments; opt_parse walks
 * argv against that table and writes into the struct. The tables hold offsets, not pointers,
 * so they are static const data that tests read too (unit/test_cli_options: every option of a
 * table is in its command's --help, and every option the help names is in the table).
 *
 * What opt_parse does for every command alike:
 *   -h, --help            prints the command's usage on stdout and returns OPT_STOP (exit 0)
 *   --name VALUE, --name=VALUE, -x VALUE
 *                         a valued option; the next argument is its value whatever it looks
 *                         like ("--lr -1" is a learning rate of -1, refused by its range)
 *   --flag                a flag; "--flag=X" is refused
 *   anything else that starts with '-' (but "-" alone) is an unknown option
 *   other arguments       the positional arguments, in order
 * A scalar option given twice keeps the last value; a list option appends each. Every refusal
 * is one line through fail() and returns EXIT_USAGE (EXIT_FAIL: out of memory):
 *   run: --threads needs a value (N)
 *   run: option --bogus unknown (see edgegrad run --help)
 *   run: --threads 0: expected an integer in [1, 1024]
 *   run: --lr x: expected a finite number >= 0
 *   train: --optimizer rmsprop: expected sgd, adam or adamw
 *   run: a second model b.json: give one MODEL.json|PROGRAM.egp
 *   run: no model given: give MODEL.json|PROGRAM.egp (see edgegrad run --help)
 * Rules between options (--resume needs --checkpoint) are the command's own code, after
 * opt_parse, which records which options were given (opt_given). */
#ifndef EG_CLI_OPTIONS_H
#define EG_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum opt_kind {
  OPT_FLAG,   /* no value: the bool at `at` becomes true (with .clears: false) */
  OPT_STRING, /* const char * at `at`: the argument itself (argv outlives the parse) */
  OPT_INT,    /* an integer in [lo, hi] into the int or long at `at` */
  OPT_NUMBER, /* a finite double >= min at `at` (min -HUGE_VAL: any finite number) */
  OPT_PAIR,   /* "A,B": two finite doubles, at `at` and `at2` */
  OPT_SIZE,   /* bytes, optionally with K, M or G (1024-based), > 0: the size_t at `at`; the
               * text as given also at `at2` when it has a field (size2) */
  OPT_CHOICE, /* one of `choices`' names: its value into the int (or enum) at `at` */
  OPT_LIST,   /* repeatable: appended to the const char ** array at `at` (allocated by the
               * parser, argc + 1 slots, NULL-terminated; the command frees it), the count in
               * the int at `at2` */
  OPT_CUSTOM, /* parse(cmd, opt, value, field at `at`) */
} opt_kind;

/* A choice of OPT_CHOICE; a table of them ends with {NULL, 0}. */
typedef struct opt_choice {
  const char *name;
  int value;
} opt_choice;

typedef struct opt_def {
  const char *name;  /* "--threads" */
  const char *alias; /* "-j", or NULL */
  opt_kind kind;
  const char *arg;   /* the value's name in usage and messages ("N", "DIR"); NULL for a flag */
  size_t at, size;   /* offset and size of the destination field in the command's struct */
  size_t at2, size2; /* a second field (OPT_PAIR, OPT_LIST, OPT_SIZE); size2 0: none */
  long lo, hi;       /* OPT_INT's range */
  double min;        /* OPT_NUMBER's least value */
  bool clears;       /* OPT_FLAG: sets its bool false (--no-shuffle) */
  const opt_choice *choices; /* OPT_CHOICE */
  /* OPT_CUSTOM: parses `value` of option `opt` (as typed) of command `cmd` into `field`.
   * 0, or the exit status after its one-line message. */
  int (*parse)(const char *cmd, const char *opt, const char *value, void *field);
} opt_def;

/* The destination fields of an opt_def: .at/.size, and .at2/.size2, of member m of struct T
 * (nested members too: OPT_AT(run_args, rt_opt.num_threads)). */
#define OPT_AT(T, m) .at = offsetof(T, m), .size = sizeof(((T *)0)->m)
#define OPT_AT2(T, m) .at2 = offsetof(T, m), .size2 = sizeof(((T *)0)->m)

/* A positional argument: `what` it is in messages ("model", "DIR") and where it goes (a
 * const char * field). */
typedef struct opt_pos {
  const char *what;
  size_t at;
} opt_pos;

/* .opts/.n_opts and .pos/.n_pos of an opt_command from arrays. */
#define OPT_OPTIONS(table) .opts = (table), .n_opts = (int)(sizeof(table) / sizeof *(table))
#define OPT_POSITIONALS(table) .pos = (table), .n_pos = (int)(sizeof(table) / sizeof *(table))

#define OPT_MAX 64 /* options a command may have: opt_given's bits */

typedef struct opt_command {
  const char *name;      /* "run"; NULL: edgegrad itself (the options before a command) */
  const char *usage;     /* what --help prints */
  const opt_def *opts;
  int n_opts;            /* at most OPT_MAX */
  const opt_pos *pos;    /* the positional arguments, in order */
  int n_pos, n_required; /* how many it takes, and how many of them must be given */
  const char *synopsis;  /* the positional arguments as usage writes them: "PROGRAM.egp DIR" */
} opt_command;

/* Which options of a command's table were given: bit i for opts[i]. */
typedef struct opt_given {
  uint64_t bits;
} opt_given;

/* opt_parse's "stop here, exit 0": --help was given and the usage printed. */
#define OPT_STOP (-1)

/* Parses argv[0..argc) (the command's arguments, after its name) into `args`, the command's
 * struct that the table's offsets point into; `given` (may be NULL) gets which options were
 * given. 0; OPT_STOP after printing the usage; or the exit status after a one-line message.
 * Fields of options not given are left as they were: set defaults before the call. */
int opt_parse(const opt_command *c, int argc, char **argv, void *args, opt_given *given);

/* Whether option `name` (its long name, which must be in c's table) was given. */
bool opt_was_given(const opt_command *c, const opt_given *given, const char *name);

/* Whether a table keeps the rules above (each field's size fits its kind, an OPT_INT into an
 * int has a range an int holds, no name twice, at most OPT_MAX options, ...); if not, what
 * breaks them into why[size]. opt_parse asserts it; unit/test_cli_options checks every
 * command's. */
bool opt_table_ok(const opt_command *c, char *why, size_t size);

#endif
