/* stfile.h — the CLI's safetensors files: `edgegrad train --out` (trained weights under their
 * PyTorch names) and its checkpoints. Written atomically by the library's eg_file_write_atomic
 * (a fresh temporary file beside the target, fsync'ed, renamed over it: a reader, or a run
 * killed at any moment, sees the old file or the new one, never a part; a killed run may leave
 * "<target>.tmp.XXXXXX"). Read only from a regular file (eg_file_open_read), with every offset,
 * dtype and size checked before use. The header is JSON (jansson), as the format says
 * (huggingface.co/docs/safetensors). */
#ifndef EG_CLI_STFILE_H
#define EG_CLI_STFILE_H

#include "edgegrad.h"

typedef struct st_entry {
  const char *name;
  eg_tensor t; /* writing: the caller's data; reading: a view into the file's bytes */
} st_entry;

typedef struct st_meta {
  const char *key, *value;
} st_meta;

/* Writes `n` tensors (names unique) and `n_meta` string pairs ("__metadata__") to `path`
 * atomically. 0, or the exit status after a one-line message naming `what` (e.g. "train:
 * --out W.safetensors"). */
int st_write(const char *path, const char *what, const st_entry *e, int n, const st_meta *meta,
             int n_meta);

/* A whole file read and checked. */
typedef struct st_file {
  unsigned char *bytes;
  int n;
  st_entry *e;
  void *header; /* json_t * of the header (names and metadata point into it) */
} st_file;

/* Reads `path`. 0, or the exit status after a one-line message naming `what`. */
int st_read(const char *path, const char *what, st_file *out);
/* The entry called `name`, or NULL. */
const st_entry *st_find(const st_file *f, const char *name);
/* The metadata value of `key`, or NULL. */
const char *st_meta_get(const st_file *f, const char *key);
void st_free(st_file *f);

#endif
