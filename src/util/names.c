/* names.c — see names.h. Sorting (name, index) pairs brings repeats next to each other. */
#include "util/names.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct name_ref {
  const char *name;
  int32_t index;
} name_ref;

static int name_ref_cmp(const void *a, const void *b) {
  const name_ref *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : (x->index > y->index) - (x->index < y->index);
}

const char *eg_names_at(const char *const *names, size_t stride, int32_t i) {
  return *(const char *const *)((const char *)names + (size_t)i * stride);
}

int eg_names_find_repeat(const char *const *names, size_t stride, int32_t n, int32_t *later,
                         int32_t *first) {
  if (n < 2) return 0;
  name_ref *refs = malloc((size_t)n * sizeof *refs);
  if (!refs) return -1;
  for (int32_t i = 0; i < n; i++) refs[i] = (name_ref){eg_names_at(names, stride, i), i};
  qsort(refs, (size_t)n, sizeof *refs, name_ref_cmp);
  bool found = false;
  for (int32_t k = 1; k < n; k++)
    if (strcmp(refs[k - 1].name, refs[k].name) == 0 && (!found || refs[k].index < *later)) {
      found = true;
      *later = refs[k].index;
      *first = refs[k - 1].index;
    }
  free(refs);
  return found;
}
static bool export_name_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

void eg_export_name(const char *name, int32_t tensor, char *out, size_t size) {
  if (size == 0) return;
  size_t n = strlen(name);
  bool keep = n > 0 && n <= 200 && name[0] != '.';
  for (size_t i = 0; keep && i < n; i++) keep = export_name_byte(name[i]);
  if (keep) {
    snprintf(out, size, "%s", name);
    return;
  }
  char safe[201];
  size_t m = n < 200 ? n : 200;
  for (size_t i = 0; i < m; i++) safe[i] = export_name_byte(name[i]) ? name[i] : '_';
  if (m > 0 && safe[0] == '.') safe[0] = '_';
  safe[m] = '\0';
  snprintf(out, size, "%s~%d", safe, (int)tensor);
}
