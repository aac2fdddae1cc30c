/* memory.c — a runtime's memory plan (memory.h). */
#include "runtime/memory.h"

#include <stdlib.h>
#include <string.h>

#include "ir/readers.h"
#include "ops/op.h"
#include "util/error.h"

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
static eg_status copy_aliases(const eg_graph *g, const eg_program *p, const eg_fusion *fz,
                              int32_t **out) {
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
    /* a batch norm that clamps writes its activation's values into its own output's buffer:
     * the activation's result is that buffer (fuse.h) */
    if (fz && fz[i].role == EG_FUSE_BN_CLAMP)
      alias[g->nodes[fz[i].with].output] = g->values[n->output].elems[0];
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
static void npu_output_aliases(const eg_graph *g, const eg_program *p, eg_npu_step *const *steps,
                               int32_t *alias) {
  for (int32_t k = 0; p && k < p->parts.n_partitions; k++)
    for (int32_t j = 0; j < p->lowered[k].n_outputs; j++) {
      int32_t r = eg_npu_step_output_repeats(steps[k], j);
      for (int32_t hops = 0; r >= 0 && alias[r] >= 0 && hops < g->n_values; hops++)
        r = alias[r];
      const int32_t v = p->lowered[k].outputs[j].value;
      if (r >= 0 && r != v && alias[v] < 0) alias[v] = r;
    }
}

/* What the fused chains change (fuse.h): a node folded into another reads nothing at its own
 * place (*folded, malloc'ed); a mask folded into a batch-norm backward, a residual's add
 * folded into a batch norm, and the sub and mul folded into a sum of squared deviations, write
 * no result (*unplanned, made when NULL), and the node they are
 * folded into reads their operands, which stay live until it runs (*reads, malloc'ed,
 * *n_reads of them). */
static eg_status fused_reads(const eg_graph *g, const eg_fusion *fz, bool **unplanned,
                             bool **folded, eg_plan_read **reads, int32_t *n_reads) {
  *reads = NULL;
  *folded = NULL;
  *n_reads = 0;
  if (!fz) return EG_OK;
  if (!*unplanned && !(*unplanned = calloc((size_t)g->n_values + 1, sizeof(bool))))
    return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
  *reads = malloc(((size_t)g->n_nodes * 2 + 1) * sizeof **reads);
  *folded = malloc(((size_t)g->n_nodes + 1) * sizeof(bool));
  if (!*reads || !*folded) return eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
  for (int32_t k = 0; k < g->n_nodes; k++) {
    (*folded)[k] = fz[k].role == EG_FUSE_FOLDED;
    if (fz[k].role == EG_FUSE_BN_CLAMP && fz[k].add_node >= 0) {
      (*unplanned)[g->nodes[fz[k].add_node].output] = true;
      (*reads)[(*n_reads)++] = (eg_plan_read){fz[k].add, k};
    }
    if (fz[k].role == EG_FUSE_SUM_SQ_DEV) {
      (*unplanned)[g->nodes[fz[k].dev.sub].output] = true;
      (*unplanned)[g->nodes[fz[k].with].output] = true;
      (*reads)[(*n_reads)++] = (eg_plan_read){fz[k].dev.x, k};
      (*reads)[(*n_reads)++] = (eg_plan_read){fz[k].dev.m, k};
    }
    if (fz[k].role != EG_FUSE_BN_BWD_MASK) continue;
    (*unplanned)[g->nodes[fz[k].with].output] = true;
    (*reads)[(*n_reads)++] = (eg_plan_read){fz[k].mask.gy, k};
    (*reads)[(*n_reads)++] = (eg_plan_read){fz[k].mask.x, k};
  }
  return EG_OK;
}

/* The largest scratch of the nodes the CPU runs. */
static size_t cpu_scratch(const eg_graph *g, const eg_program *p) {
  size_t most = 0;
  for (int32_t k = 0; k < (p ? p->n_steps : g->n_nodes); k++) {
    const int32_t node = p ? p->steps[k].node : k;
    if (p && p->steps[k].partition >= 0) continue;
    if (g->nodes[node].scratch_bytes > most) most = g->nodes[node].scratch_bytes;
  }
  return most;
}

/* Per program step, the working block of each NPU step (all_steps false: of each step without
 * spans only); malloc'ed. */
static size_t *step_blocks(const eg_graph *g, const eg_program *p, eg_npu_step *const *steps,
                           bool all_steps) {
  size_t *work = calloc((size_t)g->n_nodes + 1, sizeof(size_t));
  const eg_plan_block *spans;
  for (int32_t k = 0; work && p && k < p->parts.n_partitions; k++)
    if (all_steps || eg_npu_step_spans(steps[k], &spans) < 0)
      work[eg_npu_step_program_step(steps[k])] = eg_npu_step_block_bytes(steps[k]);
  return work;
}

/* Each step told where the plan put its memory: its spans (span_block: per span of all the
 * steps' spans in partition order, its block in `plan`; -1 none), or else its block. */
static eg_status place_steps(const eg_program *p, eg_npu_step *const *steps, const eg_plan *plan,
                             const int32_t *span_block) {
  size_t *at = NULL;
  eg_status s = EG_OK;
  for (int32_t k = 0, first = 0; s == EG_OK && p && k < p->parts.n_partitions; k++) {
    const eg_plan_block *spans;
    const int32_t n = eg_npu_step_spans(steps[k], &spans);
    if (!span_block || n < 0) {
      eg_npu_step_place_block(steps[k], plan->work_offset[eg_npu_step_program_step(steps[k])]);
      continue;
    }
    size_t *grown = realloc(at, ((size_t)n + 1) * sizeof *at);
    if (!grown) {
      s = eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
      break;
    }
    at = grown;
    for (int32_t i = 0; i < n; i++) {
      const int32_t b = span_block[first + i];
      at[i] = b < 0 ? EG_PLAN_NONE : plan->block_offset[b];
    }
    first += n;
    s = eg_npu_step_place_spans(steps[k], at);
  }
  free(at);
  return s;
}

/* The plan (m) of the smallest total, of three layouts of the NPU steps' memory: each step's
 * working block (spec: step_work of every step); the spans of each step's tensors and staging
 * among the values, its ops' scratch in the shared scratch; and those with the ops' scratch as
 * spans too (the shared scratch then only the CPU nodes'). The spans pay where a partition's
 * peak meets few live values (MobileNetV2 full training: 70 -> 57 MB of arena), the blocks on
 * small graphs where first fit does worse. *span_block (malloc'ed) gets each span's block in
 * the plan when spans won, else stays NULL. */
static eg_status plan_layouts(const eg_graph *g, const eg_program *p, eg_npu_step *const *steps,
                              const eg_plan_spec *blocks_spec, eg_memory *m,
                              int32_t **span_block) {
  *span_block = NULL;
  /* the scratch all steps need in the shared scratch, and the steps without spans alone;
   * every step's spans, in partition order */
  size_t all = cpu_scratch(g, p), left = all;
  const int32_t n_parts = p ? p->parts.n_partitions : 0;
  int32_t n_spans = 0;
  for (int32_t k = 0; k < n_parts; k++) {
    const size_t scratch = eg_npu_step_scratch_bytes(steps[k]);
    const eg_plan_block *spans;
    const int32_t n = eg_npu_step_spans(steps[k], &spans);
    if (scratch > all) all = scratch;
    if (n < 0 && scratch > left) left = scratch;
    if (n > 0) n_spans += n;
  }
  EG_TRY(eg_plan_memory(g, blocks_spec, &m->plan));
  m->scratch_bytes = all;
  if (n_spans <= 0) return EG_OK;
  size_t *work_left = step_blocks(g, p, steps, false);
  eg_plan_block *kept = malloc((size_t)n_spans * sizeof *kept);
  int32_t *block = malloc((size_t)n_spans * sizeof(int32_t));
  int32_t *best = malloc((size_t)n_spans * sizeof(int32_t));
  eg_status s = work_left && kept && block && best
                    ? EG_OK : eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
  bool spans_won = false;
  for (int with_scratch = 0; s == EG_OK && with_scratch < 2; with_scratch++) {
    int32_t n = 0, at = 0;
    for (int32_t k = 0; k < n_parts; k++) {
      const eg_plan_block *spans;
      const int32_t ns = eg_npu_step_spans(steps[k], &spans);
      for (int32_t i = 0; i < ns; i++, at++) {
        const bool drop = !with_scratch && eg_npu_step_span_is_scratch(steps[k], i);
        block[at] = drop ? -1 : n;
        if (!drop) kept[n++] = spans[i];
      }
    }
    eg_plan_spec spec = *blocks_spec;
    spec.step_work = work_left;
    spec.blocks = kept;
    spec.n_blocks = n;
    eg_plan alt = {0};
    s = eg_plan_memory(g, &spec, &alt);
    const size_t scratch = with_scratch ? left : all;
    if (s == EG_OK && alt.arena_bytes + scratch < m->plan.arena_bytes + m->scratch_bytes) {
      eg_plan_free(&m->plan);
      m->plan = alt;
      m->scratch_bytes = scratch;
      spans_won = true;
      memcpy(best, block, (size_t)n_spans * sizeof(int32_t));
    } else {
      eg_plan_free(&alt);
    }
  }
  free(work_left);
  free(kept);
  free(block);
  if (s == EG_OK && spans_won) *span_block = best;
  else free(best);
  return s;
}

eg_status eg_memory_plan(const eg_graph *g, const eg_program *p, eg_npu_step *const *steps,
                         const eg_fusion *fz, eg_memory *out) {
  *out = (eg_memory){0};
  bool *unplanned = NULL, *aliasing = NULL, *folded = NULL;
  int32_t *step_of = NULL, *alias_of = NULL, *span_block = NULL, n_reads = 0;
  size_t *step_work = NULL;
  eg_plan_read *reads = NULL;
  eg_status s = inside_only(g, p, &unplanned);
  if (s == EG_OK) s = fused_reads(g, fz, &unplanned, &folded, &reads, &n_reads);
  if (s == EG_OK) s = steps_of_nodes(g, p, &step_of);
  if (s == EG_OK) s = aliasing_nodes(g, p, &aliasing);
  if (s == EG_OK) s = copy_aliases(g, p, fz, &alias_of);
  if (s == EG_OK && p && !(step_work = step_blocks(g, p, steps, true)))
    s = eg_error(EG_ERR_NOMEM, "eg_runtime_create: out of memory");
  if (s == EG_OK) npu_output_aliases(g, p, steps, alias_of);
  if (s == EG_OK) {
    const eg_plan_spec spec = {.order = p ? p->order : NULL, .step_of = step_of,
                               .unplanned = unplanned, .alias_of = alias_of,
                               .aliasing = aliasing, .step_work = step_work,
                               .reads = reads, .n_reads = n_reads, .folded = folded};
    s = plan_layouts(g, p, steps, &spec, out, &span_block);
  }
  if (s == EG_OK) s = place_steps(p, steps, &out->plan, span_block);
  free(unplanned);
  free(step_of);
  free(aliasing);
  free(alias_of);
  free(step_work);
  free(span_block);
  free(reads);
  free(folded);
  return s;
}

void eg_memory_free(eg_memory *m) { eg_plan_free(&m->plan); }
