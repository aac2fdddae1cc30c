/* outdir.h — the CLI's output folder: file names from a model checked as names, and every file
 * of a run staged in a hidden folder inside DIR, moved into place only when all were written.
 *
 * Contract: a failed run leaves DIR as it was (a DIR that did not exist is removed again), and
 * nothing is written outside DIR: a model's names are data, joined into a path only after
 * outdir_name_ok accepted them. Every failure prints one line and returns the exit status. */
#ifndef EG_CLI_OUTDIR_H
#define EG_CLI_OUTDIR_H

#include <stdbool.h>

#include "edgegrad.h"

/* Whether `name` can be a file name inside a folder (DIR/<name>.npy stays in DIR): not "",
 * ".", "..", and no '/' or '\' in it. (A name cannot hold a NUL: the graph loader refuses it.)
 * Dots elsewhere are fine: "grad_conv1.weight". */
#define OUTDIR_NAME_RULE "a name may not be \"\", \".\" or \"..\", nor hold '/' or '\\'"
bool outdir_name_ok(const char *name);

typedef struct outdir {
  const char *dir;  /* DIR as given */
  char *tmp;        /* DIR/.edgegrad-tmp.XXXXXX while staging; NULL before open / after close */
  bool created;     /* DIR did not exist: made by outdir_open, removed again on failure */
  int n_files;
  char **files;     /* staged paths relative to tmp ("loss.npy", "final/w.npy") */
} outdir;

/* Makes DIR (when absent) and the staging folder in it. 0 or the exit status (message printed). */
int outdir_open(outdir *o, const char *dir);
/* Writes `t` as <sub>/<name>.npy in the staging folder (sub NULL: at its top). */
int outdir_save(outdir *o, const char *sub, const char *name, const eg_tensor *t);
/* Moves every staged file into DIR. Checks first that no target is a folder, so a refusal moves
 * nothing. 0 or the exit status. */
int outdir_commit(outdir *o);
/* Removes the staging folder and what is left in it; when nothing was committed, and DIR was
 * made by outdir_open, DIR too. Safe on a zeroed or already closed outdir. */
void outdir_close(outdir *o, bool committed);

/* Output paths checked before any work, so that a run never computes what it cannot write:
 * `cmd` and `opt` name the command and option in the message ("train", "--out"), which names
 * the user's path. outdir_check_file: `path` is a file to be written (atomically, beside
 * itself): not a folder, and its folder exists and is a writable folder. outdir_check_dir:
 * `path` is a folder a run writes into: an existing writable folder, or one whose parent is
 * (the run creates it). 0, or EXIT_USAGE after the message. */
int outdir_check_file(const char *cmd, const char *opt, const char *path);
int outdir_check_dir(const char *cmd, const char *opt, const char *path);

/* malloc'ed "<a>/<b><suffix>"; NULL when out of memory. */
char *outdir_join(const char *a, const char *b, const char *suffix);

#endif
