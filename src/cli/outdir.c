/* outdir.c — see outdir.h. Staging lives inside DIR so that every move is a rename within one
 * file system; its name starts with '.', and no accepted output name can reach it ('/' is
 * refused), so a run never overwrites its own staging. */
#include "outdir.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

bool outdir_name_ok(const char *name) {
  return name[0] && strcmp(name, ".") != 0 && strcmp(name, "..") != 0 && !strpbrk(name, "/\\");
}

/* malloc'ed a + sep + b + suffix (sep: "/" or ""). */
static char *concat(const char *a, const char *sep, const char *b, const char *suffix) {
  size_t n = strlen(a) + strlen(sep) + strlen(b) + strlen(suffix) + 1;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s%s%s%s", a, sep, b, suffix);
  return p;
}

char *outdir_join(const char *a, const char *b, const char *suffix) {
  return concat(a, "/", b, suffix);
}

static int oom(void) { return fail(EXIT_FAIL, "run: out of memory"); }

/* The folder of `path`, malloc'ed: what comes before its last name ("a/b/c" -> "a/b", "c/" ->
 * ".", "/c" -> "/", "c" -> "."); NULL when out of memory. */
static char *parent_of(const char *path) {
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/') n--; /* "out/" names "out" */
  while (n > 0 && path[n - 1] != '/') n--; /* drop that name */
  while (n > 1 && path[n - 1] == '/') n--; /* "a//b" lies in "a" */
  if (n == 0) return concat(".", "", "", "");
  char *p = malloc(n + 1);
  if (p) memcpy(p, path, n), p[n] = 0;
  return p;
}

/* `folder` (where `path` is, or will be, made) exists, is a folder, and files can be created in
 * it: an output's staging file or temporary lives there before its rename. */
static int writable_folder(const char *cmd, const char *opt, const char *path,
                           const char *folder) {
  struct stat st;
  if (stat(folder, &st) != 0 && errno == ENOENT)
    return fail(EXIT_USAGE, "%s: %s %s: cannot create (folder %s does not exist): an output's "
                "folder must exist", cmd, opt, path, folder);
  if (stat(folder, &st) != 0)
    return fail(EXIT_USAGE, "%s: %s %s: cannot create (folder %s: %s): an output's folder must "
                "exist", cmd, opt, path, folder, strerror(errno));
  if (!S_ISDIR(st.st_mode))
    return fail(EXIT_USAGE, "%s: %s %s: cannot create (%s is not a folder): an output's folder "
                "must be one", cmd, opt, path, folder);
  if (access(folder, W_OK | X_OK) != 0)
    return fail(EXIT_USAGE, "%s: %s %s: cannot create (folder %s is not writable: %s): an "
                "output's folder must be", cmd, opt, path, folder, strerror(errno));
  return 0;
}

int outdir_check_file(const char *cmd, const char *opt, const char *path) {
  struct stat st;
  const size_t n = strlen(path);
  if ((stat(path, &st) == 0 && S_ISDIR(st.st_mode)) || n == 0 || path[n - 1] == '/')
    return fail(EXIT_USAGE, "%s: %s \"%s\": a folder, not a file name: give the file to write",
                cmd, opt, path);
  char *folder = parent_of(path);
  int rc = folder ? writable_folder(cmd, opt, path, folder)
                  : fail(EXIT_FAIL, "%s: out of memory", cmd);
  free(folder);
  return rc;
}

int outdir_check_dir(const char *cmd, const char *opt, const char *path) {
  struct stat st;
  if (!path[0]) return fail(EXIT_USAGE, "%s: %s \"\": expected a folder", cmd, opt);
  if (stat(path, &st) == 0) {
    if (!S_ISDIR(st.st_mode))
      return fail(EXIT_USAGE, "%s: %s %s: exists and is not a folder", cmd, opt, path);
    return writable_folder(cmd, opt, path, path);
  }
  if (errno != ENOENT)
    return fail(EXIT_USAGE, "%s: %s %s: cannot be used (%s)", cmd, opt, path, strerror(errno));
  char *folder = parent_of(path); /* the run creates `path` there */
  int rc = folder ? writable_folder(cmd, opt, path, folder)
                  : fail(EXIT_FAIL, "%s: out of memory", cmd);
  free(folder);
  return rc;
}

int outdir_open(outdir *o, const char *dir) {
  memset(o, 0, sizeof *o);
  o->dir = dir;
  struct stat st;
  if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
    return fail(EXIT_USAGE, "run: --output-dir %s: exists and is not a folder", dir);
  if (mkdir(dir, 0777) == 0) o->created = true;
  else if (errno != EEXIST)
    return fail(EXIT_USAGE, "run: --output-dir %s: cannot create (%s)", dir, strerror(errno));
  o->tmp = outdir_join(dir, ".edgegrad-tmp.XXXXXX", "");
  if (!o->tmp) return oom();
  if (!mkdtemp(o->tmp)) {
    int rc = fail(EXIT_USAGE, "run: --output-dir %s: cannot create a staging folder in it (%s)",
                  dir, strerror(errno));
    free(o->tmp);
    o->tmp = NULL;
    return rc;
  }
  return 0;
}

int outdir_save(outdir *o, const char *sub, const char *name, const eg_tensor *t) {
  char *rel = sub ? outdir_join(sub, name, ".npy") : concat("", "", name, ".npy");
  if (!rel) return oom();
  char **files = realloc(o->files, (size_t)(o->n_files + 1) * sizeof *files);
  char *path = outdir_join(o->tmp, rel, "");
  if (!files || !path) {
    free(rel);
    free(path);
    if (files) o->files = files;
    return oom();
  }
  o->files = files;
  o->files[o->n_files++] = rel;
  if (sub) { /* the sub-folder in staging; its name is ours ("final"), never a model's */
    char *d = outdir_join(o->tmp, sub, "");
    int made = d && (mkdir(d, 0777) == 0 || errno == EEXIST);
    free(d);
    if (!made) {
      free(path);
      return fail(EXIT_USAGE, "run: --output-dir %s: cannot create %s in its staging folder",
                  o->dir, sub);
    }
  }
  eg_status s = eg_npy_save(path, t);
  free(path);
  return s == EG_OK ? 0 : fail(s == EG_ERR_NOMEM ? EXIT_FAIL : EXIT_USAGE, "%s",
                               eg_last_error());
}

/* The target DIR/<rel> of a staged file: a folder there (or a file where its sub-folder goes)
 * would make a rename fail half-way, so commit refuses before it moves anything. */
static int check_target(const outdir *o, const char *rel) {
  char *target = outdir_join(o->dir, rel, "");
  if (!target) return oom();
  struct stat st;
  int rc = 0;
  char *slash = strrchr(target, '/');
  if (strchr(rel, '/')) {
    *slash = 0;
    if (lstat(target, &st) == 0 && !S_ISDIR(st.st_mode))
      rc = fail(EXIT_USAGE, "run: %s: a file is in the way of a folder: remove it or choose "
                "another --output-dir", target);
    *slash = '/';
  }
  if (rc == 0 && lstat(target, &st) == 0 && S_ISDIR(st.st_mode))
    rc = fail(EXIT_USAGE, "run: %s: a folder is in the way of an output: remove it or choose "
              "another --output-dir", target);
  free(target);
  return rc;
}

int outdir_commit(outdir *o) {
  for (int k = 0; k < o->n_files; k++) {
    int rc = check_target(o, o->files[k]);
    if (rc) return rc;
  }
  for (int k = 0; k < o->n_files; k++) {
    char *from = outdir_join(o->tmp, o->files[k], ""), *to = outdir_join(o->dir, o->files[k], "");
    int rc = from && to ? 0 : oom();
    if (rc == 0 && strchr(o->files[k], '/')) { /* a sub-folder of DIR ("final") */
      char *slash = strrchr(to, '/');
      *slash = 0;
      if (mkdir(to, 0777) != 0 && errno != EEXIST)
        rc = fail(EXIT_USAGE, "run: %s: cannot create (%s)", to, strerror(errno));
      *slash = '/';
    }
    if (rc == 0 && rename(from, to) != 0)
      rc = fail(EXIT_USAGE, "run: %s: cannot move into place (%s)", to, strerror(errno));
    free(from);
    free(to);
    if (rc) return rc;
  }
  return 0;
}

/* Removes `path` and, for a folder, everything in it (symbolic links are not followed). */
static void remove_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d))) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      char *p = outdir_join(path, e->d_name, "");
      if (p) remove_tree(p);
      free(p);
    }
    if (d) closedir(d);
    rmdir(path);
  } else {
    unlink(path);
  }
}

void outdir_close(outdir *o, bool committed) {
  if (o->tmp) remove_tree(o->tmp);
  if (o->created && !committed) rmdir(o->dir); /* only if still empty: never another's files */
  for (int k = 0; k < o->n_files; k++) free(o->files[k]);
  free(o->files);
  free(o->tmp);
  memset(o, 0, sizeof *o);
}
