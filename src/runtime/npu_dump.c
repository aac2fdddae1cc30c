/* npu_dump.c — see npu_dump.h. */
#define _POSIX_C_SOURCE 200809L
#include "runtime/npu_dump.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/npu_step.h"
#include "util/error.h"
#include "util/names.h"

/* malloc'ed "<a>/<b><suffix>"; NULL when out of memory. */
static char *join(const char *a, const char *b, const char *suffix) {
  const size_t n = strlen(a) + strlen(b) + strlen(suffix) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s%s", a, b, suffix);
  return p;
}

/* The folder `path` lies in, malloc'ed: "a/b/" -> "a", "b" -> ".", "/b" -> "/"; NULL when out
 * of memory. */
static char *parent_of(const char *path) {
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/') n--; /* "out/" names "out" */
  while (n > 0 && path[n - 1] != '/') n--; /* drop that name */
  while (n > 1 && path[n - 1] == '/') n--; /* "a//b" lies in "a" */
  if (n == 0) path = ".", n = 1;
  char *p = malloc(n + 1);
  if (p) memcpy(p, path, n), p[n] = '\0';
  return p;
}

eg_status eg_npu_dump_check(const char *dir) {
  struct stat st;
  if (!dir[0])
    return eg_error(EG_ERR_ARGUMENT, "eg_runtime_create: dump_partitions_dir \"\": expected a "
                    "folder (NULL: no dump)");
  if (stat(dir, &st) == 0) {
    if (!S_ISDIR(st.st_mode))
      return eg_error(EG_ERR_ARGUMENT, "eg_runtime_create: dump_partitions_dir %s: exists and is "
                      "not a folder: the partitions are dumped into a folder", dir);
    return EG_OK;
  }
  if (errno != ENOENT && errno != ENOTDIR) /* ENOTDIR: the parent is no folder, said below */
    return eg_error(EG_ERR_ARGUMENT, "eg_runtime_create: dump_partitions_dir %s: cannot be used "
                    "(%s): it must be a folder, or a name in one", dir, strerror(errno));
  char *parent = parent_of(dir);
  if (!parent) return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
  eg_status s = EG_OK;
  const bool found = stat(parent, &st) == 0;
  if (!found || !S_ISDIR(st.st_mode))
    s = eg_error(EG_ERR_ARGUMENT, "eg_runtime_create: dump_partitions_dir %s: cannot create "
                 "(folder %s %s): the dump folder's parent must be an existing folder", dir,
                 parent, !found ? "does not exist" : "is not a folder");
  free(parent);
  return s;
}

/* Makes folder `path` unless it is one already. */
static eg_status make_folder(const char *path) {
  if (mkdir(path, 0777) == 0) return EG_OK;
  const int err = errno;
  struct stat st;
  if (err == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return EG_OK;
  return eg_error(EG_ERR_IO, "partition dump: %s: cannot create the folder (%s): a partition is "
                  "dumped into a folder of its own", path,
                  err == EEXIST ? "something else is in the way" : strerror(err));
}

/* Writes boundary `b` (its IR value's buffer `data`, NHWC when `nhwc`) as
 * folder/<export name>.npy. */
static eg_status dump_one(const char *folder, const eg_graph *g, const eg_lowered *lp,
                          const eg_boundary *b, const void *data, bool nhwc) {
  const eg_value *v = &g->values[b->value];
  eg_npu_partition_info info = {0};
  eg_npu_tensor_info ti = {0};
  lp->backend->describe(lp->graph, &info);
  if (b->tensor >= 0 && b->tensor < info.num_tensors)
    lp->backend->describe_tensor(lp->graph, b->tensor, EG_PRECISION_FP32, &ti);
  char name[EG_EXPORT_NAME_MAX];
  eg_export_name(ti.name ? ti.name : "", b->tensor, name, sizeof name);
  eg_tensor t = {.dtype = v->dtype, .rank = v->rank, .data = (void *)data};
  memcpy(t.shape, v->shape, sizeof t.shape);
  char *path = join(folder, name, ".npy");
  void *nchw = nhwc ? malloc(eg_value_nbytes(v) + 1) : NULL;
  eg_status s = path && (nchw || !nhwc) ? EG_OK : eg_error(EG_ERR_NOMEM, "partition dump: out of "
                                                           "memory");
  if (s == EG_OK && nhwc) {
    eg_npu_permute_nc(data, nchw, v->shape, eg_dtype_size(v->dtype), false);
    t.data = nchw;
  }
  if (s == EG_OK) s = eg_npy_save(path, &t);
  free(nchw);
  free(path);
  return s;
}

eg_status eg_npu_dump_write(const char *dir, int32_t k, const eg_graph *g,
                            const eg_lowered *hp, bool outputs, void *const *data,
                            const bool *held_nhwc) {
  char sub[32];
  snprintf(sub, sizeof sub, "partition_%d", (int)k);
  char *folder = join(dir, sub, "");
  eg_status s = folder ? make_folder(dir) : eg_error(EG_ERR_NOMEM, "partition dump: out of "
                                                     "memory");
  if (s == EG_OK) s = make_folder(folder);
  const eg_boundary *b = outputs ? hp->outputs : hp->inputs;
  const int32_t n = outputs ? hp->n_outputs : hp->n_inputs;
  for (int32_t j = 0; s == EG_OK && j < n; j++) {
    bool again = false; /* a second boundary of the same tensor: its file is written */
    for (int32_t i = 0; i < j && !again; i++) again = b[i].tensor == b[j].tensor;
    /* what npu_step binds in place although the boundary is NHWC: the buffer holds NHWC */
    const bool nhwc = b[j].nhwc && held_nhwc && held_nhwc[b[j].value];
    if (!again) s = dump_one(folder, g, hp, &b[j], data[b[j].value], nhwc);
  }
  free(folder);
  return s;
}
