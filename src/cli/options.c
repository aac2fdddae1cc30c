/* options.c — the table-driven option parser of every edgegrad command (options.h). */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "options.h"

static bool is_help(const char *a) {
  return strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0;
}

static int out_of_memory(const opt_command *c) {
  return fail(EXIT_FAIL, "%s%sout of memory", c->name ? c->name : "", c->name ? ": " : "");
}

/* A usage error of command c: "<name>: <message>" (edgegrad's own options: the message
 * alone). Returns EXIT_USAGE, or EXIT_FAIL when the message cannot be made. */
static int refuse(const opt_command *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int refuse(const opt_command *c, const char *fmt, ...) {
  va_list ap, again;
  va_start(ap, fmt);
  va_copy(again, ap);
  const int len = vsnprintf(NULL, 0, fmt, ap);
  char *msg = len >= 0 ? malloc((size_t)len + 1) : NULL;
  if (msg) vsnprintf(msg, (size_t)len + 1, fmt, again);
  va_end(again);
  va_end(ap);
  int rc = msg ? fail(EXIT_USAGE, "%s%s%s", c->name ? c->name : "", c->name ? ": " : "", msg)
               : out_of_memory(c);
  free(msg);
  return rc;
}

/* "edgegrad run --help", "edgegrad --help": where a refused command line is sent. */
static void see_help(const opt_command *c, char *buf, size_t size) {
  snprintf(buf, size, "edgegrad%s%s --help", c->name ? " " : "", c->name ? c->name : "");
}

static int size_value(const opt_command *c, const char *opt, const char *v, size_t *out) {
  char *end = NULL;
  errno = 0;
  unsigned long long n = v[0] >= '0' && v[0] <= '9' ? strtoull(v, &end, 10) : 0;
  int shift = 0;
  if (end && end != v && end[0] && !end[1]) {
    const char *units = "KMG", *u = strchr(units, end[0] & ~0x20);
    if (u && end[0] != 0x20) shift = 10 * (int)(u - units + 1), end++;
  }
  if (!end || end == v || *end || errno || n == 0 || n > (SIZE_MAX >> shift))
    return refuse(c, "%s %s: expected a positive whole number of bytes, optionally with K, M or "
                  "G (e.g. 512M, 2G)", opt, v);
  *out = (size_t)(n << shift);
  return 0;
}

static bool read_long(const char *v, long *out) {
  char *end = NULL;
  errno = 0;
  *out = strtol(v, &end, 10);
  return end && end != v && !*end && !errno;
}

/* A finite number that ends at `stop` (a pair's ','), or at the string's end. */
static bool read_double(const char *v, char stop, const char **rest, double *out) {
  char *end = NULL;
  errno = 0;
  *out = strtod(v, &end);
  if (rest) *rest = end;
  return end && end != v && *end == stop && !errno && isfinite(*out);
}

static int choice_value(const opt_command *c, const opt_def *o, const char *opt, const char *v,
                        int *out) {
  char names[256] = "";
  size_t used = 0;
  int n = 0;
  while (o->choices[n].name) n++;
  for (int k = 0; k < n; k++) {
    if (strcmp(v, o->choices[k].name) == 0) {
      *out = o->choices[k].value;
      return 0;
    }
    if (used < sizeof names)
      used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                               k == 0 ? "" : k == n - 1 ? " or " : ", ", o->choices[k].name);
  }
  return refuse(c, "%s %s: expected %s", opt, v, names);
}

/* Option o, typed as `opt`, with value v (NULL for a flag) into the struct at `base`. */
static int take_option(const opt_command *c, const opt_def *o, const char *opt, const char *v,
                       char *base, int argc) {
  void *field = base + o->at;
  long n;
  double x, y;
  const char *rest;
  switch (o->kind) {
  case OPT_FLAG:
    *(bool *)field = !o->clears;
    return 0;
  case OPT_STRING:
    *(const char **)field = v;
    return 0;
  case OPT_INT:
    if (!read_long(v, &n) || n < o->lo || n > o->hi)
      return refuse(c, "%s %s: expected an integer in [%ld, %ld]", opt, v, o->lo, o->hi);
    if (o->size == sizeof(int)) *(int *)field = (int)n;
    else *(long *)field = n;
    return 0;
  case OPT_NUMBER:
    if (!read_double(v, '\0', NULL, &x) || x < o->min)
      return isinf(o->min) ? refuse(c, "%s %s: expected a finite number", opt, v)
                           : refuse(c, "%s %s: expected a finite number >= %g", opt, v, o->min);
    *(double *)field = x;
    return 0;
  case OPT_PAIR:
    if (!read_double(v, ',', &rest, &x) || !read_double(rest + 1, '\0', NULL, &y))
      return refuse(c, "%s %s: expected two numbers A,B (e.g. 0.9,0.999)", opt, v);
    *(double *)field = x;
    *(double *)(base + o->at2) = y;
    return 0;
  case OPT_SIZE:
    if (o->size2) *(const char **)(base + o->at2) = v;
    return size_value(c, opt, v, field);
  case OPT_CHOICE:
    return choice_value(c, o, opt, v, field);
  case OPT_LIST: {
    const char ***list = field;
    int *count = (int *)(base + o->at2);
    if (!*list && !(*list = calloc((size_t)argc + 1, sizeof **list))) return out_of_memory(c);
    (*list)[(*count)++] = v;
    return 0;
  }
  case OPT_CUSTOM:
    return o->parse(c->name ? c->name : "edgegrad", opt, v, field);
  }
  return 0;
}

/* The option named `a[0..len)`, by its name or alias; NULL when the table has none. */
static const opt_def *find_option(const opt_command *c, const char *a, size_t len) {
  for (int k = 0; k < c->n_opts; k++) {
    const opt_def *o = &c->opts[k];
    if ((strncmp(a, o->name, len) == 0 && !o->name[len]) ||
        (o->alias && strncmp(a, o->alias, len) == 0 && !o->alias[len]))
      return o;
  }
  return NULL;
}

/* The k-th positional argument (0-based) `a`. */
static int take_positional(const opt_command *c, char *base, int k, const char *a) {
  static const char *const nth[] = {"first", "second", "third", "fourth"};
  char see[64];
  if (k < c->n_pos) {
    *(const char **)(base + c->pos[k].at) = a;
    return 0;
  }
  see_help(c, see, sizeof see);
  if (c->n_pos == 0) return refuse(c, "argument %s unknown (see %s)", a, see);
  if (c->n_pos == 1)
    return refuse(c, "a second %s %s: give one %s", c->pos[0].what, a, c->synopsis);
  return refuse(c, "a %s argument %s: give %s", nth[c->n_pos], a, c->synopsis);
}

int opt_parse(const opt_command *c, int argc, char **argv, void *args, opt_given *given) {
#ifndef NDEBUG
  char why[256];
  assert(opt_table_ok(c, why, sizeof why));
#endif
  char *base = args, see[64];
  int n_pos = 0;
  if (given) given->bits = 0;
  see_help(c, see, sizeof see);
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (is_help(a)) {
      fputs(c->usage, stdout);
      return OPT_STOP;
    }
    if (a[0] != '-' || !a[1]) { /* "-" alone is a name, as a file argument */
      int rc = take_positional(c, base, n_pos++, a);
      if (rc) return rc;
      continue;
    }
    const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL; /* --name=VALUE */
    const size_t len = eq ? (size_t)(eq - a) : strlen(a);
    const opt_def *o = find_option(c, a, len);
    if (!o) return refuse(c, "option %.*s unknown (see %s)", (int)len, a, see);
    const char *opt = strncmp(a, o->name, len) == 0 && !o->name[len] ? o->name : o->alias;
    const char *v = eq ? eq + 1 : NULL;
    if (o->kind == OPT_FLAG && v) return refuse(c, "%s: %s takes no value", a, opt);
    if (o->kind != OPT_FLAG && !v) {
      if (i + 1 == argc) return refuse(c, "%s needs a value (%s)", opt, o->arg);
      v = argv[++i];
    }
    int rc = take_option(c, o, opt, v, base, argc);
    if (rc) return rc;
    if (given) given->bits |= (uint64_t)1 << (o - c->opts);
  }
  if (n_pos < c->n_required)
    return refuse(c, "no %s given: give %s (see %s)", c->pos[n_pos].what, c->synopsis, see);
  return 0;
}

bool opt_was_given(const opt_command *c, const opt_given *given, const char *name) {
  for (int k = 0; k < c->n_opts; k++)
    if (strcmp(c->opts[k].name, name) == 0) return given->bits >> k & 1;
  assert(!"opt_was_given: an option its command does not have");
  return false;
}

/* Whether option o's fields have the sizes its kind writes. */
static bool sizes_ok(const opt_def *o) {
  switch (o->kind) {
  case OPT_FLAG: return o->size == sizeof(bool);
  case OPT_STRING: return o->size == sizeof(const char *);
  case OPT_INT:
    return o->lo <= o->hi && (o->size == sizeof(long) ||
                              (o->size == sizeof(int) && o->lo >= INT_MIN && o->hi <= INT_MAX));
  case OPT_NUMBER: return o->size == sizeof(double) && !isnan(o->min);
  case OPT_PAIR: return o->size == sizeof(double) && o->size2 == sizeof(double);
  case OPT_SIZE: return o->size == sizeof(size_t) && (!o->size2 || o->size2 == sizeof(char *));
  case OPT_CHOICE: return o->size == sizeof(int) && o->choices && o->choices[0].name;
  case OPT_LIST: return o->size == sizeof(const char **) && o->size2 == sizeof(int);
  case OPT_CUSTOM: return o->parse != NULL;
  }
  return false;
}

bool opt_table_ok(const opt_command *c, char *why, size_t size) {
  const char *name = c->name ? c->name : "edgegrad";
  if (!c->usage || c->n_opts < 0 || c->n_opts > OPT_MAX || c->n_pos < 0 || c->n_pos > 3 ||
      c->n_required < 0 || c->n_required > c->n_pos || (c->n_pos && (!c->pos || !c->synopsis))) {
    snprintf(why, size, "%s: its usage, option count (at most %d) or positional arguments (at "
             "most 3) are not as options.h says", name, OPT_MAX);
    return false;
  }
  for (int k = 0; k < c->n_opts; k++) {
    const opt_def *o = &c->opts[k];
    if (!o->name || strncmp(o->name, "--", 2) != 0 || !o->name[2] || strchr(o->name, '=') ||
        is_help(o->name) || (o->alias && (o->alias[0] != '-' || !o->alias[1] || o->alias[2] ||
                                          is_help(o->alias)))) {
      snprintf(why, size, "%s: option %d (%s): a name is --word (no '='), an alias -x, neither "
               "-h nor --help", name, k, o->name ? o->name : "NULL");
      return false;
    }
    if (!sizes_ok(o) || (o->kind == OPT_FLAG) != (o->arg == NULL)) {
      snprintf(why, size, "%s: %s: its fields, range or value name do not fit its kind", name,
               o->name);
      return false;
    }
    for (int j = 0; j < k; j++) {
      const opt_def *p = &c->opts[j];
      if (strcmp(o->name, p->name) == 0 ||
          (o->alias && p->alias && strcmp(o->alias, p->alias) == 0)) {
        snprintf(why, size, "%s: %s: in the table twice", name, o->name);
        return false;
      }
    }
  }
  return true;
}
