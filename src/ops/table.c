/* table.c — the check and run tables, expanded from ops.def, and run-time argument access. */
#include "ops/op.h"

const eg_check_fn eg_op_check[EG_OP_COUNT] = {
#define EG_OP(id, target) [EG_OP_##id] = eg_check_##id,
#include "ir/ops.def"
#undef EG_OP
};

const eg_run_fn eg_op_run[EG_OP_COUNT] = {
#define EG_OP(id, target) [EG_OP_##id] = eg_run_##id,
#include "ir/ops.def"
#undef EG_OP
};

int32_t eg_exec_arg_id(const eg_node *n, int pos, const char *kw) {
  const eg_arg *a = eg_node_arg(n, pos, kw);
  return a && a->kind == EG_ARG_VALUE ? a->value : -1;
}

void *eg_exec_arg(const eg_exec *ex, const eg_node *n, int pos, const char *kw) {
  int32_t id = eg_exec_arg_id(n, pos, kw);
  return id >= 0 ? ex->data[id] : NULL;
}

const eg_value *eg_exec_argv(const eg_exec *ex, const eg_node *n, int pos, const char *kw) {
  int32_t id = eg_exec_arg_id(n, pos, kw);
  return id >= 0 ? &ex->g->values[id] : NULL;
}

void *eg_exec_out(const eg_exec *ex, const eg_node *n) { return ex->data[n->output]; }

const eg_value *eg_exec_outv(const eg_exec *ex, const eg_node *n) {
  return &ex->g->values[n->output];
}

void *eg_exec_elem(const eg_exec *ex, const eg_node *n, int i) {
  int32_t id = ex->g->values[n->output].elems[i];
  return id >= 0 ? ex->data[id] : NULL;
}
