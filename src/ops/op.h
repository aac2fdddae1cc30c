/* op.h — what each op provides: its argument/shape rules (check) and its CPU execution (run).
 *
 * For every EG_OP(id, target) in ops.def, a family file in src/ops/ defines
 *   eg_status eg_check_<id>(eg_graph *g, eg_node *n);
 *     Validates the arguments (kinds, dtypes, ranks, ranges), parses them into the node's attrs
 *     (EG_ATTRS), sets n->scratch_bytes for the CPU kernel, and checks the recorded output
 *     value(s) with eg_out_tensor / eg_out_tuple + eg_out_elem. Never trusts the file: anything
 *     wrong returns a status with a message naming the node and argument.
 *   eg_status eg_run_<id>(const eg_exec *ex, const eg_node *n);
 *     Executes the node on the CPU: reads argument tensors from ex->data, writes the output(s).
 *     Only called on verified graphs; returns EG_ERR_RUNTIME for data-dependent failures (e.g. a
 *     class index out of range) with a message.
 * A missing definition is a link error, so no op can be half-added. */
#ifndef EG_OPS_OP_H
#define EG_OPS_OP_H

#include "ir/graph.h"
#include "util/error.h"

/* Execution context handed to run functions. data[id] points at value id's dense C-ordered
 * buffer (NULL for tuples and for values not live now); scratch has at least the node's
 * scratch_bytes, 64-byte aligned; prepared: what eg_op_prepare derived for the node being run
 * from the bytes its argument holds now, or NULL (the run derives it itself). */
typedef struct eg_exec {
  const eg_graph *g;
  void *const *data;
  void *scratch;
  const void *prepared;
} eg_exec;

typedef eg_status (*eg_check_fn)(eg_graph *g, eg_node *n);
typedef eg_status (*eg_run_fn)(const eg_exec *ex, const eg_node *n);

#define EG_OP(id, target)                                   \
  eg_status eg_check_##id(eg_graph *g, eg_node *n);         \
  eg_status eg_run_##id(const eg_exec *ex, const eg_node *n);
#include "ir/ops.def"
#undef EG_OP

/* A checked getitem node's tuple element: its value id, or -1 for a None element. */
int32_t eg_getitem_element(const eg_graph *g, const eg_node *n);
/* The value whose bytes a checked node's result repeats exactly (a getitem's element; the self
 * of view, _unsafe_view, reshape, _reshape_alias, detach, alias, clone), or -1. The runtime
 * may plan the result onto that value (an alias); the run functions then copy nothing. */
int32_t eg_copy_source(const eg_graph *g, const eg_node *n);

/* Data a checked node derives on every run from one argument's bytes alone (a convolution's
 * flipped weights and Winograd filter transform), which a runtime derives once where those
 * bytes cannot change between runs (a static of the graph): eg_op_prepared_bytes gives its
 * size (0: the node derives nothing) and, in *from, that argument's value id; eg_op_prepare
 * fills `out` (that many bytes, 64-byte aligned) from the argument's data. A run handed it
 * (eg_exec.prepared) gives the same result bit for bit. */
size_t eg_op_prepared_bytes(const eg_node *n, int32_t *from);
void eg_op_prepare(const eg_node *n, const void *from_data, void *out);

extern const eg_check_fn eg_op_check[EG_OP_COUNT];
extern const eg_run_fn eg_op_run[EG_OP_COUNT];

/* Run-time argument access (arguments were validated by the check). */
/* Value id of tensor argument pos/kw, or -1 when missing or None. */
int32_t eg_exec_arg_id(const eg_node *n, int pos, const char *kw);
/* Data and value of a tensor argument; NULL when missing or None. */
void *eg_exec_arg(const eg_exec *ex, const eg_node *n, int pos, const char *kw);
const eg_value *eg_exec_argv(const eg_exec *ex, const eg_node *n, int pos, const char *kw);
/* The node's tensor output buffer and value. */
void *eg_exec_out(const eg_exec *ex, const eg_node *n);
const eg_value *eg_exec_outv(const eg_exec *ex, const eg_node *n);
/* Tuple element i's buffer, NULL for a None element. */
void *eg_exec_elem(const eg_exec *ex, const eg_node *n, int i);

#endif
