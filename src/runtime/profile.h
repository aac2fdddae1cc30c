/* profile.h — the runtime's per-step profile (eg_runtime_profile_* of the public API).
 * Internal to the engine (runtime/engine.c). */
#ifndef EG_RUNTIME_PROFILE_H
#define EG_RUNTIME_PROFILE_H

#include "edgegrad.h"
#include "ir/graph.h"
#include "program/program.h"
#include "runtime/npu_step.h"

typedef struct eg_run_profile {
  int32_t n;           /* steps of a run */
  eg_profile_entry *e; /* per step; name, op, target, n_nodes, flops, bytes set at creation */
  char *names;         /* "partition K" strings of the NPU steps */
  const eg_program *program; /* NULL: the CPU path */
  int64_t **op_times;  /* per step: an NPU step's per-op start and duration (npu_step.h) */
  int64_t t0;          /* the last profiled run's start, on the monotonic clock */
  int64_t total_ns;    /* of the last profiled run */
  bool ran;            /* a profiled run completed */
} eg_run_profile;

/* The steps of program `p` (NULL: every node of `g`, in index order), costs worked out; the
 * NPU steps `npu` (per partition) then time each of their ops for the trace. */
eg_status eg_run_profile_create(const eg_graph *g, const eg_program *p, eg_npu_step **npu,
                                eg_run_profile **out);
void eg_run_profile_destroy(eg_run_profile *prof);
eg_status eg_run_profile_write_trace(const eg_run_profile *prof, const char *path);

#endif
