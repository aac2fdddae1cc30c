/* ops.c — the op name table, expanded from ops.def. */
#include <stdio.h>
#include <string.h>

#include "ir/graph.h"

static const char *const eg_op_targets[] = {
#define EG_OP(id, target) [EG_OP_##id] = target,
#include "ir/ops.def"
#undef EG_OP
};
_Static_assert(sizeof eg_op_targets / sizeof eg_op_targets[0] == EG_OP_COUNT,
               "ops.def and the target table disagree");

const char *eg_op_target(eg_op op) {
  return (unsigned)op < EG_OP_COUNT ? eg_op_targets[op] : "?";
}

eg_op eg_op_from_target(const char *target) {
  for (int i = 0; i < EG_OP_COUNT; i++)
    if (strcmp(eg_op_targets[i], target) == 0) return (eg_op)i;
  return EG_OP_COUNT;
}

const char *eg_op_display_name(eg_op op, char *buf, size_t size) {
  const char *target = eg_op_target(op);
  size_t len = strlen(target), suffix = sizeof ".default" - 1;
  if (len > suffix && strcmp(target + len - suffix, ".default") == 0) len -= suffix;
  snprintf(buf, size, "%.*s", (int)len, target);
  return buf;
}
