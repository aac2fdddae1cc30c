/* engine.c — the runtime engine (engine.h): executes a verified graph on the portable CPU
 * kernels, or a compiled program (program/program.h; compiled in memory, or loaded with the
 * model from a .egp file): its steps in order, CPU nodes through eg_op_run and NPU partitions
 * through their steps (runtime/npu_step.h), one per partition, each holding its partition's
 * state.
 *
 * Memory is planned (runtime/memory.h) and allocated once at creation: one activation arena,
 * one buffer per graph input, and the kernel scratch (one block of the largest need: nodes run
 * one at a time). The NPU steps are created before the plan, which asks each its need and
 * tells each where its memory went. Running allocates nothing. Each value's data pointer is
 * fixed at creation. What CPU nodes derive from a static of the graph alone (a convolution's
 * flipped weights and Winograd filter transform: eg_op_prepare) is derived once, at creation,
 * into a block of the runtime's own, and handed to each run of the node while the node reads
 * the static's own bytes (which nothing writes; the loss seed may be rebound to a buffer of the
 * runtime's, which the node then derives from itself). eg_runtime_options.max_memory_bytes is
 * checked against the plan (arena incl. the NPU steps' memory, kernel scratch, inputs, prepared
 * data) before any of them is allocated. Chains of CPU nodes that run as one kernel (a batch
 * norm and the activation after it, an activation's backward and the batch-norm backward
 * after it: runtime/fuse.h) are found at creation, before the plan, which drops or shares the
 * buffers they no longer write. */
#include "runtime/engine.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "ops/op.h"
#include "runtime/fuse.h"
#include "runtime/loss_seed.h"
#include "runtime/memory.h"
#include "runtime/npu_dump.h"
#include "runtime/npu_step.h"
#include "target/targets.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/fp16.h"

/* A CPU node's data derived once from a static (eg_op_prepare): where in the runtime's block,
 * and the static's value id. */
typedef struct eg_prepared {
  size_t at;
  int32_t from; /* -1: none */
} eg_prepared;

struct eg_runtime {
  const eg_graph *g;
  eg_program *program;     /* compiled; NULL runs every node on the CPU */
  bool owns_program;       /* compiled in memory (else the model's loaded .egp owns it) */
  eg_npu_step **npu;       /* per partition: its step */
  eg_memory mem;           /* the plan: values' offsets, arena and scratch bytes */
  unsigned char *arena;    /* activations */
  unsigned char *inputs;   /* all graph inputs, each 64-byte aligned */
  void *scratch;           /* kernel scratch: the CPU nodes' and the NPU steps' executors' */
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
  eg_prepared *prep;       /* per node id: its prepared data (eg_op_prepare), if any */
  size_t prep_bytes;       /* the prepared block's size (its nodes' data, each 64-aligned) */
  unsigned char *prepared; /* that block */
  eg_fusion *fused;        /* per node: its part in a fused chain (runtime/fuse.h); NULL: off */
  int32_t n_fused;         /* the chains */
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
  size_t arena = align64(rt->mem.plan.arena_bytes), scratch = align64(rt->mem.scratch_bytes);
  size_t in = input_bytes(rt->g), total = arena;
  bool over = arena < rt->mem.plan.arena_bytes || scratch < rt->mem.scratch_bytes; /* wrapped */
  over = over || __builtin_add_overflow(total, scratch, &total);
  over = over || __builtin_add_overflow(total, in, &total);
  over = over || __builtin_add_overflow(total, rt->prep_bytes, &total);
  if (!over && total <= opt->max_memory_bytes) return EG_OK;
  return eg_error(EG_ERR_LIMIT, "eg_runtime_create: memory needed (%s%zu bytes: activation arena "
                  "%zu, kernel scratch %zu, inputs %zu, prepared weights %zu) exceeds "
                  "max_memory_bytes (%zu bytes): the runtime reserves all of it at creation; raise "
                  "the limit or use a smaller batch", over ? "over " : "", total,
                  rt->mem.plan.arena_bytes, rt->mem.scratch_bytes, in, rt->prep_bytes,
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
  rt->arena = aligned_alloc64(rt->mem.plan.arena_bytes);
  if (!rt->inputs || !rt->arena)
    return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory (%zu activation bytes)",
                    rt->mem.plan.arena_bytes);
  size_t off = 0;
  for (int32_t i = 0; i < g->n_inputs; i++) {
    rt->data[g->inputs[i].value] = rt->inputs + off;
    off += align64(eg_value_nbytes(&g->values[g->inputs[i].value]));
  }
  for (int32_t i = 0; i < g->n_statics; i++)
    rt->data[g->statics[i].value] = (void *)g->statics[i].data;
  EG_TRY(copy_fed_statics(rt));
  for (int32_t v = 0; v < g->n_values; v++)
    if (rt->mem.plan.offset[v] != EG_PLAN_NONE) rt->data[v] = rt->arena + rt->mem.plan.offset[v];
  return EG_OK;
}

/* *held (per value id, malloc'ed): the values the program holds NHWC in the runtime's buffers
 * between its NPU steps, as its partitions' boundaries record them (eg_boundary.held, decided
 * at compile time). */
static eg_status held_values(const eg_runtime *rt, bool **held) {
  const eg_program *p = rt->program;
  *held = calloc((size_t)rt->g->n_values + 1, sizeof(bool));
  if (!*held) return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
  for (int32_t k = 0; k < p->parts.n_partitions; k++) {
    const eg_lowered *lp = &p->lowered[k];
    for (int32_t i = 0; i < lp->n_inputs + lp->n_outputs; i++) {
      const eg_boundary *b = i < lp->n_inputs ? &lp->inputs[i] : &lp->outputs[i - lp->n_inputs];
      if (b->held) (*held)[b->value] = true;
    }
  }
  return EG_OK;
}

/* The NPU steps, one per partition, before the plan (runtime/memory.h asks each its need). */
static eg_status create_npu_steps(eg_runtime *rt) {
  const eg_program *p = rt->program;
  int32_t *step_of_part = calloc((size_t)p->parts.n_partitions + 1, sizeof(int32_t));
  rt->npu = calloc((size_t)p->parts.n_partitions + 1, sizeof(eg_npu_step *));
  if (!step_of_part || !rt->npu) {
    free(step_of_part);
    return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
  }
  for (int32_t k = 0; k < p->n_steps; k++)
    if (p->steps[k].partition >= 0) step_of_part[p->steps[k].partition] = k;
  /* a value only NPU steps touch stays NHWC in its buffer between them: no conversions */
  bool *held_nhwc = NULL;
  eg_status s = held_values(rt, &held_nhwc);
  for (int32_t k = 0; s == EG_OK && k < p->parts.n_partitions; k++)
    s = eg_npu_step_create(rt->g, &p->lowered[k], &p->parts.partitions[k], step_of_part[k],
                           held_nhwc, rt->precision, &rt->npu[k]);
  free(step_of_part);
  if (rt->dump_dir) rt->dump_nhwc = held_nhwc; /* the dump permutes those back to NCHW */
  else free(held_nhwc);
  return s;
}

/* Whether value v is a static whose bytes the runtime reads from the graph (never written: not
 * a copy fed to NPU partitions, not the loss seed rebound to a buffer of the runtime's). */
static bool frozen(const eg_runtime *rt, int32_t v) {
  const eg_value *x = &rt->g->values[v];
  return x->role == EG_ROLE_STATIC && rt->data[v] == rt->g->statics[x->def].data;
}

/* Where each CPU node's data prepared from a static goes (rt->prep, rt->prep_bytes); a static
 * NPU partitions take as an input is fed a copy (copy_fed_statics) and is not prepared. */
static eg_status lay_out_prepared(eg_runtime *rt) {
  const eg_graph *g = rt->g;
  rt->prep = malloc(((size_t)g->n_nodes + 1) * sizeof *rt->prep);
  if (!rt->prep) return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
  for (int32_t k = 0; k < g->n_nodes; k++) rt->prep[k].from = -1;
  const int32_t n = rt->program ? rt->program->n_steps : g->n_nodes;
  for (int32_t k = 0; k < n; k++) {
    const eg_program_step *st = rt->program ? &rt->program->steps[k] : NULL;
    if (st && st->partition >= 0) continue;
    const int32_t node = st ? st->node : k;
    int32_t from;
    const size_t bytes = eg_op_prepared_bytes(&g->nodes[node], &from);
    if (!bytes || from < 0 || g->values[from].role != EG_ROLE_STATIC ||
        (rt->program && eg_program_npu_input(rt->program, -1, from)))
      continue;
    rt->prep[node] = (eg_prepared){.at = rt->prep_bytes, .from = from};
    rt->prep_bytes += align64(bytes);
  }
  return EG_OK;
}

/* The prepared data, derived from the statics' bytes (bound: bind_values). */
static eg_status prepare(eg_runtime *rt) {
  if (!rt->prep_bytes) return EG_OK;
  if (!(rt->prepared = aligned_alloc64(rt->prep_bytes)))
    return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory (%zu bytes of prepared "
                    "weights)", rt->prep_bytes);
  for (int32_t k = 0; k < rt->g->n_nodes; k++)
    if (rt->prep[k].from >= 0)
      eg_op_prepare(&rt->g->nodes[k], rt->data[rt->prep[k].from], rt->prepared + rt->prep[k].at);
  return EG_OK;
}

/* What node k runs with: its prepared data while it reads the static's own bytes, else NULL. */
static const void *prepared_of(const eg_runtime *rt, int32_t k) {
  const int32_t v = rt->prep[k].from;
  return v >= 0 && frozen(rt, v) ? rt->prepared + rt->prep[k].at : NULL;
}

/* The kernel scratch, and each NPU step bound to the buffers and its memory. */
static eg_status allocate_work(eg_runtime *rt) {
  rt->scratch = aligned_alloc64(rt->mem.scratch_bytes);
  if (!rt->scratch)
    return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory (%zu bytes of kernel "
                    "scratch)", rt->mem.scratch_bytes);
  for (int32_t k = 0; rt->program && k < rt->program->parts.n_partitions; k++)
    EG_TRY(eg_npu_step_bind(rt->npu[k], rt->g, rt->data, rt->arena, rt->scratch));
  return EG_OK;
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

/* Plans, checks the plan against the options' limits, allocates and binds; rt->g (and
 * rt->program, if compiled) are set. */
static eg_status setup(eg_runtime *rt, const eg_runtime_options *opt, bool fuse) {
  rt->num_threads = opt->num_threads;
  rt->precision = opt->precision ? opt->precision
                  : rt->program        ? rt->program->precision
                                       : EG_PRECISION_FP32;
  if (opt->dump_partitions_dir) EG_TRY(keep_dump_dir(rt, opt->dump_partitions_dir));
  if (rt->program) EG_TRY(create_npu_steps(rt));
  if (fuse) EG_TRY(eg_fusions_find(rt->g, rt->program, &rt->fused, &rt->n_fused));
  EG_TRY(eg_memory_plan(rt->g, rt->program, rt->npu, rt->fused, &rt->mem));
  EG_TRY(lay_out_prepared(rt));
  EG_TRY(check_budget(rt, opt));
  rt->data = calloc((size_t)rt->g->n_values + 1, sizeof(void *));
  rt->input_set = calloc((size_t)rt->g->n_inputs + 1, sizeof(bool));
  if (!rt->data || !rt->input_set)
    return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
  EG_TRY(bind_values(rt));
  EG_TRY(prepare(rt));
  EG_TRY(allocate_work(rt));
  if (opt->profile) EG_TRY(eg_run_profile_create(rt->g, rt->program, rt->npu, &rt->profile));
  return EG_OK;
}

eg_status eg_engine_create(const eg_graph *g, eg_program *program, bool owns_program,
                           const eg_runtime_options *opt, eg_runtime **out) {
  return eg_engine_create_fused(g, program, owns_program, opt, true, out);
}

eg_status eg_engine_create_fused(const eg_graph *g, eg_program *program, bool owns_program,
                                 const eg_runtime_options *opt, bool fuse, eg_runtime **out) {
  *out = NULL;
  eg_runtime *rt = calloc(1, sizeof *rt);
  if (!rt) {
    if (owns_program) {
      eg_program_free(program);
      free(program);
    }
    return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
  }
  rt->g = g;
  rt->program = program;
  rt->owns_program = owns_program;
  eg_status s = setup(rt, opt, fuse);
  if (s != EG_OK) {
    eg_engine_destroy(rt);
    return s;
  }
  *out = rt;
  return EG_OK;
}

void eg_engine_destroy(eg_runtime *rt) {
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
  eg_memory_free(&rt->mem);
  free(rt->arena);
  free(rt->inputs);
  free(rt->scratch);
  free(rt->data);
  free(rt->input_set);
  free(rt->dump_dir);
  free(rt->dump_nhwc);
  free(rt->seed_buf);
  free(rt->fed);
  free(rt->prep);
  free(rt->prepared);
  free(rt->fused);
  free(rt);
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

/* CPU node k, or the fused chain it heads; a node folded into another's kernel does nothing. */
static eg_status run_cpu_node(const eg_runtime *rt, const eg_exec *ex, int32_t k) {
  const eg_node *n = &rt->g->nodes[k];
  const eg_fusion *f = rt->fused ? &rt->fused[k] : NULL;
  switch (f ? f->role : EG_FUSE_NONE) {
  case EG_FUSE_FOLDED: return EG_OK;
  case EG_FUSE_BN_CLAMP: return eg_run_batch_norm_clamped(ex, n, f->add, f->clamp);
  case EG_FUSE_BN_BWD_MASK: return eg_run_batch_norm_backward_masked(ex, n, f->mask);
  case EG_FUSE_SUM_SQ_DEV: return eg_run_sum_sq_dev(ex, n, f->dev.x, f->dev.m, f->dev.alpha);
  default: return eg_op_run[n->op](ex, n);
  }
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
      ex.prepared = prepared_of(rt, node);
      EG_TRY(run_cpu_node(rt, &ex, node));
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

eg_status eg_engine_run(eg_runtime *rt) {
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

bool eg_engine_ran(const eg_runtime *rt) { return rt->ran; }

const eg_graph *eg_runtime_graph(const eg_runtime *rt) { return rt->g; }

void *eg_engine_value(const eg_runtime *rt, int32_t v) { return rt->data[v]; }

bool eg_engine_input_is_set(const eg_runtime *rt, int32_t i) { return rt->input_set[i]; }

void eg_engine_input_given(eg_runtime *rt, int32_t i) { rt->input_set[i] = true; }

const eg_run_profile *eg_engine_profile(const eg_runtime *rt) { return rt->profile; }

size_t eg_engine_prepared_bytes(const eg_runtime *rt) { return rt->prep_bytes; }

int32_t eg_engine_fused_chains(const eg_runtime *rt) { return rt->n_fused; }

/* ---- loss scaling ---- */

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

