/* bench_step.c — wall time of whole training steps: one eg_runtime_run of a model (graph JSON,
 * run on the CPU, or a compiled program .egp) on inputs read from a folder of .npy files. Not a
 * test (tests/cli/test_bench_step.sh only checks that it runs).
 *
 *     bench_step MODEL.json|PROGRAM.egp INPUT_DIR [--threads T] [--reps R] [--warmup W] [--serve]
 *     bench_step --blas
 *
 * Every model input NAME is read from INPUT_DIR/NAME.npy. The runtime is created once
 * (eg_runtime_options.num_threads = T, default 0: the process default), the inputs set once, then
 * W warm-up runs (default 1) and R timed runs (default 10) of eg_runtime_run; the inputs are not
 * set again between runs (a step reads its inputs and writes only its outputs). EG_BENCH_CPUTIME=1
 * times the process's CPU time instead of wall time (one thread on a busy machine: it leaves out
 * the time other processes took). Prints one JSON line on stdout:
 *
 *     {"min_ms": .., "median_ms": .., "reps": R, "threads": T, "peak_rss_kb": .., "blas_core": ..}
 *
 * --serve (a long-lived worker of bench/bench_steps.py's interleaved rounds): after the W warm-up
 * runs, prints {"ready": true, "warmup_ms": <the last warm-up run's time, or 0>, "threads": T,
 * "peak_rss_kb": .., "blas_core": ..}, then reads one count K a line from stdin and answers each
 * with {"times_ms": [K times], "peak_rss_kb": ..}, until end of input or a line "q" (exit 0).
 * --blas prints {"blas_core": .., "blas_config": ..} (the OpenBLAS kernel core in use,
 * openblas_get_corename(), and its build configuration) and exits.
 *
 * peak_rss_kb is this process's peak resident set after the runs (VmHWM, else ru_maxrss; see
 * peak_rss_kb()): model, runtime, inputs and the library's buffers. Errors: one line on stderr,
 * exit 2 (bad usage or input: a missing .npy file, a wrong dtype or shape, a bad count on stdin)
 * or 1 (the run failed). Written against
 * include/edgegrad.h and OpenBLAS's cblas.h (edgegrad links OpenBLAS). Build: the bench_step
 * CMake target; `make bench-steps` runs it through bench/bench_steps.py beside PyTorch. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <cblas.h>

#include "edgegrad.h"

static clockid_t bench_clock = CLOCK_MONOTONIC; /* or CLOCK_PROCESS_CPUTIME_ID */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(bench_clock, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Peak resident set of this process in KiB: VmHWM of /proc/self/status where there is one (it
 * starts afresh at exec), else getrusage's ru_maxrss — which Linux carries over from the
 * process that exec'ed us, so under a large parent (a Python with PyTorch loaded) it reads the
 * parent's size. */
static long peak_rss_kb(void) {
  long kb = -1;
  FILE *f = fopen("/proc/self/status", "r");
  if (f) {
    char line[256];
    while (fgets(line, sizeof line, f))
      if (strncmp(line, "VmHWM:", 6) == 0) {
        kb = strtol(line + 6, NULL, 10);
        break;
      }
    fclose(f);
  }
  if (kb <= 0) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    kb = (long)ru.ru_maxrss;
  }
  return kb;
}

/* A JSON string of s (NULL: null): quotes and backslashes escaped, control characters dropped. */
static void print_json_string(const char *s) {
  if (!s) {
    fputs("null", stdout);
    return;
  }
  putchar('"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') putchar('\\');
    if ((unsigned char)*s >= 0x20) putchar(*s);
  }
  putchar('"');
}

/* OpenBLAS's kernel core in use (OPENBLAS_CORETYPE, else what it detected), trailing spaces
 * trimmed (some builds pad it). */
static void print_blas_core(void) {
  char core[64];
  const char *name = openblas_get_corename();
  snprintf(core, sizeof core, "%s", name ? name : "");
  for (size_t n = strlen(core); n > 0 && core[n - 1] == ' '; n--) core[n - 1] = '\0';
  print_json_string(core);
}

static int usage(void) {
  fprintf(stderr, "usage: bench_step MODEL.json|PROGRAM.egp INPUT_DIR [--threads T] [--reps R] "
                  "[--warmup W] [--serve] | bench_step --blas\n");
  return 2;
}

/* Exit status of a library failure: input-caused statuses 2, the rest 1. */
static int fail_status(const char *what, eg_status s) {
  fprintf(stderr, "bench_step: %s: %s\n", what, eg_last_error());
  return (s == EG_ERR_IO || s == EG_ERR_FORMAT || s == EG_ERR_ARGUMENT || s == EG_ERR_INVALID ||
          s == EG_ERR_UNSUPPORTED)
             ? 2
             : 1;
}

static int parse_count(const char *flag, const char *text, int min, int *out) {
  char *end;
  long v = strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || v < min || v > 1000000) {
    fprintf(stderr, "bench_step: %s %s: expected an integer >= %d\n", flag, text, min);
    return 0;
  }
  *out = (int)v;
  return 1;
}

/* --serve: a ready line, then K timed runs for each count K read from stdin, one JSON line of
 * their times each, until end of input or "q". Returns the exit status. */
static int serve(eg_runtime *rt, int threads, double warm_ms) {
  printf("{\"ready\": true, \"warmup_ms\": %.4f, \"threads\": %d, \"peak_rss_kb\": %ld, "
         "\"blas_core\": ",
         warm_ms, threads, peak_rss_kb());
  print_blas_core();
  puts("}");
  fflush(stdout);
  char line[64];
  double *times = NULL;
  int cap = 0, rc = 0;
  while (rc == 0 && fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\r\n")] = '\0';
    if (strcmp(line, "q") == 0) break;
    int k;
    if (!parse_count("stdin count", line, 1, &k)) {
      rc = 2;
      break;
    }
    if (k > cap) {
      double *t = realloc(times, (size_t)k * sizeof *t);
      if (!t) {
        fprintf(stderr, "bench_step: out of memory (%d times)\n", k);
        rc = 1;
        break;
      }
      times = t;
      cap = k;
    }
    for (int r = 0; r < k && rc == 0; r++) {
      double t0 = now_ms();
      eg_status s = eg_runtime_run(rt);
      times[r] = now_ms() - t0;
      if (s != EG_OK) rc = fail_status("run", s);
    }
    if (rc) break;
    fputs("{\"times_ms\": [", stdout);
    for (int r = 0; r < k; r++) printf("%s%.4f", r ? ", " : "", times[r]);
    printf("], \"peak_rss_kb\": %ld}\n", peak_rss_kb());
    fflush(stdout);
  }
  free(times);
  return rc;
}

int main(int argc, char **argv) {
  const char *model_path = NULL, *input_dir = NULL;
  int threads = 0, reps = 10, warmup = 1, serving = 0;
  const char *cpu = getenv("EG_BENCH_CPUTIME");
  if (cpu && strcmp(cpu, "1") == 0) bench_clock = CLOCK_PROCESS_CPUTIME_ID;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int has_next = i + 1 < argc;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage();
      return 0;
    } else if (strcmp(a, "--threads") == 0 && has_next) {
      if (!parse_count(a, argv[++i], 0, &threads)) return 2;
    } else if (strcmp(a, "--reps") == 0 && has_next) {
      if (!parse_count(a, argv[++i], 1, &reps)) return 2;
    } else if (strcmp(a, "--warmup") == 0 && has_next) {
      if (!parse_count(a, argv[++i], 0, &warmup)) return 2;
    } else if (strcmp(a, "--serve") == 0) {
      serving = 1;
    } else if (strcmp(a, "--blas") == 0 && argc == 2) {
      fputs("{\"blas_core\": ", stdout);
      print_blas_core();
      fputs(", \"blas_config\": ", stdout);
      print_json_string(openblas_get_config());
      puts("}");
      return 0;
    } else if (a[0] == '-') {
      return usage();
    } else if (!model_path) {
      model_path = a;
    } else if (!input_dir) {
      input_dir = a;
    } else {
      return usage();
    }
  }
  if (!model_path || !input_dir) return usage();

  eg_model *model = NULL;
  eg_status s = eg_model_load(model_path, &model);
  if (s != EG_OK) return fail_status(model_path, s);
  int n_in = eg_model_num_inputs(model), rc = 0;
  eg_tensor *vals = calloc((size_t)(n_in > 0 ? n_in : 1), sizeof *vals);
  double *times = calloc((size_t)reps, sizeof *times);
  eg_runtime *rt = NULL;
  if (!vals || !times) {
    fprintf(stderr, "bench_step: out of memory\n");
    rc = 1;
    goto done;
  }
  for (int i = 0; i < n_in && rc == 0; i++) {
    eg_tensor_desc d;
    eg_model_input(model, i, &d);
    size_t len = strlen(input_dir) + strlen(d.name) + 6;
    char *path = malloc(len);
    if (!path) {
      fprintf(stderr, "bench_step: out of memory\n");
      rc = 1;
      break;
    }
    snprintf(path, len, "%s/%s.npy", input_dir, d.name);
    s = eg_npy_load(path, &vals[i]);
    if (s == EG_OK) s = eg_model_check_input(model, d.name, &vals[i]);
    if (s != EG_OK) rc = fail_status(path, s);
    free(path);
  }
  if (rc) goto done;

  eg_runtime_options opt = EG_RUNTIME_OPTIONS(.num_threads = threads);
  s = eg_runtime_create_with_options(model, &opt, &rt);
  if (s != EG_OK) {
    rc = fail_status("runtime", s);
    goto done;
  }
  for (int i = 0; i < n_in && rc == 0; i++) {
    eg_tensor_desc d;
    eg_model_input(model, i, &d);
    s = eg_runtime_set_input(rt, d.name, &vals[i]);
    if (s != EG_OK) rc = fail_status(d.name, s);
  }
  double warm_ms = 0;
  for (int r = 0; r < warmup && rc == 0; r++) {
    double t0 = now_ms();
    s = eg_runtime_run(rt);
    warm_ms = now_ms() - t0;
    if (s != EG_OK) rc = fail_status("run", s);
  }
  if (rc == 0 && serving) {
    rc = serve(rt, threads, warm_ms);
    goto done;
  }
  for (int r = 0; r < reps && rc == 0; r++) {
    double t0 = now_ms();
    s = eg_runtime_run(rt);
    double t1 = now_ms();
    if (s != EG_OK) rc = fail_status("run", s);
    else times[r] = t1 - t0;
  }
  if (rc == 0) {
    qsort(times, (size_t)reps, sizeof *times, cmp_double);
    double median = reps % 2 ? times[reps / 2] : 0.5 * (times[reps / 2 - 1] + times[reps / 2]);
    printf("{\"min_ms\": %.4f, \"median_ms\": %.4f, \"reps\": %d, \"threads\": %d, "
           "\"peak_rss_kb\": %ld, \"blas_core\": ",
           times[0], median, reps, threads, peak_rss_kb());
    print_blas_core();
    puts("}");
  }

done:
  eg_runtime_destroy(rt);
  if (vals)
    for (int i = 0; i < n_in; i++) eg_tensor_free(&vals[i]);
  free(vals);
  free(times);
  eg_model_destroy(model);
  return rc;
}
