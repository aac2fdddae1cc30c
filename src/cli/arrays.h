/* arrays.h — a set of named NumPy arrays the CLI reads examples from: a folder of <name>.npy
 * files, or an .npz archive (numpy.savez / savez_compressed: a zip of <name>.npy members,
 * stored or deflated, read with libzip). Either kind is streamed through the library's
 * eg_npy_read, so both check the same things and an array's bytes are held once: the header
 * first, then the data straight into the array's buffer. libzip checks each member's size and
 * CRC as it inflates it, so a truncated or altered archive is refused. Only regular files are
 * opened (eg_file_open_read): a FIFO or device is refused, never waited on.
 *
 * Memory: every array is charged to a budget (the trainer's --max-memory) by its stated size
 * (a file's size, a member's uncompressed size in the archive's directory) before a byte of it
 * is read or inflated, so an archive that inflates to more than the budget is refused unread. */
#ifndef EG_CLI_ARRAYS_H
#define EG_CLI_ARRAYS_H

#include <stdbool.h>

#include "edgegrad.h"

typedef struct arrays arrays;

/* Opens `path` (a folder, or a file: an .npz archive); `opt` names the option in messages
 * ("--data"). `budget` (NULL, or 0 in it: no limit) holds the bytes the arrays may still take;
 * each array read takes its stated size from it, and one that would leave nothing of it (the
 * runtime, created after the data, gets what is left) is refused before it is read. The budget
 * must outlive `*out`. 0, or the exit status after a one-line message. */
int arrays_open(const char *path, const char *opt, size_t *budget, arrays **out);
/* Reads array `name` (the folder's <name>.npy, the archive's member <name>.npy) into *out
 * (eg_tensor_free it). 0; or the exit status after a one-line message, which for a missing
 * array says "<where>: missing: <why>" with `why` from the caller. */
int arrays_get(const arrays *a, const char *name, const char *why, eg_tensor *out);
/* "DIR/<name>.npy" or "FILE.npz[<name>.npy]" into buf, for messages. */
void arrays_where(const arrays *a, const char *name, char *buf, size_t size);
void arrays_close(arrays *a);

/* The examples of every input of `m` a trainer feeds (role data or label) from `src`, read with
 * the calls above into files[*n], where[*n] (its place, for messages: malloc'ed) and out[*n]
 * (the trainer's view of it), *n counting up; the caller frees files and where. 0, or the exit
 * status after the message. */
int arrays_read_inputs(const char *src, const char *opt, size_t *budget, const eg_model *m,
                       eg_tensor *files, char **where, eg_trainer_array *out, int *n);

#endif
