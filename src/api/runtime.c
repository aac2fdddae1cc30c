/* runtime.c — eg_runtime_* of the public API: executes a verified graph on the portable CPU
 * kernels, or a compiled program (program/program.h; compiled in memory, or loaded with the
 * model from a .egp file): its steps in order, CPU nodes through eg_op_run and NPU partitions
 * through their executors (runtime/npu_step.h).
 *
 * Memory is planned and allocated once at creation (runtime/plan.h, in the program's node order
 * when compiled): one activation arena, one buffer per graph input, and the CPU kernels'
 * scratch (one block of the largest need: nodes run one at a time). An NPU partition's staging
 * and executor memory is planned in the arena too (the NPU steps are created before the plan,
 * which asks each its need): each tensor over the ops that use it, among the values, or as one
 * block live while its step runs — whichever layout needs less (plan_memory). Values that live
 * only inside an NPU partition get no arena bytes: its executor holds them.
 * Running allocates nothing. Each value's data pointer is fixed at creation.
 * eg_runtime_options.max_memory_bytes is checked against the plan (arena incl. the NPU steps'
 * blocks, CPU scratch, inputs) before any of them is allocated. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/profile.h"
#include "ops/op.h"
#include "program/egp_format.h"
#include "program/program.h"
#include "api/runtime.h"
#include "api/struct_size.h"
#include "ir/readers.h"
#include "runtime/loss_seed.h"
#include "runtime/model.h"
#include "runtime/npu_dump.h"
#include "runtime/npu_step.h"
#include "runtime/plan.h"
#include "target/targets.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/fp16.h"

struct eg_runtime {
  const eg_graph *g;
  eg_program *program;     /* compiled; NULL runs every node on the CPU */
  bool owns_program;       /* compiled in memory (else the model's loaded .egp owns it) */
  eg_npu_step **npu;       /* per partition */
  eg_plan plan;
  unsigned char *arena;    /* activations */
  unsigned char *inputs;   /* all graph inputs, each 64-byte aligned */
  void *scratch;           /* kernel scratch: the CPU nodes' and the NPU steps' executors' */
  size_t scratch_bytes;
  int32_t *step_of_part;   /* per partition: its program step (the plan's work_offset index) */
  int32_t *first_block;    /* per partition: its first span (eg_npu_step_tensor_spans), */
  int32_t *n_spans;        /* and how many (-1: the step keeps them in its working block) */
  bool spans_planned;      /* the plan placed the spans (else every step's working block) */
  int32_t *span_block;     /* per span: its block in the plan; -1: none (an op's scratch in
                              the shared scratch) */
  void **data;             /* per value id */
  bool *input_set;
  bool ran;
  int num_threads;         /* eg_runtime_options.num_threads; 0: the caller's */
  eg_precision precision;  /* the NPU steps': eg_runtime_options.precision, else the program's */
  eg_run_profile *profile; /* eg_runtime_options.profile; NULL when off */
  char *dump_dir;          /* eg_runtime_options.dump_partitions_dir, copied; NULL when off */
  bool *dump_nhwc;         /* dumping: per value id, its buffer holds NHWC (held_nhwc) */
  const double *seed_scale; /* loss scaling (eg_runtime_bind_loss_seed); NULL: not bound */
  int32_t seed_value;      /* the backward's seed, */
  int32_t seed_node;       /* its ones_like node, filled after it runs; -1: a constant, */
  float *seed_buf;         /* rebound to this buffer, filled as each run starts, */
  bool seed_fed;           /* or a constant fed to NPU partitions: its `fed` copy is filled */
  bool seed_fp16;          /* fed to partitions that store floats as fp16 (docs/fp16.md) */
  unsigned char *fed;      /* the statics NPU partitions take as inputs, copied (bind_values) */
};

static void *aligned_alloc64(size_t bytes) {
  return aligned_alloc(64, ((bytes ? bytes : 1) + 63) & ~(size_t)63);
}

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

static size_t input_bytes(const eg_graph *g) {
  size_t in_bytes = 0;
  for (int32_t i = 0; i < g->n_inputs; i++)
    in_bytes += align64(eg_value_nbytes(&g->values[g->inputs[i].value]));
  return in_bytes;
}

/* The limit of eg_runtime_options, checked on the plan before anything is allocated. */
static eg_status check_budget(const eg_runtime *rt, const eg_runtime_options *opt) {
  if (!opt->max_memory_bytes) return EG_OK;
  size_t arena = align64(rt->plan.arena_bytes), scratch = align64(rt->scratch_bytes);
  size_t in = input_bytes(rt->g), total = arena;
  bool over = arena < rt->plan.arena_bytes || scratch < rt->scratch_bytes; /* wrapped */
  over = over || __builtin_add_overflow(total, scratch, &total);
  over = over || __builtin_add_overflow(total, in, &total);
  if (!over && total <= opt->max_memory_bytes) return EG_OK;
  return eg_error(EG_ERR_LIMIT, "eg_runtime_create: memory needed (%s%zu bytes: activation arena "
                  "%zu, kernel scratch %zu, inputs %zu) exceeds max_memory_bytes (%zu bytes): the "
                  "runtime reserves all of it at creation; raise the limit or use a smaller batch",
                  over ? "over " : "", total, rt->plan.arena_bytes, rt->scratch_bytes, in,
                  opt->max_memory_bytes);
}

/* A static an NPU partition takes as a boundary input (the backward's seed: ir/seed.h) is
 * bound to a copy of the runtime's own, in one block: the step binds its buffer in place at
 * creation, and loss scaling writes the scale into it before each run, which the graph's
 * bytes, shared by every runtime of the model, must not take. */
static eg_status copy_fed_statics(eg_runtime *rt) {
  const eg_graph *g = rt->g;
  size_t bytes = 0;
  for (int32_t i = 0; rt->program && i < g->n_statics; i++)
    if (eg_program_npu_input(rt->program, -1, g->statics[i].value))
      bytes += align64(g->statics[i].nbytes);
  if (!bytes) return EG_OK;
  if (!(rt->fed = aligned_alloc64(bytes)))
    return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory (%zu bytes of fed "
                    "constants)", bytes);
  size_t off = 0;
  for (int32_t i = 0; i < g->n_statics; i++) {
    const eg_static *st = &g->statics[i];
    if (!eg_program_npu_input(rt->program, -1, st->value)) continue;
    if (st->nbytes) memcpy(rt->fed + off, st->data, st->nbytes);
    rt->data[st->value] = rt->fed + off;
    off += align64(st->nbytes);
  }
  return EG_OK;
}

static eg_status bind_values(eg_runtime *rt) {
  const eg_graph *g = rt->g;
  size_t in_bytes = input_bytes(g);
  rt->inputs = aligned_alloc64(in_bytes);
  rt->arena = aligned_alloc64(rt->plan.arena_bytes);
  if (!rt->inputs || !rt->arena)
    return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory (%zu activation bytes)",
                    rt->plan.arena_bytes);
  size_t off = 0;
  for (int32_t i = 0; i < g->n_inputs; i++) {
    rt->data[g->inputs[i].value] = rt->inputs + off;
    off += align64(eg_value_nbytes(&g->values[g->inputs[i].value]));
  }
  for (int32_t i = 0; i < g->n_statics; i++)
    rt->data[g->statics[i].value] = (void *)g->statics[i].data;
  EG_TRY(copy_fed_statics(rt));
  for (int32_t v = 0; v < g->n_values; v++)
    if (rt->plan.offset[v] != EG_PLAN_NONE) rt->data[v] = rt->arena + rt->plan.offset[v];
  return EG_OK;
}

/* held (eg_nhwc_between_partitions: the values only NPU steps touch, held NHWC) less the
 * values a partition also puts out as another value of the same bytes that the CPU reads (one
 * tensor, or a copy: a ReLU's result for a CPU max pool and its detach for the backward's
 * threshold): both then stay in IR order on one buffer (eg_npu_step_output_repeats) rather
 * than one buffer in each order for as long as either lives; their NPU readers convert them
 * as they take them. */
static eg_status hold_repeats_alike(const eg_runtime *rt, bool *held) {
  const eg_program *p = rt->program;
  int32_t *root = NULL;
  for (int32_t k = 0; k < p->parts.n_partitions; k++) {
    const eg_lowered *hp = &p->lowered[k];
    int32_t *grown = realloc(root, ((size_t)hp->n_outputs + 1) * sizeof(int32_t));
    if (!grown) {
      free(root);
      return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
    }
    root = grown;
    for (int32_t j = 0; j < hp->n_outputs; j++)
      root[j] = eg_npu_copy_root(rt->g, hp->outputs[j].value);
    for (int32_t j = 1; j < hp->n_outputs; j++)
      for (int32_t i = 0; i < j; i++) {
        const int32_t vi = hp->outputs[i].value, vj = hp->outputs[j].value;
        if (eg_npu_outputs_same_bytes(hp, root, i, j) && held[vi] != held[vj])
          held[vi] = held[vj] = false;
      }
  }
  free(root);
  return EG_OK;
}

/* The NPU steps, before the plan: each one's working memory (staging and executor tensors) as
 * a block of the arena live while its step runs (*work: per program step, malloc'ed), and as
 * spans over the nodes whose ops use each tensor (*blocks, *n_blocks; none for a step whose
 * ops cannot be told apart by node). */
static eg_status create_npu_steps(eg_runtime *rt, size_t **work, eg_plan_block **blocks,
                                  int32_t *n_blocks) {
  const eg_program *p = rt->program;
  *work = calloc((size_t)rt->g->n_nodes + 1, sizeof(size_t));
  rt->npu = calloc((size_t)p->parts.n_partitions + 1, sizeof(eg_npu_step *));
  rt->step_of_part = calloc((size_t)p->parts.n_partitions + 1, sizeof(int32_t));
  rt->first_block = calloc((size_t)p->parts.n_partitions + 1, sizeof(int32_t));
  rt->n_spans = calloc((size_t)p->parts.n_partitions + 1, sizeof(int32_t));
  if (!*work || !rt->npu || !rt->step_of_part || !rt->first_block || !rt->n_spans)
    return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
  for (int32_t k = 0; k < p->n_steps; k++)
    if (p->steps[k].partition >= 0) rt->step_of_part[p->steps[k].partition] = k;
  /* a value only NPU steps touch stays NHWC in its buffer between them: no conversions */
  bool *held_nhwc = NULL;
  eg_status s = eg_nhwc_between_partitions(rt->g, &p->parts, &held_nhwc);
  if (s == EG_OK) s = hold_repeats_alike(rt, held_nhwc);
  int32_t cap = 0;
  for (int32_t k = 0; s == EG_OK && k < p->parts.n_partitions; k++) {
    s = eg_npu_step_create(rt->g, &p->lowered[k], held_nhwc, rt->precision, &rt->npu[k]);
    if (s != EG_OK) break;
    const eg_plan_block *spans = NULL;
    const int32_t n = eg_npu_step_tensor_spans(rt->npu[k], rt->g, &p->lowered[k],
                                               &p->parts.partitions[k], &spans);
    rt->first_block[k] = *n_blocks;
    rt->n_spans[k] = n;
    if (n > 0 && *n_blocks + n > cap) {
      cap = 2 * cap > *n_blocks + n ? 2 * cap : *n_blocks + n;
      eg_plan_block *grown = realloc(*blocks, (size_t)cap * sizeof **blocks);
      if (!grown) {
        s = eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
        break;
      }
      *blocks = grown;
    }
    for (int32_t i = 0; i < n; i++) (*blocks)[(*n_blocks)++] = spans[i];
    (*work)[rt->step_of_part[k]] = eg_npu_step_work_bytes(rt->npu[k]);
  }
  if (rt->dump_dir) rt->dump_nhwc = held_nhwc; /* the dump permutes those back to NCHW */
  else free(held_nhwc);
  return s;
}

/* The CPU kernels' scratch, and each NPU step bound to the buffers and its block or spans. */
static eg_status allocate_work(eg_runtime *rt) {
  rt->scratch = aligned_alloc64(rt->scratch_bytes);
  if (!rt->scratch)
    return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory (%zu bytes of kernel "
                    "scratch)", rt->scratch_bytes);
  eg_status s = EG_OK;
  void **tensors = NULL; /* a step's executor tensors' buffers */
  for (int32_t k = 0; s == EG_OK && rt->program && k < rt->program->parts.n_partitions; k++) {
    const size_t off = rt->plan.work_offset[rt->step_of_part[k]];
    const int32_t n = rt->n_spans[k] > 0 ? rt->n_spans[k] : 0;
    void **grown = realloc(tensors, ((size_t)n + 1) * sizeof *tensors);
    if (!grown) {
      s = eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
      break;
    }
    tensors = grown;
    for (int32_t i = 0; rt->spans_planned && i < n; i++) {
      const int32_t b = rt->span_block[rt->first_block[k] + i];
      tensors[i] = b < 0 ? NULL : rt->arena + rt->plan.block_offset[b];
    }
    s = eg_npu_step_bind(rt->npu[k], rt->g, rt->data, rt->arena + (off == EG_PLAN_NONE ? 0 : off),
                         rt->spans_planned && rt->n_spans[k] >= 0 ? tensors : NULL,
                         rt->scratch);
  }
  free(tensors);
  return s;
}

/* A compiled program's values that live only inside one NPU partition (no CPU node, other
 * partition or graph output reads them): its executor holds them, the arena need not. */
static eg_status inside_only(const eg_graph *g, const eg_program *p, bool **out) {
  *out = NULL;
  if (!p) return EG_OK;
  eg_readers readers = {0};
  bool *skip = calloc((size_t)g->n_values + 1, sizeof(bool));
  eg_status s = skip ? eg_readers_compute(g, &p->parts, &readers)
                     : eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
  for (int32_t v = 0; s == EG_OK && v < g->n_values; v++) {
    const eg_value *x = &g->values[v];
    if (x->role != EG_ROLE_NODE || !p->parts.nodes[x->def].npu) continue;
    skip[v] = !eg_readers_outside(&readers, v, p->parts.nodes[x->def].partition);
  }
  eg_readers_free(&readers);
  if (s != EG_OK) free(skip);
  else *out = skip;
  return s;
}

/* A compiled program's step of each node: a partition's nodes run as one step, which binds
 * its boundary values in place, so the plan keeps what a step reads apart from what it
 * writes. */
static eg_status steps_of_nodes(const eg_graph *g, const eg_program *p, int32_t **out) {
  *out = NULL;
  if (!p) return EG_OK;
  int32_t *step = malloc(((size_t)g->n_nodes + 1) * sizeof(int32_t));
  if (!step) return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
  for (int32_t i = 0; i < g->n_nodes; i++) step[i] = -1;
  for (int32_t k = 0; k < p->n_steps; k++) {
    const eg_program_step *st = &p->steps[k];
    if (st->partition < 0) {
      step[st->node] = k;
      continue;
    }
    const eg_partition *part = &p->parts.partitions[st->partition];
    for (int32_t j = 0; j < part->n_nodes; j++) step[part->nodes[j]] = k;
  }
  *out = step;
  return EG_OK;
}

/* Per node: an NPU node whose lowering may alias an argument's tensor (its partition's
 * backend's eg_backend_rt.may_alias). */
static eg_status aliasing_nodes(const eg_graph *g, const eg_program *p, bool **out) {
  *out = NULL;
  if (!p) return EG_OK;
  bool *a = calloc((size_t)g->n_nodes + 1, sizeof(bool));
  if (!a) return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
  for (int32_t i = 0; i < g->n_nodes; i++)
    a[i] = p->parts.nodes[i].npu &&
           p->lowered[p->parts.nodes[i].partition].backend->may_alias(g->nodes[i].op);
  *out = a;
  return EG_OK;
}

/* A copy run on the CPU — a getitem, or a view, reshape, detach, alias or clone: the same
 * bytes (eg_copy_source) — is planned onto its source (its result shares the source's bytes;
 * the run function then copies nothing), when the source is a node's result: inputs and
 * constants are bound by the caller. A chain of copies shares the first source. Inside an NPU
 * partition only a getitem is (its element's tensor is its own); other copies there are the
 * executor's. */
static eg_status copy_aliases(const eg_graph *g, const eg_program *p, int32_t **out) {
  int32_t *alias = malloc(((size_t)g->n_values + 1) * sizeof(int32_t));
  *out = alias;
  if (!alias) return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
  for (int32_t v = 0; v < g->n_values; v++) alias[v] = -1;
  for (int32_t i = 0; i < g->n_nodes; i++) {
    const eg_node *n = &g->nodes[i];
    if (p && p->parts.nodes[i].npu) {
      /* a getitem inside a partition names its element's tensor: one buffer for both (the
       * step's copy from one to the other is then skipped, npu_step.c) */
      const int32_t el = n->op == EG_OP_getitem && n->output >= 0 ? eg_getitem_element(g, n) : -1;
      if (el >= 0 && g->values[el].role == EG_ROLE_NODE) alias[n->output] = el;
      continue;
    }
    const int32_t src = eg_copy_source(g, n);
    if (src >= 0 && src != n->output && g->values[src].role == EG_ROLE_NODE)
      alias[n->output] = src;
  }
  /* Resolve chains (a detach of a view) to their root, whatever the node order. */
  for (int32_t v = 0; v < g->n_values; v++) {
    int32_t r = alias[v];
    for (int32_t hops = 0; r >= 0 && alias[r] >= 0 && hops < g->n_values; hops++) r = alias[r];
    if (r >= 0) alias[v] = r;
  }
  return EG_OK;
}

/* An NPU step's output that repeats an earlier one's bytes (eg_npu_step_output_repeats: a
 * detach or view the partition also puts out) is planned onto that one, as a copy run on the
 * CPU is onto its source (copy_aliases; chains resolved to their root). */
static void npu_output_aliases(const eg_runtime *rt, int32_t *alias) {
  const eg_program *p = rt->program;
  for (int32_t k = 0; p && k < p->parts.n_partitions; k++)
    for (int32_t j = 0; j < p->lowered[k].n_outputs; j++) {
      int32_t r = eg_npu_step_output_repeats(rt->npu[k], j);
      for (int32_t hops = 0; r >= 0 && alias[r] >= 0 && hops < rt->g->n_values; hops++)
        r = alias[r];
      const int32_t v = p->lowered[k].outputs[j].value;
      if (r >= 0 && r != v && alias[v] < 0) alias[v] = r;
    }
}

/* The largest scratch of the nodes the CPU runs. */
static size_t cpu_scratch(const eg_runtime *rt) {
  size_t most = 0;
  const eg_program *p = rt->program;
  for (int32_t k = 0; k < (p ? p->n_steps : rt->g->n_nodes); k++) {
    const int32_t node = p ? p->steps[k].node : k;
    if (p && p->steps[k].partition >= 0) continue;
    if (rt->g->nodes[node].scratch_bytes > most) most = rt->g->nodes[node].scratch_bytes;
  }
  return most;
}

/* The activation plan (rt->plan, rt->scratch_bytes) of the smallest total, of three layouts
 * of the NPU steps' memory: each step's working block (spec: step_work of every step); the
 * spans of each step's tensors and staging among the values, its ops' scratch in the shared
 * scratch; and those with the ops' scratch as spans too (the shared scratch then only the CPU
 * nodes'). The spans pay where a partition's peak meets few live values (MobileNetV2 full
 * training: 70 -> 57 MB of arena), the blocks on small graphs where first fit does worse. */
static eg_status plan_memory(eg_runtime *rt, const eg_plan_spec *blocks_spec,
                             const eg_plan_block *spans, int32_t n_spans) {
  /* the scratch all steps need in the shared scratch, and the steps without spans alone */
  size_t all = cpu_scratch(rt), left = all;
  const int32_t n_parts = rt->program ? rt->program->parts.n_partitions : 0;
  for (int32_t k = 0; k < n_parts; k++) {
    const size_t scratch = eg_npu_step_scratch_bytes(rt->npu[k]);
    if (scratch > all) all = scratch;
    if (rt->n_spans[k] < 0 && scratch > left) left = scratch;
  }
  EG_TRY(eg_plan_memory(rt->g, blocks_spec, &rt->plan));
  rt->scratch_bytes = all;
  if (n_spans <= 0) return EG_OK;
  size_t *work_left = calloc((size_t)rt->g->n_nodes + 1, sizeof(size_t)); /* steps w/o spans */
  for (int32_t k = 0; work_left && k < n_parts; k++)
    if (rt->n_spans[k] < 0) work_left[rt->step_of_part[k]] = eg_npu_step_work_bytes(rt->npu[k]);
  eg_plan_block *kept = malloc((size_t)n_spans * sizeof *kept);
  int32_t *block = malloc((size_t)n_spans * sizeof(int32_t));
  rt->span_block = malloc((size_t)n_spans * sizeof(int32_t));
  if (!work_left || !kept || !block || !rt->span_block) {
    free(work_left);
    free(kept);
    free(block);
    return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
  }
  eg_status s = EG_OK;
  for (int with_scratch = 0; s == EG_OK && with_scratch < 2; with_scratch++) {
    int32_t n = 0;
    for (int32_t k = 0; k < n_parts; k++)
      for (int32_t i = 0; i < (rt->n_spans[k] > 0 ? rt->n_spans[k] : 0); i++) {
        const int32_t at = rt->first_block[k] + i;
        const bool drop = !with_scratch && eg_npu_step_span_is_scratch(rt->npu[k], i);
        block[at] = drop ? -1 : n;
        if (!drop) kept[n++] = spans[at];
      }
    eg_plan_spec spec = *blocks_spec;
    spec.step_work = work_left;
    spec.blocks = kept;
    spec.n_blocks = n;
    eg_plan alt = {0};
    s = eg_plan_memory(rt->g, &spec, &alt);
    const size_t scratch = with_scratch ? left : all;
    if (s == EG_OK && alt.arena_bytes + scratch < rt->plan.arena_bytes + rt->scratch_bytes) {
      eg_plan_free(&rt->plan);
      rt->plan = alt;
      rt->scratch_bytes = scratch;
      rt->spans_planned = true;
      memcpy(rt->span_block, block, (size_t)n_spans * sizeof(int32_t));
    } else {
      eg_plan_free(&alt);
    }
  }
  free(work_left);
  free(kept);
  free(block);
  return s;
}

/* eg_runtime_options.dump_partitions_dir: checked (a folder, or one to make in an existing
 * folder; a runtime with NPU partitions) and copied. */
static eg_status keep_dump_dir(eg_runtime *rt, const char *dir) {
  EG_TRY(eg_npu_dump_check(dir));
  if (!rt->program || rt->program->parts.n_partitions == 0)
    return eg_error(EG_ERR_ARGUMENT, "eg_runtime_create: dump_partitions_dir %s: the runtime runs "
                    "no NPU partition (%s%s%s): only a compiled program's NPU partitions are "
                    "dumped", dir, rt->program ? "compiled for " : "not compiled: every node ",
                    rt->program ? rt->program->target->soc : "runs on the CPU",
                    rt->program ? " with every node on the CPU" : "");
  const size_t n = strlen(dir) + 1;
  if (!(rt->dump_dir = malloc(n)))
    return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
  memcpy(rt->dump_dir, dir, n);
  return EG_OK;
}

/* Plans, checks the plan against the options' limits (the caller's `options`, read by the
 * struct size rules; NULL: the defaults), allocates and binds; rt->g (and rt->program, if
 * compiled) are set. */
static eg_status setup(eg_runtime *rt, const eg_runtime_options *options) {
  eg_runtime_options o = EG_RUNTIME_OPTIONS_INIT;
  if (options) EG_TRY(EG_STRUCT_READ(eg_runtime_options, &o, options, "eg_runtime_create"));
  const eg_runtime_options *opt = &o;
  if (opt->num_threads < 0)
    return eg_error(EG_ERR_ARGUMENT, "eg_runtime_create: num_threads (%d): must be >= 0 (0: the "
                    "process default)", opt->num_threads);
  rt->num_threads = opt->num_threads;
  if ((unsigned)opt->precision > (unsigned)EG_PRECISION_FP16)
    return eg_error(EG_ERR_ARGUMENT, "eg_runtime_create: precision (%d): must be "
                    "EG_PRECISION_DEFAULT (the program's), _FP32 or _FP16", (int)opt->precision);
  rt->precision = opt->precision ? opt->precision
                  : rt->program        ? rt->program->precision
                                       : EG_PRECISION_FP32;
  if (opt->dump_partitions_dir) EG_TRY(keep_dump_dir(rt, opt->dump_partitions_dir));
  bool *unplanned = NULL;
  int32_t *step_of = NULL, *alias_of = NULL;
  size_t *step_work = NULL;
  eg_plan_block *blocks = NULL;
  int32_t n_blocks = 0;
  bool *aliasing = NULL;
  eg_status s = inside_only(rt->g, rt->program, &unplanned);
  if (s == EG_OK) s = steps_of_nodes(rt->g, rt->program, &step_of);
  if (s == EG_OK) s = aliasing_nodes(rt->g, rt->program, &aliasing);
  if (s == EG_OK) s = copy_aliases(rt->g, rt->program, &alias_of);
  if (s == EG_OK && rt->program)
    s = create_npu_steps(rt, &step_work, &blocks, &n_blocks);
  if (s == EG_OK) npu_output_aliases(rt, alias_of);
  if (s == EG_OK) {
    const eg_plan_spec spec = {.order = rt->program ? rt->program->order : NULL,
                               .step_of = step_of, .unplanned = unplanned, .alias_of = alias_of,
                               .aliasing = aliasing, .step_work = step_work};
    s = plan_memory(rt, &spec, blocks, n_blocks);
  }
  free(unplanned);
  free(step_of);
  free(aliasing);
  free(alias_of);
  free(step_work);
  free(blocks);
  if (s == EG_OK) s = check_budget(rt, opt);
  if (s == EG_OK) {
    rt->data = calloc((size_t)rt->g->n_values + 1, sizeof(void *));
    rt->input_set = calloc((size_t)rt->g->n_inputs + 1, sizeof(bool));
    s = rt->data && rt->input_set ? bind_values(rt)
                                  : eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
  }
  if (s == EG_OK) s = allocate_work(rt);
  if (s == EG_OK && opt->profile)
    s = eg_run_profile_create(rt->g, rt->program, rt->npu, &rt->profile);
  return s;
}

eg_status eg_runtime_create(const eg_model *model, eg_runtime **out) {
  return eg_runtime_create_with_options(model, NULL, out);
}

eg_status eg_runtime_create_with_options(const eg_model *model, const eg_runtime_options *options,
                                         eg_runtime **out) {
  if (!out) return eg_error(EG_ERR_ARGUMENT, "eg_runtime_create: out is NULL");
  *out = NULL;
  if (!model) return eg_error(EG_ERR_ARGUMENT, "eg_runtime_create: model is NULL");
  eg_runtime *rt = calloc(1, sizeof *rt);
  if (!rt) return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
  rt->g = model->graph;
  if (model->compiled) rt->program = &model->compiled->program; /* a .egp runs as compiled */
  eg_status s = setup(rt, options);
  if (s != EG_OK) {
    eg_runtime_destroy(rt);
    return s;
  }
  *out = rt;
  return EG_OK;
}

eg_status eg_runtime_create_program(const eg_graph *g, eg_program *program,
                                    const eg_runtime_options *options, eg_runtime **out) {
  *out = NULL;
  eg_runtime *rt = calloc(1, sizeof *rt);
  if (!rt) {
    eg_program_free(program);
    free(program);
    return eg_error(EG_ERR_NOMEM, "eg_runtime_create_compiled: out of memory");
  }
  rt->g = g;
  rt->program = program;
  rt->owns_program = true;
  eg_status s = setup(rt, options);
  if (s != EG_OK) {
    eg_runtime_destroy(rt);
    return s;
  }
  *out = rt;
  return EG_OK;
}

void eg_runtime_destroy(eg_runtime *rt) {
  if (!rt) return;
  eg_run_profile_destroy(rt->profile);
  if (rt->program) {
    for (int32_t k = 0; rt->npu && k < rt->program->parts.n_partitions; k++)
      eg_npu_step_destroy(rt->npu[k]);
    free(rt->npu);
    if (rt->owns_program) {
      eg_program_free(rt->program);
      free(rt->program);
    }
  }
  eg_plan_free(&rt->plan);
  free(rt->arena);
  free(rt->inputs);
  free(rt->scratch);
  free(rt->step_of_part);
  free(rt->first_block);
  free(rt->n_spans);
  free(rt->span_block);
  free(rt->data);
  free(rt->input_set);
  free(rt->dump_dir);
  free(rt->dump_nhwc);
  free(rt->seed_buf);
  free(rt->fed);
  free(rt);
}

/* The one check of an input value against graph input `name`; *index is its input index. */
static eg_status check_input(const eg_graph *g, const char *name, const eg_tensor *value,
                             int32_t *index) {
  int32_t i = 0;
  while (i < g->n_inputs && strcmp(g->inputs[i].name, name) != 0) i++;
  if (i == g->n_inputs) {
    char names[512] = "";
    size_t used = 0;
    for (int32_t k = 0; k < g->n_inputs && used < sizeof names; k++)
      used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", k ? ", " : "",
                               g->inputs[k].name);
    return eg_error(EG_ERR_ARGUMENT, "input %s: no such input: the model's inputs are %s", name,
                    names);
  }
  const eg_value *v = &g->values[g->inputs[i].value];
  bool same = value->dtype == v->dtype && value->rank == v->rank;
  for (int d = 0; same && d < v->rank; d++) same = value->shape[d] == v->shape[d];
  if (!same) {
    char got[160], want[160];
    return eg_error(EG_ERR_ARGUMENT, "input %s: given %s %s: the model expects %s %s", name,
                    eg_dtype_name(value->dtype),
                    eg_fmt_ints(got, sizeof got, value->shape,
                                value->rank >= 0 && value->rank <= EG_MAX_RANK ? value->rank : 0),
                    eg_dtype_name(v->dtype), eg_fmt_ints(want, sizeof want, v->shape, v->rank));
  }
  if (eg_value_nbytes(v) && !value->data)
    return eg_error(EG_ERR_ARGUMENT, "input %s: data is NULL", name);
  *index = i;
  return EG_OK;
}

eg_status eg_model_check_input(const eg_model *model, const char *name, const eg_tensor *value) {
  if (!model || !name || !value)
    return eg_error(EG_ERR_ARGUMENT, "eg_model_check_input: NULL argument");
  int32_t i;
  return check_input(model->graph, name, value, &i);
}

eg_status eg_runtime_set_input(eg_runtime *rt, const char *name, const eg_tensor *value) {
  if (!rt || !name || !value)
    return eg_error(EG_ERR_ARGUMENT, "eg_runtime_set_input: NULL argument");
  const eg_graph *g = rt->g;
  int32_t i;
  EG_TRY(check_input(g, name, value, &i));
  const eg_value *v = &g->values[g->inputs[i].value];
  size_t bytes = eg_value_nbytes(v);
  if (bytes) memcpy(rt->data[v - g->values], value->data, bytes);
  rt->input_set[i] = true;
  return EG_OK;
}

/* NPU partition k's step; when dumping, its inputs written before and its outputs after. */
static eg_status run_npu_step(const eg_runtime *rt, int32_t k, int64_t *convert_ns) {
  const eg_lowered *hp = &rt->program->lowered[k];
  if (rt->dump_dir)
    EG_TRY(eg_npu_dump_write(rt->dump_dir, k, rt->g, hp, false, rt->data, rt->dump_nhwc));
  EG_TRY(eg_npu_step_run(rt->npu[k], convert_ns));
  if (rt->dump_dir)
    EG_TRY(eg_npu_dump_write(rt->dump_dir, k, rt->g, hp, true, rt->data, rt->dump_nhwc));
  return EG_OK;
}

/* Loss scaling: the backward's seed takes the bound scale in every element, as the value its
 * readers hold (eg_runtime_loss_seed_value): CPU and NPU readers see the same. */
static void fill_seed(const eg_runtime *rt) {
  float *seed = rt->data[rt->seed_value];
  const float s = eg_runtime_loss_seed_value(rt, *rt->seed_scale);
  const int64_t n = eg_value_numel(&rt->g->values[rt->seed_value]);
  for (int64_t k = 0; k < n; k++) seed[k] = s;
}

static eg_status run_steps(const eg_runtime *rt) {
  const eg_graph *g = rt->g;
  eg_exec ex = {.g = g, .data = rt->data, .scratch = rt->scratch};
  eg_run_profile *prof = rt->profile;
  const int64_t t0 = prof ? eg_now_ns() : 0;
  int64_t at = t0;
  const int32_t n = rt->program ? rt->program->n_steps : g->n_nodes;
  if (rt->seed_scale && rt->seed_node < 0) fill_seed(rt);
  for (int32_t k = 0; k < n; k++) {
    const eg_program_step *st = rt->program ? &rt->program->steps[k] : NULL;
    int64_t convert = 0;
    if (st && st->partition >= 0) {
      EG_TRY(run_npu_step(rt, st->partition, prof ? &convert : NULL));
    } else {
      const int32_t node = st ? st->node : k;
      EG_TRY(eg_op_run[g->nodes[node].op](&ex, &g->nodes[node]));
      if (rt->seed_scale && node == rt->seed_node) fill_seed(rt); /* before any reader runs */
    }
    if (prof) { /* one clock read per step: a step ends where the next begins */
      const int64_t end = eg_now_ns();
      prof->e[k].start_ns = at - t0;
      prof->e[k].ns = end - at;
      prof->e[k].convert_ns = convert;
      at = end;
    }
  }
  if (prof) {
    prof->t0 = t0;
    prof->total_ns = at - t0;
    prof->ran = true;
  }
  return EG_OK;
}

eg_status eg_runtime_run(eg_runtime *rt) {
  if (!rt) return eg_error(EG_ERR_ARGUMENT, "eg_runtime_run: runtime is NULL");
  const eg_graph *g = rt->g;
  for (int32_t i = 0; i < g->n_inputs; i++)
    if (!rt->input_set[i])
      return eg_error(EG_ERR_ARGUMENT, "input %s: not set: every input needs a value before "
                      "running", g->inputs[i].name);
  rt->ran = false;
  if (rt->profile) rt->profile->ran = false;
  /* the thread count of eg_runtime_options, for this run only: the caller's is restored */
  const int caller_threads = omp_get_max_threads();
  if (rt->num_threads > 0) omp_set_num_threads(rt->num_threads);
  eg_status st = run_steps(rt);
  if (rt->num_threads > 0) omp_set_num_threads(caller_threads);
  rt->ran = st == EG_OK;
  return st;
}

eg_status eg_runtime_output(const eg_runtime *rt, int index, eg_tensor *out) {
  if (!rt || !out) return eg_error(EG_ERR_ARGUMENT, "eg_runtime_output: NULL argument");
  const eg_graph *g = rt->g;
  if (index < 0 || index >= g->n_outputs)
    return eg_error(EG_ERR_ARGUMENT, "eg_runtime_output: index %d out of range [0, %d)", index,
                    g->n_outputs);
  if (!rt->ran)
    return eg_error(EG_ERR_STATE, "eg_runtime_output: no successful run yet: outputs exist after "
                    "eg_runtime_run returns EG_OK");
  int32_t id = g->outputs[index].value;
  const eg_value *v = &g->values[id];
  memset(out, 0, sizeof *out);
  out->dtype = v->dtype;
  out->rank = v->rank;
  memcpy(out->shape, v->shape, sizeof v->shape);
  out->data = rt->data[id];
  return EG_OK;
}

/* ---- training (the roles the exporter records, see edgegrad.h) ---- */

eg_io_role eg_graph_io_role(const eg_graph *g, bool is_input, int32_t index, int32_t *pair) {
  const eg_named *e = is_input ? &g->inputs[index] : &g->outputs[index];
  *pair = e->pair;
  return e->role;
}

void eg_model_training_io(const eg_model *model, int *num_params, int *num_buffers) {
  int p = 0, b = 0;
  const eg_graph *g = model ? model->graph : NULL;
  for (int32_t i = 0; g && i < g->n_inputs; i++) {
    const eg_named *e = &g->inputs[i];
    p += e->role == EG_ROLE_PARAMETER && e->pair >= 0;
    b += e->role == EG_ROLE_BUFFER && e->pair >= 0;
  }
  if (num_params) *num_params = p;
  if (num_buffers) *num_buffers = b;
}

/* A seed that is a constant gets a buffer of the runtime's own (the graph's bytes are shared by
 * every runtime of the model): the copy made at creation when NPU partitions take it as an
 * input (their steps bound it then: copy_fed_statics), else a buffer it is rebound to now, which
 * reaches its CPU readers (eg_graph_loss_seed refuses NPU readers that hold it otherwise). */
eg_status eg_runtime_bind_loss_seed(eg_runtime *rt, const double *scale) {
  const eg_graph *g = rt->g;
  if (!scale) {
    const eg_static *st = rt->seed_scale && rt->seed_node < 0
                              ? &g->statics[g->values[rt->seed_value].def] : NULL;
    if (st && rt->seed_fed && st->nbytes) memcpy(rt->data[rt->seed_value], st->data, st->nbytes);
    else if (st) rt->data[rt->seed_value] = (void *)st->data;
    rt->seed_scale = NULL;
    return EG_OK;
  }
  if (rt->seed_scale)
    return eg_error(EG_ERR_STATE, "eg_optimizer_create: loss scaling: the runtime's loss seed "
                    "is already scaled by another optimizer: one optimizer with loss scaling per "
                    "runtime");
  int32_t v;
  EG_TRY(eg_graph_loss_seed(g, rt->program, &v));
  const eg_value *x = &g->values[v];
  rt->seed_node = x->role == EG_ROLE_NODE ? x->def : -1;
  rt->seed_fed = rt->program && eg_program_npu_input(rt->program, -1, v);
  rt->seed_fp16 = rt->seed_fed && eg_runtime_npu_fp16(rt);
  if (rt->seed_node < 0 && !rt->seed_fed) {
    float *buf = aligned_alloc64(eg_value_nbytes(x));
    if (!buf) return eg_error(EG_ERR_NOMEM, "eg_optimizer_create: out of memory");
    free(rt->seed_buf);
    rt->seed_buf = buf;
    rt->data[v] = buf;
  }
  rt->seed_value = v;
  rt->seed_scale = scale;
  return EG_OK;
}

float eg_runtime_loss_seed_value(const eg_runtime *rt, double scale) {
  float s = (float)scale;
  if (rt->seed_fp16) eg_fp16_store_f32(&s, 1);
  return s;
}

bool eg_runtime_npu_fp16(const eg_runtime *rt) {
  return rt->program && rt->program->parts.n_partitions > 0 && rt->precision == EG_PRECISION_FP16;
}

const eg_graph *eg_runtime_graph(const eg_runtime *rt) { return rt->g; }

eg_status eg_runtime_input(const eg_runtime *rt, int index, eg_tensor *out) {
  if (!rt || !out) return eg_error(EG_ERR_ARGUMENT, "eg_runtime_input: NULL argument");
  const eg_graph *g = rt->g;
  if (index < 0 || index >= g->n_inputs)
    return eg_error(EG_ERR_ARGUMENT, "eg_runtime_input: index %d out of range [0, %d)", index,
                    g->n_inputs);
  if (!rt->input_set[index])
    return eg_error(EG_ERR_ARGUMENT, "input %s: not set", g->inputs[index].name);
  const eg_value *v = &g->values[g->inputs[index].value];
  memset(out, 0, sizeof *out);
  out->dtype = v->dtype;
  out->rank = v->rank;
  memcpy(out->shape, v->shape, sizeof v->shape);
  out->data = rt->data[g->inputs[index].value];
  return EG_OK;
}

int eg_runtime_profile_count(const eg_runtime *rt) {
  return rt && rt->profile && rt->profile->ran ? rt->profile->n : 0;
}

eg_status(eg_runtime_profile_entry)(const eg_runtime *rt, int index, eg_profile_entry *out,
                                    size_t out_size) {
  if (!rt || !out) return eg_error(EG_ERR_ARGUMENT, "eg_runtime_profile_entry: NULL argument");
  const int n = eg_runtime_profile_count(rt);
  if (index < 0 || index >= n)
    return eg_error(EG_ERR_ARGUMENT, "eg_runtime_profile_entry: index (%d) out of range [0, %d)%s",
                    index, n, rt->profile ? "" : ": the runtime was made without options.profile");
  return EG_STRUCT_WRITE(eg_profile_entry, out, out_size, &rt->profile->e[index],
                         "eg_runtime_profile_entry");
}

int64_t eg_runtime_profile_total_ns(const eg_runtime *rt) {
  return eg_runtime_profile_count(rt) ? rt->profile->total_ns : 0;
}

eg_status eg_runtime_profile_write_trace(const eg_runtime *rt, const char *path) {
  if (!rt || !path)
    return eg_error(EG_ERR_ARGUMENT, "eg_runtime_profile_write_trace: NULL argument");
  if (!eg_runtime_profile_count(rt))
    return eg_error(EG_ERR_ARGUMENT, "profile trace %s: no profiled run: make the runtime with "
                    "options.profile and run it first", path);
  return eg_run_profile_write_trace(rt->profile, path);
}
