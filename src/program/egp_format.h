/* egp_format.h — the compiled program file (.egp), version 13 (2 added the compiler's value
 * annotations and node sources to GRAPH, 3 the inputs' state_dict names, 4 their random kind,
 * 5 the program's precision, 6 every input's and output's role and pair, 8 each NPU
 * partition's backend and its record as the backend's own bytes, 9 the NPU executor's plan
 * in a backend's record (how it runs the layout Transposes) and whether each boundary's value
 * is held NHWC between partitions, 10 the plan's ALIAS code (a Reshape sharing its input's
 * bytes), 11 an ALIAS of a graph input, 12 the FUSED code, 13 a FUSED op read by a reduction
 * (its group summed by the ReduceSum / ReduceMean); older versions are refused, with a
 * message to compile the graph again): one binary holding everything a runtime needs to run a
 * graph compiled for a SoC (program.h): the IR graph, each node's placement, each NPU
 * partition's lowered form (its backend's record), the step order, the target SoC, and every
 * STATIC byte exactly once.
 *
 * Written by eg_egp_write (compiler/egp_write.c), read by eg_egp_read (egp_read.c). The reader trusts
 * nothing: it checks every offset, size, count, id, enum code and string before use, rebuilds
 * the IR through eg_graph_verify and each lowered partition through its backend (which
 * re-checks every rule its own builders enforce), and then checks the program itself
 * (placement, boundaries, step order). A file it cannot accept gives one line
 *     "<file>: <section>: <what> (<values>): <rule>"
 * and never a crash.
 *
 * ==== Encoding ====
 * Little-endian throughout. Primitive types: u8, u32, i32, u64, i64, f32 and f64 (IEEE-754
 * bits in a u32 / u64). Records inside a section are packed (no padding). `str` is a u32 index
 * into the STRINGS section; STR_NONE (0xFFFFFFFF) marks an absent optional string. Every
 * count is bounded by the bytes left in its section (and by the limits below), every section
 * is read to its last byte (bytes left over are an error), and every enum code must be known.
 *
 * ==== Layout ====
 *   offset 0   Header (32 bytes)
 *     0  u8[4] magic        "EGP1"
 *     4  u32   version      13 (EG_EGP_VERSION); another version is refused
 *     8  u64   file_size    the file's exact size in bytes (a truncated or extended file is
 *                           refused before anything else is read)
 *     16 u32   n_sections   EG_EGP_N_SECTIONS (6): each kind below exactly once
 *     20 u32   flags        0
 *     24 u64   reserved     0
 *   offset 32  Section table: n_sections entries of 24 bytes
 *     0  u32   kind         EG_EGP_SECTION_* (1..6)
 *     4  u32   reserved     0
 *     8  u64   offset       from the start of the file; a multiple of 8 (STATIC: of 64); at or
 *                           after the end of the section table
 *     16 u64   size         offset + size <= file_size; sections do not overlap
 *   then the sections; the writer puts them in kind order, STATIC last, and the file ends with
 *   the STATIC section. Every byte outside the header, the table and the sections is zero
 *   padding (checked).
 *
 * ==== Sections ====
 * STRINGS (1)
 *   u32 count;  count x { u32 len; u8 bytes[len] }   (no NUL bytes; len <= 65535)
 *   String i is the i-th entry. The writer stores each distinct string once.
 *
 * GRAPH (2) — the IR graph (ir/graph.h), exactly what eg_graph holds except what the verifier
 * derives (value roles, attrs, scratch sizes):
 *   u32 n_values;   n_values x Value
 *     Value  := u8 kind (0 tensor, 1 tuple)
 *               tensor: u8 dtype (eg_dtype code, < EG_DTYPE_COUNT); u8 rank (<= 8);
 *                       rank x i64 dim (>= 0; the product of the non-zero dims
 *                       <= 2^40, computed without overflow: util/checked.h);
 *                       u8 nhwc (0/1: eg_value.axes); u8 npu_int32 (0/1; 1 only on int64);
 *                       Quant
 *     Quant  := u8 present (0/1); if 1: u8 dtype (int8, uint8 or int32 code); i32 axis (-1
 *               per tensor, else < rank); u32 n (1 for axis -1, else shape[axis]); i64 qmin;
 *               i64 qmax (within the dtype's range, qmin <= qmax); n x f64 scale (finite,
 *               in [1e-30, 1e30]: ir/quant_rule.h, the graph verifier's rule too);
 *               n x i64 zero_point (in [qmin, qmax])
 *               tuple:  u32 n_elems; n_elems x i32 (a tensor value id, or -1 for None)
 *   u32 n_inputs;   n_inputs  x { str name; i32 value; u8 role; i32 pair;
 *                                 str state_dict (optional);
 *                                 u8 random (eg_random_kind: 0 none, 1 bernoulli);
 *                                 random 1 only: f64 p (NaN: unknown, else in [0, 1]) }
 *   u32 n_outputs;  n_outputs x { str name; i32 value; u8 role; i32 pair }
 *                   role: an eg_io_role code (0 data, 1 label, 2 parameter, 3 buffer, 4 random
 *                   for inputs; 5 loss, 6 gradient, 7 buffer_update, 8 output for outputs);
 *                   pair: an output's input (a gradient's parameter, a buffer_update's buffer),
 *                   an input's output (its gradient or update), -1 for none. The rules of
 *                   ir/io_role.h hold (checked on reading, as the graph JSON loader does), and
 *                   each input's pair is the output that names it.
 *   u32 n_statics;  n_statics x { str name; i32 value; u64 offset; u64 nbytes }
 *                   offset/nbytes: a range of the STATIC section; offset a multiple of 64;
 *                   nbytes == the value's bytes. offset EG_EGP_NO_BYTES (all ones): the bytes
 *                   are not stored, because no CPU node reads the static, it is no graph
 *                   output (eg_program_cpu_reads) and no partition takes it as a boundary
 *                   input (eg_program_npu_input; both checked on reading): the NPU partitions that
 *                   read it hold it as their own STATIC tensors (e.g. a frozen conv weight as
 *                   HWIO), so the file stores a weight once, in the layout the NPU uses
 *   u32 n_nodes;    n_nodes x Node
 *     Node   := str name (unique); str target (the traced op, "aten.relu.default" — names, not
 *               enum codes, so reordering ops.def never changes the format); i32 output (value
 *               id, or -1); str source (STR_NONE, or the traced node a pass made this one
 *               from); u32 n_args; n_args x Arg; u32 n_kwargs; n_kwargs x { str name; Arg }
 *     Arg    := u8 kind (eg_arg_kind code 0..10), then by kind:
 *               NONE —; INT i64; FLOAT f64; BOOL u8 (0 or 1); VALUE i32 (value id);
 *               LIST u32 n; n x Arg (lists nest at most 4 deep); DTYPE u8 (eg_dtype code);
 *               LAYOUT, DEVICE, MEMORY_FORMAT, STR (10, a Python str argument such as
 *               div's rounding_mode; a reader before it refuses the kind) str
 *   Names of inputs, of outputs and of statics are unique within each list.
 *
 * PLACEMENT (3) — the partitioning (ir/placement.h):
 *   u32 n_nodes (== GRAPH's n_nodes);  n_nodes x { u8 npu (0/1); i32 partition; str reason }
 *       NPU node: partition in [0, n_partitions), reason STR_NONE;
 *       CPU node: partition -1, reason a non-empty string
 *   u32 n_partitions;  n_partitions x { u32 n_nodes (>= 1); n_nodes x i32 node }
 *       node indices strictly ascending, each placed on the NPU in this partition; together
 *       they list every NPU node once; a getitem has its producer's placement
 *   u32 n_warnings;  n_warnings x str
 *
 * NPU (4) — one lowered partition per partition, in partition order, each owned by a backend
 * (backends/lowered.h):
 *   u32 n_partitions (== PLACEMENT's);  n_partitions x Partition
 *     Partition := str backend (a backend this edgegrad has: eg_backend_rt_named; another is
 *                  refused); u64 nbytes (<= the bytes left); nbytes of the backend's record,
 *                  written by its eg_backend.write and read by its eg_backend_rt.read through
 *                  backends/serial.h (the same encoding: its strings are ids into STRINGS, its
 *                  static bytes ranges of STATIC), read to its last byte. The htp backend's
 *                  record is documented in its egp_write.c. Then (n_inputs + n_outputs) x u8
 *                  held (0/1), one per boundary of the record, inputs then outputs: the runtime
 *                  holds the value NHWC in its own buffer between partitions
 *                  (backends/lowered.h eg_boundary.held): 1 only on a boundary the backend
 *                  marks nhwc, of a float32 value defined on the NPU that no CPU node or graph
 *                  output reads (ir/readers.h eg_nhwc_between_partitions), and alike on every
 *                  boundary of the value.
 *   Every record describes its partition's boundary: inputs, the values defined outside the
 *   partition it reads (a static among them, the backward's seed, is fed from its stored bytes:
 *   ir/seed.h); outputs, values defined in it, among them every value the rest of the program
 *   needs (both checked here, after the records).
 *
 * PROGRAM (5) — the target and the order (program/program.h):
 *   str soc (a name eg_target_find knows, e.g. "SM8650")
 *   u8 precision (eg_precision, 1 fp32 or 2 fp16 — how the NPU partitions compute floats)
 *   u32 n_steps (== n_partitions + number of CPU nodes);
 *       n_steps x { i32 node; i32 partition }   CPU step: (node, -1); NPU step: (-1, partition);
 *       every CPU node and every partition exactly once
 *   u32 n_order (== n_nodes); n_order x i32 node — the steps expanded (a partition to its
 *       nodes), a topological order of the graph
 *
 * STATIC (6) — raw bytes: every IR static and every backend's static bytes (htp: QNN STATIC
 * tensors) is a range (offset, nbytes)
 *   of this section, each range starting at a multiple of 64 (so the reader uses the bytes in
 *   place); the writer zeroes the padding between ranges. Identical byte ranges are stored
 *   once (the writer dedupes by hash and memcmp): a QNN STATIC tensor with the IR layout (rank
 *   != 4) shares its IR static's bytes, and so do two statics with equal bytes; a re-laid-out
 *   copy (NHWC or a filter layout) is different bytes. An IR static is stored only when the CPU
 *   side reads it (see GRAPH's statics): a frozen conv weight that only NPU partitions read is
 *   stored once, as the HWIO filter the forward Conv2d and the backward's Transpose share.
 *
 * ==== Limits ====
 * A file is at most EG_EGP_MAX_FILE bytes; strings at most 65535 bytes. */
#ifndef EG_PROGRAM_EGP_FORMAT_H
#define EG_PROGRAM_EGP_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/graph.h"
#include "program/program.h"

#define EG_EGP_MAGIC "EGP1"
#define EG_EGP_VERSION 13u
#define EG_EGP_HEADER_SIZE 32u
#define EG_EGP_SECTION_ENTRY_SIZE 24u
#define EG_EGP_STATIC_ALIGN 64u
#define EG_EGP_SECTION_ALIGN 8u
#define EG_EGP_STR_NONE 0xFFFFFFFFu
#define EG_EGP_NO_BYTES 0xFFFFFFFFFFFFFFFFull /* an IR static whose bytes are not stored */
#define EG_EGP_MAX_STRING 65535u
#define EG_EGP_MAX_FILE ((uint64_t)1 << 40)
#define EG_EGP_MAX_OP_INPUTS 64u
#define EG_EGP_MAX_OP_OUTPUTS 8u
#define EG_EGP_MAX_OP_PARAMS 16u
#define EG_EGP_MAX_ARG_DEPTH 4

typedef enum eg_egp_section_kind {
  EG_EGP_SECTION_STRINGS = 1,
  EG_EGP_SECTION_GRAPH = 2,
  EG_EGP_SECTION_PLACEMENT = 3,
  EG_EGP_SECTION_NPU = 4,
  EG_EGP_SECTION_PROGRAM = 5,
  EG_EGP_SECTION_STATIC = 6
} eg_egp_section_kind;
#define EG_EGP_N_SECTIONS 6u

/* A compiled program read from a file: owns the file's bytes (64-byte aligned; IR statics and
 * QNN STATIC tensors point into them), the graph and the program (program.graph == graph). */
typedef struct eg_egp {
  unsigned char *file;
  size_t file_bytes;
  size_t static_bytes;   /* size of the STATIC section */
  eg_graph *graph;
  eg_program program;
} eg_egp;

/* True when the file at `path` begins with the .egp magic (false also when it cannot be read:
 * the caller's own loader then reports why). */
bool eg_egp_file_has_magic(const char *path);

/* Reads and validates `path`. On failure *out is NULL and the message starts with `path`. */
eg_status eg_egp_read(const char *path, eg_egp **out);
/* The same from memory (copied); `name` stands for the file in messages. */
eg_status eg_egp_read_memory(const char *name, const void *data, size_t size, eg_egp **out);
void eg_egp_free(eg_egp *e);

/* The writer is the compiler's: compiler/egp_write.h. */

#endif
