/* arrays.h — a set of named NumPy arrays the CLI reads examples from: a folder of <name>.npy
 * files, or an .npz archive (numpy.savez / savez_compressed: a zip of <name>.npy members,
 * stored or deflated, read with libzip). A member is read whole into memory and parsed by the
 * library's eg_npy_parse, so both kinds check the same things; libzip checks each member's
 * size and CRC as it inflates it, so a truncated or altered archive is refused. */
#ifndef EG_CLI_ARRAYS_H
#define EG_CLI_ARRAYS_H

#include <stdbool.h>

#include "edgegrad.h"

typedef struct arrays arrays;

/* Opens `path` (a folder, or a file: an .npz archive); `opt` names the option in messages
 * ("--data"). 0, or the exit status after a one-line message. */
int arrays_open(const char *path, const char *opt, arrays **out);
/* Reads array `name` (the folder's <name>.npy, the archive's member <name>.npy) into *out
 * (eg_tensor_free it). 0; or the exit status after a one-line message, which for a missing
 * array says "<where>: missing: <why>" with `why` from the caller. */
int arrays_get(const arrays *a, const char *name, const char *why, eg_tensor *out);
/* "DIR/<name>.npy" or "FILE.npz[<name>.npy]" into buf, for messages. */
void arrays_where(const arrays *a, const char *name, char *buf, size_t size);
void arrays_close(arrays *a);

#endif
