/* test_profile.c — eg_runtime_options.profile and eg_runtime_profile_*, on tiny_step:
 *   - without the option, or before a run, there is no profile (count 0, the trace refused);
 *   - on the CPU path one entry per node, in run order, back to back, summing to the total,
 *     which matches the wall time around eg_runtime_run within 10%;
 *   - a convolution's FLOPs are 2 * outputs * Cin/groups * kH * kW, worked out here from the
 *     graph's shapes, and an addmm's 2 * M * N * K + M * N;
 *   - compiled for SM8650, NPU partitions are entries of their own (several nodes, conversion
 *     time within their time);
 *   - the trace is one complete event per entry and, nested in an NPU step's, one per QNN op
 *     it ran, written atomically: an unwritable path is EG_ERR_IO and leaves nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "edgegrad.h"
#include "eg_test.h"
#include "compiler/frontend/frontend.h"

#define TINY EG_TEST_DATA "/tiny_step.json"

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int set_inputs(const eg_model *m, eg_runtime *rt) {
  return eg_test_set_tiny_inputs(m, rt) == EG_OK;
}

static eg_runtime *profiled(const eg_model *m, const char *soc) {
  eg_runtime_options opt = EG_RUNTIME_OPTIONS(.profile = true);
  eg_compile_options copt = EG_COMPILE_OPTIONS(.soc = soc);
  eg_runtime *rt = NULL;
  eg_status s = soc ? eg_runtime_create_compiled_with_options(m, &copt, &opt, &rt)
                    : eg_runtime_create_with_options(m, &opt, &rt);
  EG_CHECK_MSG(s == EG_OK && rt, "%s", eg_last_error());
  if (rt && !set_inputs(m, rt)) {
    EG_CHECK_MSG(0, "inputs: %s", eg_last_error());
    eg_runtime_destroy(rt);
    return NULL;
  }
  return rt;
}

/* Entries in run order, back to back from 0, summing to the total. */
static void check_entries(const eg_runtime *rt) {
  int64_t at = 0;
  for (int i = 0; i < eg_runtime_profile_count(rt); i++) {
    eg_profile_entry e;
    EG_CHECK(eg_runtime_profile_entry(rt, i, &e) == EG_OK);
    EG_CHECK_MSG(e.start_ns == at && e.ns >= 0, "entry %d (%s) starts at %lld, not %lld", i,
                 e.name, (long long)e.start_ns, (long long)at);
    EG_CHECK(e.name && e.op && e.target && e.n_nodes >= 1 && e.bytes >= 0 && e.flops >= 0);
    EG_CHECK(e.convert_ns >= 0 && e.convert_ns <= e.ns);
    at = e.start_ns + e.ns;
  }
  EG_CHECK(at == eg_runtime_profile_total_ns(rt));
}

static void test_no_profile_without_the_option(void) {
  eg_model *m = NULL;
  EG_CHECK(eg_model_load(TINY, &m) == EG_OK);
  if (!m) return;
  eg_runtime *rt = NULL;
  EG_CHECK(eg_runtime_create(m, &rt) == EG_OK && set_inputs(m, rt));
  EG_CHECK(eg_runtime_run(rt) == EG_OK);
  eg_profile_entry e;
  EG_CHECK(eg_runtime_profile_count(rt) == 0 && eg_runtime_profile_total_ns(rt) == 0);
  EG_CHECK(eg_runtime_profile_entry(rt, 0, &e) == EG_ERR_ARGUMENT);
  EG_CHECK(strstr(eg_last_error(), "options.profile") != NULL);
  EG_CHECK(eg_runtime_profile_write_trace(rt, "/tmp/eg_profile_unused.json") == EG_ERR_ARGUMENT);
  eg_runtime_destroy(rt);
  /* with the option, nothing before the first run */
  rt = profiled(m, NULL);
  EG_CHECK(rt && eg_runtime_profile_count(rt) == 0);
  eg_runtime_destroy(rt);
  eg_model_destroy(m);
}

static void test_cpu_entries_and_wall_time(void) {
  eg_model *m = NULL;
  eg_graph *g = NULL;
  EG_CHECK(eg_model_load(TINY, &m) == EG_OK && eg_graph_load_json(TINY, &g) == EG_OK);
  eg_runtime *rt = m ? profiled(m, NULL) : NULL;
  if (!rt || !g) goto out;
  /* the best of a few runs: a preemption between the clocks only ever adds to the wall */
  double best = 1e30;
  for (int r = 0; r < 5; r++) {
    const int64_t t0 = now_ns();
    EG_CHECK(eg_runtime_run(rt) == EG_OK);
    const int64_t wall = now_ns() - t0, total = eg_runtime_profile_total_ns(rt);
    EG_CHECK(total > 0 && total <= wall);
    const double off = (double)(wall - total) / (double)wall;
    if (off < best) best = off;
  }
  EG_CHECK_MSG(best <= 0.10, "the profile's total is %.1f%% below the wall time", 100 * best);
  EG_CHECK(eg_runtime_profile_count(rt) == g->n_nodes);
  check_entries(rt);
  int convs = 0, addmms = 0;
  for (int32_t i = 0; i < g->n_nodes && i < eg_runtime_profile_count(rt); i++) {
    eg_profile_entry e;
    eg_runtime_profile_entry(rt, i, &e);
    const eg_node *n = &g->nodes[i];
    EG_CHECK(strcmp(e.name, n->name) == 0 && strcmp(e.target, "cpu") == 0 && e.n_nodes == 1);
    const eg_value *y = n->output >= 0 ? &g->values[n->output] : NULL;
    if (strcmp(e.op, "aten.convolution.default") == 0) {
      const eg_value *w = &g->values[n->args[1].value]; /* [Cout, Cin/groups, kH, kW] */
      double want = 2.0 * (double)(y->shape[0] * y->shape[1] * y->shape[2] * y->shape[3]) *
                    (double)(w->shape[1] * w->shape[2] * w->shape[3]);
      convs++;
      EG_CHECK_MSG(e.flops == want, "%s: %.0f FLOPs, want %.0f", e.name, e.flops,
                   want);
    } else if (strcmp(e.op, "aten.addmm.default") == 0) {
      const eg_value *a = &g->values[n->args[1].value];
      const double mn = (double)(y->shape[0] * y->shape[1]);
      addmms++;
      EG_CHECK_MSG(e.flops == 2.0 * mn * (double)a->shape[1] + mn, "%s: %.0f FLOPs", e.name,
                   e.flops);
    } else if (strcmp(e.op, "aten.t.default") == 0) {
      EG_CHECK(e.flops == 0.0);
    }
  }
  EG_CHECK(convs == 2 && addmms == 1);
out:
  eg_runtime_destroy(rt);
  eg_graph_destroy(g);
  eg_model_destroy(m);
}

static void test_npu_partitions_and_trace(void) {
  eg_model *m = NULL;
  EG_CHECK(eg_model_load(TINY, &m) == EG_OK);
  eg_runtime *rt = m ? profiled(m, "SM8650") : NULL;
  if (!rt) goto out;
  EG_CHECK(eg_runtime_run(rt) == EG_OK);
  check_entries(rt);
  int npu = 0, nodes = 0;
  for (int i = 0; i < eg_runtime_profile_count(rt); i++) {
    eg_profile_entry e;
    eg_runtime_profile_entry(rt, i, &e);
    nodes += e.n_nodes;
    if (strcmp(e.target, "npu") == 0) {
      npu++;
      EG_CHECK(strncmp(e.name, "partition ", 10) == 0 && e.flops > 0);
    }
  }
  EG_CHECK_MSG(npu >= 1 && nodes > eg_runtime_profile_count(rt), "%d NPU steps, %d nodes in %d",
               npu, nodes, eg_runtime_profile_count(rt));
  const char *path = "test_profile.trace.json";
  remove(path);
  EG_CHECK_MSG(eg_runtime_profile_write_trace(rt, path) == EG_OK, "%s", eg_last_error());
  FILE *f = fopen(path, "rb");
  EG_CHECK(f != NULL);
  if (f) {
    static char buf[1 << 20];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    buf[len] = 0;
    fclose(f);
    int events = 0, steps = 0, ops = 0;
    for (const char *p = buf; (p = strstr(p, "\"ph\": \"X\"")); p++) events++;
    for (const char *p = buf; (p = strstr(p, "\"cat\": \"cpu\"")); p++) steps++;
    for (const char *p = buf; (p = strstr(p, "\"cat\": \"npu\"")); p++) steps++;
    for (const char *p = buf; (p = strstr(p, "\"cat\": \"qnn\"")); p++) ops++;
    EG_CHECK_MSG(steps == eg_runtime_profile_count(rt) && ops >= npu && events == steps + ops,
                 "%d events: %d steps (of %d), %d QNN ops", events, steps,
                 eg_runtime_profile_count(rt), ops);
    EG_CHECK(strncmp(buf, "{\"displayTimeUnit\"", 18) == 0 && strstr(buf, "]}\n"));
  }
  remove(path);
  /* atomically or not at all */
  EG_CHECK(eg_runtime_profile_write_trace(rt, "no_such_dir/x/trace.json") == EG_ERR_IO);
  EG_CHECK(strchr(eg_last_error(), '\n') == NULL);
  EG_CHECK(fopen("no_such_dir/x/trace.json", "rb") == NULL);
out:
  eg_runtime_destroy(rt);
  eg_model_destroy(m);
}

int main(void) {
  EG_RUN(test_no_profile_without_the_option);
  EG_RUN(test_cpu_entries_and_wall_time);
  EG_RUN(test_npu_partitions_and_trace);
  return eg_test_summary();
}
