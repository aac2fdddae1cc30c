/* main.c — the edgegrad command-line tool. Written against include/edgegrad.h only.
 *
 *   edgegrad run MODEL.json|PROGRAM.egp --input NAME=FILE.npy ... --output-dir DIR [--expect DIR]
 *                [--init WEIGHTS] [--threads N] [--max-memory SIZE] ... (usage_run)
 *   edgegrad train MODEL.json|PROGRAM.egp --data DIR --init WEIGHTS --epochs E ... (train.c)
 *   edgegrad info MODEL.json|PROGRAM.egp [--json]
 *   edgegrad targets
 *   edgegrad compile MODEL.json --soc SOC [-o PROGRAM.egp] [--report REPORT.json] [--skip-op OP]...
 *                    [--skip-node NAME]... [--no-fallback] [--dump-after=PASS]
 *   edgegrad inspect PROGRAM.egp [--json]
 *
 * Exit status: 0 success; 1 a run failed, outputs differ from --expect, or compile
 * --no-fallback found nodes for the CPU; 2 bad usage or bad
 * input (a file edgegrad cannot accept, an input missing, extra, or of the wrong type). Every
 * error is one line on stderr: "edgegrad: <where>: <what> (<values>): <rule>". */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "outdir.h"
#include "edgegrad.h"

/* Every error is one line: a control character that a file or argument brought into the
 * message (a newline in a name, a metadata value) is shown as '?'. */
int fail(int code, const char *fmt, ...) {
  va_list ap, again;
  va_start(ap, fmt);
  va_copy(again, ap);
  fflush(stdout); /* what was printed before comes first */
  const int len = vsnprintf(NULL, 0, fmt, ap);
  char *msg = len >= 0 ? malloc((size_t)len + 1) : NULL;
  if (msg) {
    vsnprintf(msg, (size_t)len + 1, fmt, again);
    for (char *c = msg; *c; c++)
      if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
  }
  fprintf(stderr, "edgegrad: %s\n", msg ? msg : fmt);
  free(msg);
  va_end(again);
  va_end(ap);
  return code;
}

/* Library failures: input-caused statuses exit 2, the rest 1. */
int fail_status(eg_status s) {
  int code = (s == EG_ERR_NOMEM || s == EG_ERR_RUNTIME) ? EXIT_FAIL : EXIT_USAGE;
  return fail(code, "%s", eg_last_error());
}




/* What a regular file that is no model is, by its first bytes: one of the other files
 * edgegrad reads or writes, "" for other bytes (not JSON text), NULL when it could be a graph
 * JSON or is a compiled program (magic "EGP1", docs/program-format.md): the loader's message
 * then says where it breaks. `lead` gets its first bytes in hex. */
static const char *file_kind(const char *path, char *lead, size_t size) {
  struct stat st;
  unsigned char b[16] = {0};
  size_t n = 0, used = 0;
  FILE *f = stat(path, &st) == 0 && S_ISREG(st.st_mode) ? fopen(path, "rb") : NULL;
  if (f) {
    n = fread(b, 1, sizeof b, f);
    fclose(f);
  }
  for (size_t k = 0; k < n && k < 8 && used < size; k++)
    used += (size_t)snprintf(lead + used, size - used, "%s%02x", k ? " " : "", b[k]);
  uint64_t hlen = 0;
  for (int k = 0; k < 8 && n >= 9; k++) hlen |= (uint64_t)b[k] << (8 * k);
  if (n >= 4 && memcmp(b, "EGP1", 4) == 0) return NULL;
  if (n >= 6 && memcmp(b, "\x93NUMPY", 6) == 0)
    return "a .npy array (run --input NAME=FILE.npy and train --data take arrays)";
  if (n >= 4 && memcmp(b, "PK\x03\x04", 4) == 0)
    return "a zip archive (an .npz data set is for train --data)";
  if (n >= 9 && b[8] == '{' && hlen <= (uint64_t)st.st_size - 8)
    return "a safetensors file (weights: a graph JSON's own, or train --init)";
  size_t k = 0;
  while (k < n && strchr(" \t\r\n", b[k]) && b[k]) k++;
  return k < n && b[k] != '{' && b[k] != '[' ? "" : NULL;
}

int load_model(const char *cmd, const char *reads, const char *path, eg_model **out) {
  eg_status s = eg_model_load(path, out);
  if (s == EG_OK) return 0;
  char lead[64] = "";
  const char *kind = s == EG_ERR_FORMAT ? file_kind(path, lead, sizeof lead) : NULL;
  if (kind && kind[0])
    return fail(EXIT_USAGE, "%s: %s: %s: %s reads %s", cmd, path, kind, cmd, reads);
  if (kind)
    return fail(EXIT_USAGE, "%s: %s: neither a graph JSON nor a compiled program (it begins "
                "with bytes %s): %s reads %s", cmd, path, lead, cmd, reads);
  return fail_status(s);
}

void format_shape(char *buf, size_t size, const eg_tensor *t) {
  size_t used = (size_t)snprintf(buf, size, "[");
  for (int i = 0; i < t->rank && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "",
                             (long long)t->shape[i]);
  if (used < size) snprintf(buf + used, size - used, "]");
}

/* ---- info ---- */

/* The name of the partner of input (is_input) or output `d` (its pair), or NULL. */
static const char *partner(const eg_model *m, bool is_input, const eg_tensor_desc *d) {
  eg_tensor_desc p;
  if (d->pair < 0) return NULL;
  eg_status s = is_input ? eg_model_output(m, d->pair, &p) : eg_model_input(m, d->pair, &p);
  return s == EG_OK ? p.name : NULL;
}

static json_t *desc_json(const eg_model *m, bool is_input, const eg_tensor_desc *d) {
  json_t *shape = json_array();
  for (int i = 0; i < d->tensor.rank; i++) json_array_append_new(shape, json_integer(d->tensor.shape[i]));
  json_t *o = json_pack("{s:s, s:s, s:o, s:s}", "name", d->name, "dtype",
                        eg_dtype_name(d->tensor.dtype), "shape", shape, "role",
                        eg_io_role_name(d->role));
  const char *of = is_input ? NULL : partner(m, false, d);
  if (o && of) json_object_set_new(o, "of", json_string(of));
  if (o && d->random == EG_RANDOM_BERNOULLI)
    json_object_set_new(o, "random", json_pack("{s:s, s:o}", "distribution", "bernoulli", "p",
                                               isnan(d->random_p) ? json_null()
                                                                  : json_real(d->random_p)));
  return o;
}

static int info_json(const eg_model *m) {
  json_t *root = json_object(), *ins = json_array(), *outs = json_array(), *ops = json_object();
  eg_tensor_desc d;
  for (int i = 0; i < eg_model_num_inputs(m); i++)
    if (eg_model_input(m, i, &d) == EG_OK) json_array_append_new(ins, desc_json(m, true, &d));
  for (int i = 0; i < eg_model_num_outputs(m); i++)
    if (eg_model_output(m, i, &d) == EG_OK) json_array_append_new(outs, desc_json(m, false, &d));
  for (int i = 0; i < eg_model_num_op_kinds(m); i++) {
    const char *target;
    int count;
    if (eg_model_op_kind(m, i, &target, &count) == EG_OK)
      json_object_set_new(ops, target, json_integer(count));
  }
  eg_model_stats st;
  eg_model_get_stats(m, &st);
  json_object_set_new(root, "inputs", ins);
  json_object_set_new(root, "outputs", outs);
  json_object_set_new(root, "ops", ops);
  json_object_set_new(root, "nodes", json_integer(st.num_nodes));
  json_object_set_new(root, "static_weights", json_integer(st.num_statics));
  json_object_set_new(root, "static_bytes", json_integer((json_int_t)st.static_bytes));
  char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  json_decref(root);
  if (!text) return fail(EXIT_FAIL, "info: out of memory");
  puts(text);
  free(text);
  return 0;
}

/* One line of info: name, dtype, shape and role, with the partner's name (a parameter's
 * gradient, a gradient's parameter) or a random draw's distribution in parentheses. */
static void info_line(const eg_model *m, bool is_input, const eg_tensor_desc *d) {
  char shape[256];
  format_shape(shape, sizeof shape, &d->tensor);
  printf("  %-24s %-8s %-16s %s", d->name, eg_dtype_name(d->tensor.dtype), shape,
         eg_io_role_name(d->role));
  const char *p = partner(m, is_input, d);
  if (p) printf(" (%s)", p);
  if (d->random == EG_RANDOM_BERNOULLI && isnan(d->random_p))
    printf(" (Bernoulli mask, p from a tensor)");
  else if (d->random == EG_RANDOM_BERNOULLI)
    printf(" (Bernoulli mask, p %g)", d->random_p);
  printf("\n");
}

static void info_text(const eg_model *m) {
  eg_tensor_desc d;
  printf("inputs:\n");
  for (int i = 0; i < eg_model_num_inputs(m); i++)
    if (eg_model_input(m, i, &d) == EG_OK) info_line(m, true, &d);
  printf("outputs:\n");
  for (int i = 0; i < eg_model_num_outputs(m); i++)
    if (eg_model_output(m, i, &d) == EG_OK) info_line(m, false, &d);
  eg_model_stats st;
  eg_model_get_stats(m, &st);
  printf("ops (%d nodes):\n", st.num_nodes);
  for (int i = 0; i < eg_model_num_op_kinds(m); i++) {
    const char *target;
    int count;
    if (eg_model_op_kind(m, i, &target, &count) == EG_OK) printf("  %5d  %s\n", count, target);
  }
  printf("static weights: %d tensors, %zu bytes\n", st.num_statics, st.static_bytes);
}

typedef struct info_args {
  const char *path;
  bool json;
} info_args;

static const opt_def info_opts[] = {{.name = "--json", .kind = OPT_FLAG, OPT_AT(info_args, json)}};
static const opt_pos info_pos[] = {{"model", offsetof(info_args, path)}};
static const opt_command info_command = {.name = "info", .usage = usage_info,
                                         OPT_OPTIONS(info_opts), OPT_POSITIONALS(info_pos),
                                         .n_required = 1, .synopsis = "MODEL.json|PROGRAM.egp"};

static int cmd_info(int argc, char **argv) {
  info_args ia = {0};
  int rc = opt_parse(&info_command, argc, argv, &ia, NULL);
  if (rc) return rc < 0 ? 0 : rc;
  eg_model *m;
  rc = load_model("info", READS_MODEL, ia.path, &m);
  if (rc) return rc;
  if (ia.json) rc = info_json(m);
  else info_text(m);
  eg_model_destroy(m);
  return rc;
}

/* ---- run ---- */

typedef struct run_args {
  const char *model, *output_dir, *expect_dir;
  const char *init;           /* --init WEIGHTS: parameters and buffers not given by --input */
  const char *max_memory_arg; /* --max-memory as given; NULL: no limit */
  eg_runtime_options rt_opt;
  eg_compile_options compile; /* compile.soc set: run compiled for that SoC */
  const char **skip_ops, **skip_nodes; /* the lists of compile (allocated by opt_parse) */
  long steps;
  double lr;
  bool have_lr;
  int n_inputs;
  const char **input_specs; /* NAME=FILE */
  bool quiet;
  bool profile;              /* --profile: print the last run's profile */
  const char *profile_trace; /* --profile-trace FILE */
  int64_t last_run_ns;       /* wall time of the last eg_runtime_run, as the CLI saw it */
} run_args;

static const opt_def run_opts[] = {
    {.name = "--input", .alias = "-i", .kind = OPT_LIST, .arg = "NAME=FILE.npy",
     OPT_AT(run_args, input_specs), OPT_AT2(run_args, n_inputs)},
    {.name = "--init", .kind = OPT_STRING, .arg = "WEIGHTS", OPT_AT(run_args, init)},
    {.name = "--output-dir", .alias = "-o", .kind = OPT_STRING, .arg = "DIR",
     OPT_AT(run_args, output_dir)},
    {.name = "--max-memory", .kind = OPT_SIZE, .arg = "SIZE",
     OPT_AT(run_args, rt_opt.max_memory_bytes), OPT_AT2(run_args, max_memory_arg)},
    {.name = "--soc", .kind = OPT_STRING, .arg = "SOC", OPT_AT(run_args, compile.soc)},
    {.name = "--skip-op", .kind = OPT_LIST, .arg = "OP", OPT_AT(run_args, skip_ops),
     OPT_AT2(run_args, compile.num_skip_ops)},
    {.name = "--skip-node", .kind = OPT_LIST, .arg = "NAME", OPT_AT(run_args, skip_nodes),
     OPT_AT2(run_args, compile.num_skip_nodes)},
    /* overrides a program's precision; sets the one a --soc run compiles for */
    {.name = "--precision", .kind = OPT_CHOICE, .arg = "fp16|fp32",
     OPT_AT(run_args, rt_opt.precision), .choices = precision_choices},
    {.name = "--expect", .kind = OPT_STRING, .arg = "DIR", OPT_AT(run_args, expect_dir)},
    {.name = "--steps", .kind = OPT_INT, .arg = "N", OPT_AT(run_args, steps), .lo = 1,
     .hi = 1000000},
    {.name = "--lr", .kind = OPT_NUMBER, .arg = "LR", OPT_AT(run_args, lr), .min = 0},
    {.name = "--threads", .kind = OPT_INT, .arg = "N", OPT_AT(run_args, rt_opt.num_threads),
     .lo = 1, .hi = 1024},
    {.name = "--profile", .kind = OPT_FLAG, OPT_AT(run_args, profile)},
    {.name = "--profile-trace", .kind = OPT_STRING, .arg = "FILE",
     OPT_AT(run_args, profile_trace)},
    {.name = "--dump-partitions", .kind = OPT_STRING, .arg = "DIR",
     OPT_AT(run_args, rt_opt.dump_partitions_dir)},
    {.name = "--quiet", .alias = "-q", .kind = OPT_FLAG, OPT_AT(run_args, quiet)},
};
static const opt_pos run_pos[] = {{"model", offsetof(run_args, model)}};
static const opt_command run_command = {.name = "run", .usage = usage_run,
                                        OPT_OPTIONS(run_opts), OPT_POSITIONALS(run_pos),
                                        .n_required = 1, .synopsis = "MODEL.json|PROGRAM.egp"};

/* The options, then the rules between them and the folders of the paths the run writes. */
static int parse_run_args(int argc, char **argv, run_args *ra) {
  opt_given given;
  ra->steps = 1;
  int rc = opt_parse(&run_command, argc, argv, ra, &given);
  if (rc) return rc;
  ra->have_lr = opt_was_given(&run_command, &given, "--lr");
  ra->compile.struct_size = sizeof ra->compile;
  ra->rt_opt.struct_size = sizeof ra->rt_opt;
  ra->compile.skip_ops = ra->skip_ops;
  ra->compile.skip_nodes = ra->skip_nodes;
  ra->compile.precision = ra->rt_opt.precision;
  ra->rt_opt.profile = ra->profile || ra->profile_trace;
  if (ra->steps > 1 && !ra->have_lr)
    return fail(EXIT_USAGE, "run: --steps %ld needs --lr: the SGD learning rate", ra->steps);
  if (ra->steps > 1 && !ra->output_dir)
    return fail(EXIT_USAGE, "run: --steps needs --output-dir for the final parameters");
  if (!ra->compile.soc && (ra->compile.num_skip_ops || ra->compile.num_skip_nodes))
    return fail(EXIT_USAGE, "run: --skip-op/--skip-node need --soc (they steer NPU placement)");
  /* where the run writes, checked before any work */
  rc = ra->output_dir ? outdir_check_dir("run", "--output-dir", ra->output_dir) : 0;
  if (rc == 0 && ra->profile_trace)
    rc = outdir_check_file("run", "--profile-trace", ra->profile_trace);
  if (rc == 0 && ra->rt_opt.dump_partitions_dir)
    rc = outdir_check_dir("run", "--dump-partitions", ra->rt_opt.dump_partitions_dir);
  return rc;
}

/* --dump-partitions on a run without NPU partitions is refused before any work: it would
 * write nothing a user asked for. (A compiled program with none is refused by the runtime.) */
static int check_dump(const eg_model *m, const run_args *ra) {
  eg_program_info prog;
  if (!ra->rt_opt.dump_partitions_dir || ra->compile.soc ||
      eg_model_program_info(m, &prog) == EG_OK)
    return 0;
  return fail(EXIT_USAGE, "run: --dump-partitions %s: %s runs on the CPU only (no --soc): only "
              "a compiled run has NPU partitions to dump: give --soc SOC, or a compiled program",
              ra->rt_opt.dump_partitions_dir, ra->model);
}

/* Whether an --input gives the model input `name`. */
static bool given_by_input(const run_args *ra, const char *name) {
  const size_t len = strlen(name);
  for (int k = 0; k < ra->n_inputs; k++)
    if (strncmp(ra->input_specs[k], name, len) == 0 && ra->input_specs[k][len] == '=') return true;
  return false;
}

/* --init: init[i] for every parameter and buffer input i no --input gives. */
static int load_init(const eg_model *m, const run_args *ra, eg_tensor *init) {
  const int n = eg_model_num_inputs(m);
  bool *skip = calloc((size_t)n + 1, sizeof *skip);
  if (!skip) return fail(EXIT_FAIL, "run: out of memory");
  for (int i = 0; i < n; i++) {
    eg_tensor_desc d;
    eg_model_input(m, i, &d);
    skip[i] = given_by_input(ra, d.name);
  }
  const eg_status s = eg_model_read_weights(m, ra->init, skip, init);
  free(skip);
  return s == EG_OK ? 0
         : fail(s == EG_ERR_NOMEM ? EXIT_FAIL : EXIT_USAGE, "run: --init %s", eg_last_error());
}

/* Reads every --input and checks it against the model (name, dtype, shape), then --init, and
 * that each model input is given exactly once, all before a runtime reserves memory. vals[k] is
 * spec k's, init[i] model input i's from --init. */
static int load_inputs(const eg_model *m, const run_args *ra, eg_tensor *vals, eg_tensor *init) {
  int n = eg_model_num_inputs(m);
  for (int k = 0; k < ra->n_inputs; k++) {
    const char *spec = ra->input_specs[k], *eq = strchr(spec, '=');
    if (!eq || eq == spec || !eq[1])
      return fail(EXIT_USAGE, "run: --input %s: expected NAME=FILE.npy", spec);
    for (int j = 0; j < k; j++)
      if (strncmp(ra->input_specs[j], spec, (size_t)(eq - spec + 1)) == 0)
        return fail(EXIT_USAGE, "run: --input %.*s given twice", (int)(eq - spec), spec);
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(eq - spec), spec);
    eg_status s = eg_npy_load(eq + 1, &vals[k]);
    if (s == EG_OK) s = eg_model_check_input(m, name, &vals[k]);
    if (s != EG_OK) return fail_status(s);
  }
  if (ra->init) {
    int rc = load_init(m, ra, init);
    if (rc) return rc;
  }
  for (int i = 0; i < n; i++) {
    eg_tensor_desc d;
    eg_model_input(m, i, &d);
    if (!given_by_input(ra, d.name) && !init[i].data) {
      char shape[256];
      format_shape(shape, sizeof shape, &d.tensor);
      return fail(EXIT_USAGE, "run: input %s (%s %s) missing: give --input %s=FILE.npy", d.name,
                  eg_dtype_name(d.tensor.dtype), shape, d.name);
    }
  }
  return 0;
}

/* Copies the checked inputs into the runtime: the --input values, then --init's. */
static int set_inputs(const eg_model *m, eg_runtime *rt, const run_args *ra,
                      const eg_tensor *vals, const eg_tensor *init) {
  for (int k = 0; k < ra->n_inputs; k++) {
    const char *spec = ra->input_specs[k], *eq = strchr(spec, '=');
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(eq - spec), spec);
    eg_status s = eg_runtime_set_input(rt, name, &vals[k]);
    if (s != EG_OK) return fail_status(s);
  }
  for (int i = 0; i < eg_model_num_inputs(m); i++) {
    eg_tensor_desc d;
    eg_model_input(m, i, &d);
    eg_status s = init[i].data ? eg_runtime_set_input(rt, d.name, &init[i]) : EG_OK;
    if (s != EG_OK) return fail_status(s);
  }
  return 0;
}

bool is_trained(const eg_tensor_desc *d) {
  return (d->role == EG_ROLE_PARAMETER || d->role == EG_ROLE_BUFFER) && d->pair >= 0;
}

/* Every name the run joins into a path (DIR/<output>.npy, --expect DIR/<output>.npy,
 * DIR/final/<input>.npy) must be a file name; checked before anything is read or written. */
static int check_names(const eg_model *m, const run_args *ra) {
  if (!ra->output_dir && !ra->expect_dir) return 0;
  bool trains = ra->steps > 1 || ra->have_lr;
  for (int io = 0; io < 2; io++) {
    int n = io ? eg_model_num_inputs(m) : eg_model_num_outputs(m);
    for (int i = 0; i < n && (io == 0 || (trains && ra->output_dir)); i++) {
      eg_tensor_desc d;
      if ((io ? eg_model_input(m, i, &d) : eg_model_output(m, i, &d)) != EG_OK) continue;
      if (io && !is_trained(&d)) continue;
      if (!outdir_name_ok(d.name))
        return fail(EXIT_USAGE, "run: %s: %s %d \"%s\": not usable as a file name (%s/<name>.npy): "
                    OUTDIR_NAME_RULE, ra->model, io ? "input" : "output", i, d.name,
                    io ? "DIR/final" : "DIR");
    }
  }
  return 0;
}

static double to_double(const eg_tensor *t, int64_t i) {
  switch (t->dtype) {
  case EG_DTYPE_FLOAT32: return ((const float *)t->data)[i];
  case EG_DTYPE_FLOAT64: return ((const double *)t->data)[i];
  case EG_DTYPE_INT64: return (double)((const int64_t *)t->data)[i];
  case EG_DTYPE_INT32: return ((const int32_t *)t->data)[i];
  case EG_DTYPE_INT8: return ((const int8_t *)t->data)[i];
  case EG_DTYPE_UINT8: case EG_DTYPE_BOOL: return ((const uint8_t *)t->data)[i];
  default: return NAN;
  }
}

static double l2norm(const eg_tensor *t) {
  double s = 0;
  for (int64_t i = 0; i < eg_tensor_numel(t); i++) s += to_double(t, i) * to_double(t, i);
  return sqrt(s);
}

/* Compares `out` with DIR/<name>.npy. Returns 0 match, 1 mismatch, 2 unreadable; -1 absent. */
static int expect_one(const char *dir, const char *name, const eg_tensor *out, char *note,
                      size_t size) {
  char *path = outdir_join(dir, name, ".npy");
  struct stat st;
  if (!path || stat(path, &st) != 0) {
    if (!path) snprintf(note, size, "out of memory");
    free(path);
    return path ? -1 : 2;
  }
  eg_tensor ref;
  eg_status loaded = eg_npy_load(path, &ref);
  free(path);
  if (loaded != EG_OK) {
    snprintf(note, size, "%s", eg_last_error());
    return 2;
  }
  eg_compare_result r;
  int rc = 0;
  if (eg_tensor_compare(out, &ref, EG_COMPARE_RTOL, EG_COMPARE_ATOL, &r) != EG_OK) {
    snprintf(note, size, "MISMATCH: %s", eg_last_error());
    rc = 1;
  } else if (r.num_bad) {
    snprintf(note, size, "ref norm %.6g  max|diff| %.3g  MISMATCH: %lld/%lld elements off; worst "
             "at %lld (got %.7g, want %.7g, tol %.3g)", l2norm(&ref), r.max_err,
             (long long)r.num_bad, (long long)eg_tensor_numel(&ref), (long long)r.worst, r.got,
             r.want, r.tol);
    rc = 1;
  } else {
    snprintf(note, size, "ref norm %.6g  max|diff| %.3g  ok", l2norm(&ref), r.max_err);
  }
  eg_tensor_free(&ref);
  return rc;
}

/* Prints one line per output, comparing with --expect where a reference exists. */
static int print_outputs(const eg_model *m, const eg_runtime *rt, const run_args *ra) {
  int rc = 0, checked = 0;
  for (int i = 0; i < eg_model_num_outputs(m); i++) {
    eg_tensor_desc d;
    eg_tensor t;
    eg_model_output(m, i, &d);
    eg_runtime_output(rt, i, &t);
    char shape[256], note[512] = "";
    format_shape(shape, sizeof shape, &t);
    int e = ra->expect_dir ? expect_one(ra->expect_dir, d.name, &t, note, sizeof note) : -1;
    if (e >= 0) checked++;
    if (e > 0) rc = EXIT_FAIL;
    if (!ra->quiet || e > 0)
      printf("%-24s %-8s %-18s norm %-12.6g %s\n", d.name, eg_dtype_name(t.dtype), shape,
             l2norm(&t), note);
  }
  if (ra->expect_dir && !ra->quiet)
    printf("%s: %d outputs compared with %s\n", rc ? "MISMATCH" : "ok", checked, ra->expect_dir);
  return rc;
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* eg_runtime_run, timed for --profile's total line. */
static eg_status timed_run(eg_runtime *rt, run_args *ra) {
  const int64_t t0 = now_ns();
  eg_status s = eg_runtime_run(rt);
  ra->last_run_ns = now_ns() - t0;
  return s;
}

static int run_once(eg_runtime *rt, run_args *ra) {
  eg_status s = timed_run(rt, ra);
  return s == EG_OK ? 0 : fail_status(s);
}

static int by_time_desc(const void *a, const void *b) {
  const int64_t x = ((const eg_profile_entry *)a)->ns, y = ((const eg_profile_entry *)b)->ns;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* --profile: the last run's steps, slowest first (the top 30), and the totals. */
static int print_profile(const eg_runtime *rt, const run_args *ra) {
  const int n = eg_runtime_profile_count(rt);
  eg_profile_entry *e = calloc((size_t)n + 1, sizeof *e);
  if (!e) return fail(EXIT_FAIL, "run: out of memory");
  int64_t convert = 0;
  double flops = 0.0;
  for (int i = 0; i < n; i++) {
    eg_runtime_profile_entry(rt, i, &e[i]);
    convert += e[i].convert_ns;
    flops += e[i].flops;
  }
  const double total = (double)eg_runtime_profile_total_ns(rt);
  qsort(e, (size_t)n, sizeof *e, by_time_desc);
  printf("profile of the %s run: %d steps, %.3f ms (wall %.3f ms), %.1f MFLOP, %.3f ms "
         "converting layouts at NPU boundaries\n",
         ra->steps > 1 ? "last" : "one", n, total / 1e6, (double)ra->last_run_ns / 1e6,
         flops / 1e6, (double)convert / 1e6);
  printf("%9s %6s %10s %8s %9s %-6s %10s %-40s %s\n", "ms", "%", "MFLOP", "GFLOP/s", "MB",
         "target", "convert ms", "op", "name");
  for (int i = 0; i < n && i < 30; i++)
    printf("%9.3f %6.2f %10.2f %8.2f %9.3f %-6s %10.3f %-40s %s\n", (double)e[i].ns / 1e6,
           total > 0 ? 100.0 * (double)e[i].ns / total : 0.0, e[i].flops / 1e6,
           e[i].ns > 0 ? e[i].flops / (double)e[i].ns : 0.0, (double)e[i].bytes / 1e6,
           e[i].target, (double)e[i].convert_ns / 1e6, e[i].op, e[i].name);
  if (n > 30) printf("(%d more steps)\n", n - 30);
  free(e);
  return 0;
}

/* Stages every file of the run in `od`: DIR/<output>.npy, and after --steps DIR/losses.npy and
 * DIR/final/<input>.npy for every input the SGD update changes. */
static int stage_files(outdir *od, const eg_model *m, eg_runtime *rt, const run_args *ra,
                       const float *losses) {
  int rc = 0;
  for (int i = 0; i < eg_model_num_outputs(m) && rc == 0; i++) {
    eg_tensor_desc d;
    eg_tensor t;
    eg_model_output(m, i, &d);
    eg_runtime_output(rt, i, &t);
    rc = outdir_save(od, NULL, d.name, &t);
  }
  if (rc || !losses) return rc;
  eg_tensor lt = {.dtype = EG_DTYPE_FLOAT32, .rank = 1, .shape = {ra->steps},
                  .data = (void *)losses};
  rc = outdir_save(od, NULL, "losses", &lt);
  for (int i = 0; i < eg_model_num_inputs(m) && rc == 0; i++) {
    eg_tensor_desc d;
    eg_tensor t;
    eg_model_input(m, i, &d);
    if (!is_trained(&d)) continue;
    eg_status s = eg_runtime_input(rt, i, &t);
    rc = s == EG_OK ? outdir_save(od, "final", d.name, &t) : fail_status(s);
  }
  return rc;
}

/* --steps N: N steps of the library's trainer (plain SGD at --lr) on the inputs as --input set
 * them (random ones included: drawn by the trainer only where not given), the loss of each printed and kept in `losses`
 * (ra->steps floats) for DIR/losses.npy. */
static int train(const eg_model *m, eg_runtime *rt, run_args *ra, const eg_tensor *vals,
                 float *losses) {
  int n_params, n_buffers;
  eg_model_training_io(m, &n_params, &n_buffers);
  if (n_params == 0 && n_buffers == 0)
    return fail(EXIT_USAGE, "run: --steps: %s has no input of role parameter or buffer (see "
                "edgegrad info): nothing to train; a graph exported before edgegrad recorded "
                "roles has none: export the training step again with this edgegrad's exporter",
                ra->model);
  eg_optimizer_options sgd;
  eg_trainer_options o;
  if (eg_optimizer_defaults(EG_OPTIMIZER_SGD, &sgd) != EG_OK || eg_trainer_defaults(&o) != EG_OK)
    return fail_status(EG_ERR_ARGUMENT);
  sgd.lr = ra->lr; /* plain SGD, P - lr * grad: no loss scaling */
  o.optimizer = &sgd;
  eg_trainer *tr = NULL;
  eg_trainer_array *batch = calloc((size_t)ra->n_inputs + 1, sizeof *batch);
  char (*names)[256] = calloc((size_t)ra->n_inputs + 1, sizeof *names);
  if (!batch || !names) {
    free(batch);
    free(names);
    return fail(EXIT_FAIL, "run: out of memory");
  }
  int n = 0; /* the random inputs --input gives (data stays as set, parameters train on) */
  for (int k = 0; k < ra->n_inputs; k++) {
    const char *spec = ra->input_specs[k], *eq = strchr(spec, '=');
    snprintf(names[n], sizeof names[n], "%.*s", (int)(eq - spec), spec);
    for (int i = 0; i < eg_model_num_inputs(m); i++) {
      eg_tensor_desc d;
      if (eg_model_input(m, i, &d) == EG_OK && strcmp(d.name, names[n]) == 0 &&
          d.role == EG_ROLE_RANDOM) {
        batch[n] = (eg_trainer_array)EG_TRAINER_ARRAY(names[n], vals[k], NULL);
        n++;
        break;
      }
    }
  }
  eg_status s = eg_trainer_create(rt, &o, &tr);
  int rc = s == EG_OK ? 0 : fail(EXIT_USAGE, "run: --steps: %s", eg_last_error());
  for (long k = 0; k < ra->steps && rc == 0; k++) {
    double loss = 0;
    const int64_t t0 = now_ns(); /* --profile's total: the step, its update included */
    s = eg_trainer_step_batch(tr, batch, n, &loss);
    ra->last_run_ns = now_ns() - t0;
    if (s != EG_OK) {
      rc = fail_status(s);
      break;
    }
    losses[k] = (float)loss;
    if (!ra->quiet) printf("step %ld  loss %.7g\n", k + 1, (double)losses[k]);
  }
  eg_trainer_destroy(tr);
  free(batch);
  free(names);
  return rc;
}

/* The runtime, under --max-memory: a refusal names the option. */
int cli_runtime(const char *cmd, const eg_model *m, const char *path,
                const eg_compile_options *compile, const eg_runtime_options *options,
                const char *max_memory, eg_runtime **rt) {
  eg_program_info prog;
  const bool compiled = eg_model_program_info(m, &prog) == EG_OK;
  if (compile->soc && compiled)
    return fail(EXIT_USAGE, "%s: --soc %s with %s: it is a program compiled for %s already: "
                "give the graph file to compile for a SoC", cmd, compile->soc, path, prog.soc);
  eg_status s = compile->soc && !compiled
                    ? eg_runtime_create_compiled_with_options(m, compile, options, rt)
                    : eg_runtime_create_with_options(m, options, rt);
  if (s == EG_ERR_LIMIT)
    return fail(EXIT_USAGE, "%s: --max-memory %s: %s", cmd, max_memory, eg_last_error());
  return s == EG_OK ? 0 : fail_status(s);
}

/* run, in the order that keeps failures cheap and the disk untouched: arguments (and the
 * folders of the paths it writes), model, names, inputs (--input and --init, read and checked),
 * runtime (memory reserved, under --max-memory), the staging folder, the run, then every file
 * staged and moved into DIR together. */
static int cmd_run(int argc, char **argv) {
  run_args ra = {0};
  int rc = parse_run_args(argc, argv, &ra);
  eg_model *m = NULL;
  eg_runtime *rt = NULL;
  eg_tensor *vals = rc == 0 ? calloc((size_t)ra.n_inputs + 1, sizeof *vals) : NULL;
  float *losses = NULL;
  outdir od = {0};
  bool trains = ra.steps > 1 || ra.have_lr;
  if (rc == 0 && !vals) rc = fail(EXIT_FAIL, "run: out of memory");
  if (rc == 0) rc = load_model("run", READS_MODEL, ra.model, &m);
  const int n_in = m ? eg_model_num_inputs(m) : 0;
  eg_tensor *init = rc == 0 ? calloc((size_t)n_in + 1, sizeof *init) : NULL;
  if (rc == 0 && !init) rc = fail(EXIT_FAIL, "run: out of memory");
  if (rc == 0) rc = check_names(m, &ra);
  if (rc == 0) rc = check_dump(m, &ra);
  if (rc == 0) rc = load_inputs(m, &ra, vals, init);
  if (rc == 0)
    rc = cli_runtime("run", m, ra.model, &ra.compile, &ra.rt_opt, ra.max_memory_arg, &rt);
  if (rc == 0) rc = set_inputs(m, rt, &ra, vals, init);
  for (int i = 0; init && i < n_in; i++) eg_tensor_free(&init[i]);
  free(init);
  if (rc == 0 && trains && !(losses = calloc((size_t)ra.steps, sizeof(float))))
    rc = fail(EXIT_FAIL, "run: out of memory");
  if (rc == 0 && ra.output_dir) rc = outdir_open(&od, ra.output_dir); /* before a long run */
  if (rc == 0) rc = trains ? train(m, rt, &ra, vals, losses) : run_once(rt, &ra);
  for (int k = 0; vals && k < ra.n_inputs; k++) eg_tensor_free(&vals[k]);
  if (rc == 0 && ra.profile_trace) {
    eg_status ts = eg_runtime_profile_write_trace(rt, ra.profile_trace);
    if (ts != EG_OK) rc = fail_status(ts);
  }
  if (rc == 0 && ra.output_dir) rc = stage_files(&od, m, rt, &ra, losses);
  if (rc == 0 && ra.output_dir) rc = outdir_commit(&od);
  outdir_close(&od, rc == 0);
  if (rc == 0) rc = print_outputs(m, rt, &ra);
  if (rc == 0 && ra.profile) rc = print_profile(rt, &ra);
  free(losses);
  free(vals);
  eg_runtime_destroy(rt);
  eg_model_destroy(m);
  free(ra.input_specs);
  free(ra.skip_ops);
  free(ra.skip_nodes);
  return rc < 0 ? 0 : rc;
}


static const opt_command targets_command = {.name = "targets", .usage = usage_targets};

static int cmd_targets(int argc, char **argv) {
  int rc = opt_parse(&targets_command, argc, argv, NULL, NULL);
  if (rc) return rc < 0 ? 0 : rc;
  printf("%-8s %-26s %-5s %-6s %-6s %-9s %-9s %s\n", "soc", "product", "htp", "vtcm", "float",
         "soc_model", "precision", "note");
  for (int i = 0; i < eg_num_targets(); i++) {
    eg_target_info t;
    if (eg_get_target(i, &t) != EG_OK) continue;
    printf("%-8s %-26s V%-4d %2d MB  %-6s %-9d %-9s %s\n", t.soc, t.product, t.htp_arch,
           t.vtcm_mb, t.has_float ? "yes" : "no", t.soc_model, t.float_precision, t.note);
  }
  return 0;
}

/* ---- compile ---- */


typedef struct compile_args {
  const char *model, *report, *output;
  eg_compile_options opt;
  const char **skip_ops, **skip_nodes; /* the lists of opt (allocated by opt_parse) */
  bool no_fallback, quiet;
} compile_args;

static const opt_def compile_opts[] = {
    {.name = "--output", .alias = "-o", .kind = OPT_STRING, .arg = "PROGRAM.egp",
     OPT_AT(compile_args, output)},
    {.name = "--soc", .kind = OPT_STRING, .arg = "SOC", OPT_AT(compile_args, opt.soc)},
    {.name = "--report", .kind = OPT_STRING, .arg = "REPORT.json", OPT_AT(compile_args, report)},
    {.name = "--skip-op", .kind = OPT_LIST, .arg = "OP", OPT_AT(compile_args, skip_ops),
     OPT_AT2(compile_args, opt.num_skip_ops)},
    {.name = "--skip-node", .kind = OPT_LIST, .arg = "NAME", OPT_AT(compile_args, skip_nodes),
     OPT_AT2(compile_args, opt.num_skip_nodes)},
    {.name = "--no-fallback", .kind = OPT_FLAG, OPT_AT(compile_args, no_fallback)},
    {.name = "--precision", .kind = OPT_CHOICE, .arg = "fp16|fp32",
     OPT_AT(compile_args, opt.precision), .choices = precision_choices},
    {.name = "--quiet", .alias = "-q", .kind = OPT_FLAG, OPT_AT(compile_args, quiet)},
    {.name = "--dump-after", .kind = OPT_STRING, .arg = "PASS",
     OPT_AT(compile_args, opt.dump_after)},
};
static const opt_pos compile_pos[] = {{"model", offsetof(compile_args, model)}};
static const opt_command compile_command = {.name = "compile", .usage = usage_compile,
                                            OPT_OPTIONS(compile_opts), OPT_POSITIONALS(compile_pos),
                                            .n_required = 1, .synopsis = "MODEL.json"};

/* The options, then the rules between them and the folders of the files compile writes. */
static int parse_compile_args(int argc, char **argv, compile_args *ca) {
  int rc = opt_parse(&compile_command, argc, argv, ca, NULL);
  if (rc) return rc;
  ca->opt.struct_size = sizeof ca->opt;
  ca->opt.skip_ops = ca->skip_ops;
  ca->opt.skip_nodes = ca->skip_nodes;
  ca->opt.no_fallback = ca->no_fallback;
  if (!ca->opt.soc) {
    char names[256] = "";
    size_t used = 0;
    for (int i = 0; i < eg_num_targets() && used < sizeof names; i++) {
      eg_target_info t;
      if (eg_get_target(i, &t) == EG_OK)
        used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", t.soc);
    }
    return fail(EXIT_USAGE, "compile: no --soc given: choose one of %s", names);
  }
  /* where compile writes, checked before the passes run */
  rc = ca->output ? outdir_check_file("compile", "-o", ca->output) : 0;
  if (rc == 0 && ca->report) rc = outdir_check_file("compile", "--report", ca->report);
  return rc;
}

/* One row of the per-op table: an op target and its distinct CPU reasons with counts. */
typedef struct op_row {
  const char *target;
  int npu, cpu;
  double flops_npu, flops_cpu;
  int n_reasons;
  const char **reasons;
  int *counts;
} op_row;

static void free_rows(op_row *rows, int n) {
  for (int i = 0; i < n; i++) {
    free(rows[i].reasons);
    free(rows[i].counts);
  }
  free(rows);
}

/* Groups the report's nodes by op target (first-use order); NULL when out of memory. */
static op_row *op_rows(const eg_compile_report *rep, int *n_rows) {
  int n = eg_compile_report_num_nodes(rep);
  op_row *rows = calloc((size_t)n + 1, sizeof *rows);
  *n_rows = 0;
  if (!rows) return NULL;
  for (int i = 0; i < n; i++) {
    eg_placement_info p;
    if (eg_compile_report_node(rep, i, &p) != EG_OK) continue;
    int k = 0;
    while (k < *n_rows && strcmp(rows[k].target, p.target) != 0) k++;
    op_row *row = &rows[k];
    if (k == *n_rows) {
      (*n_rows)++;
      row->target = p.target;
      row->reasons = calloc((size_t)n + 1, sizeof(char *));
      row->counts = calloc((size_t)n + 1, sizeof(int));
      if (!row->reasons || !row->counts) {
        free_rows(rows, *n_rows);
        return NULL;
      }
    }
    if (p.placement == EG_PLACEMENT_NPU) {
      row->npu++;
      row->flops_npu += p.flops;
      continue;
    }
    row->cpu++;
    row->flops_cpu += p.flops;
    int r = 0;
    while (r < row->n_reasons && strcmp(row->reasons[r], p.reason) != 0) r++;
    if (r == row->n_reasons) row->reasons[row->n_reasons++] = p.reason;
    row->counts[r]++;
  }
  return rows;
}

/* "1.82 GFLOP", "41.3 kFLOP", "0 FLOP". */
static const char *fmt_flops(char *buf, size_t size, double f) {
  static const char *const unit[] = {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP"};
  int u = 0;
  while (f >= 1000.0 && u < 4) f /= 1000.0, u++;
  snprintf(buf, size, "%.3g %s", f, unit[u]);
  return buf;
}

/* An op row's share of the step's FLOPs ("12.3", "<0.1"; "-" for none). */
static void flop_share(char *buf, size_t size, double flops, double total) {
  if (!(flops > 0) || !(total > 0)) snprintf(buf, size, "-");
  else if (flops / total < 0.001) snprintf(buf, size, "<0.1");
  else snprintf(buf, size, "%.1f", 100.0 * flops / total);
}

static int print_compile_table(const eg_compile_report *rep, const char *model,
                               const char *output) {
  eg_target_info t;
  eg_compile_report_target(rep, &t);
  int n_rows, n = eg_compile_report_num_nodes(rep), on_npu = 0;
  op_row *rows = op_rows(rep, &n_rows);
  if (!rows) return fail(EXIT_FAIL, "compile: out of memory");
  printf("%s for %s (%s, HTP V%d, %s)\n", model, t.soc, t.product, t.htp_arch,
         t.has_float ? "fp16" : "no fp16");
  double total, npu_flops;
  eg_compile_report_flops(rep, &total, &npu_flops);
  printf("%-44s %5s %5s %6s %6s  %s\n", "op", "npu", "cpu", "%npu", "%cpu", "why on the CPU");
  for (int k = 0; k < n_rows; k++) {
    const op_row *row = &rows[k];
    char pn[16], pc[16];
    flop_share(pn, sizeof pn, row->flops_npu, total);
    flop_share(pc, sizeof pc, row->flops_cpu, total);
    on_npu += row->npu;
    printf("%-44s %5d %5d %6s %6s  ", row->target, row->npu, row->cpu, pn, pc);
    if (row->n_reasons == 0) printf("\n");
    for (int r = 0; r < row->n_reasons; r++) {
      if (r > 0) printf("%-44s %5s %5s %6s %6s  ", "", "", "", "", "");
      if (row->n_reasons > 1) printf("(%d) ", row->counts[r]);
      printf("%s\n", row->reasons[r]);
    }
  }
  free_rows(rows, n_rows);
  int n_parts = eg_compile_report_num_partitions(rep);
  printf("total: %d nodes, %d on the NPU in %d partition%s, %d on the CPU\n", n, on_npu, n_parts,
         n_parts == 1 ? "" : "s", n - on_npu);
  char all_s[32], npu_s[32], cpu_s[32];
  printf("flops: %s per step (estimated), %.1f %% on the NPU (%s), %s on the CPU\n",
         fmt_flops(all_s, sizeof all_s, total), total > 0 ? 100.0 * npu_flops / total : 0.0,
         fmt_flops(npu_s, sizeof npu_s, npu_flops), fmt_flops(cpu_s, sizeof cpu_s,
                                                             total - npu_flops));
  for (int k = 0; k < n_parts; k++) {
    int count;
    const int32_t *nodes;
    eg_placement_info first, last;
    if (eg_compile_report_partition(rep, k, &count, &nodes) != EG_OK ||
        eg_compile_report_node(rep, nodes[0], &first) != EG_OK ||
        eg_compile_report_node(rep, nodes[count - 1], &last) != EG_OK)
      continue;
    printf("partition %d: %d node%s, %s .. %s\n", k, count, count == 1 ? "" : "s", first.name,
           last.name);
  }
  if (n_parts > 0)
    printf("precision: the NPU partitions' float tensors are stored in %s\n",
           eg_compile_report_precision(rep));
  if (!output) printf("placement only: -o PROGRAM.egp writes the compiled program\n");
  return 0;
}

/* --no-fallback failed: the library's one-line message, then every CPU node and why. */
static int fail_no_fallback(const eg_compile_report *rep) {
  fail(EXIT_FAIL, "%s", eg_last_error());
  for (int i = 0; i < eg_compile_report_num_nodes(rep); i++) {
    eg_placement_info p;
    if (eg_compile_report_node(rep, i, &p) == EG_OK && p.placement == EG_PLACEMENT_CPU)
      fprintf(stderr, "  %-32s %-44s %s\n", p.name, p.target, p.reason);
  }
  return EXIT_FAIL;
}

static int cmd_compile(int argc, char **argv) {
  compile_args ca = {0};
  int rc = parse_compile_args(argc, argv, &ca);
  eg_model *m = NULL;
  eg_compile_report *rep = NULL;
  eg_status s = EG_OK;
  eg_program_info prog;
  if (rc == 0) rc = load_model("compile", "a graph JSON", ca.model, &m);
  if (rc == 0 && eg_model_program_info(m, &prog) == EG_OK)
    rc = fail(EXIT_USAGE, "compile: %s: a program compiled for %s already: compile takes a graph "
              "JSON (MODEL.json); run and inspect take a compiled program", ca.model, prog.soc);
  if (rc == 0) s = eg_compile_report_create(m, &ca.opt, &rep);
  eg_status placed = s;
  if (rc == 0 && s != EG_OK && !rep) rc = fail_status(s);
  if (rc == 0) { /* a report exists: placement succeeded, or --no-fallback failed */
    for (int i = 0; i < eg_compile_report_num_warnings(rep); i++)
      fprintf(stderr, "edgegrad: warning: %s\n", eg_compile_report_warning(rep, i));
    if (!ca.quiet) rc = print_compile_table(rep, ca.model, ca.output);
    for (int i = 0; !ca.quiet && i < eg_compile_report_num_notes(rep); i++)
      printf("note: %s\n", eg_compile_report_note(rep, i));
    if (rc == 0 && ca.report && (s = eg_compile_report_write_json(rep, ca.report)) != EG_OK)
      rc = fail_status(s);
    if (rc == 0 && placed == EG_OK && ca.output) {
      struct stat st;
      if ((s = eg_model_save_compiled(m, &ca.opt, ca.output)) != EG_OK) rc = fail_status(s);
      else if (!ca.quiet && stat(ca.output, &st) == 0)
        printf("wrote %s (%lld bytes)\n", ca.output, (long long)st.st_size);
    }
    if (rc == 0 && placed != EG_OK) rc = fail_no_fallback(rep);
  }
  eg_compile_report_destroy(rep);
  eg_model_destroy(m);
  free(ca.skip_ops);
  free(ca.skip_nodes);
  return rc < 0 ? 0 : rc;
}

/* ---- inspect ---- */


static const char *tensor_name(const eg_model *m, int k, int32_t id) {
  eg_npu_tensor_info t;
  return id >= 0 && eg_model_npu_tensor(m, k, id, &t) == EG_OK ? t.name : NULL;
}

static json_t *inspect_partition_json(const eg_model *m, int k, const eg_npu_partition_info *pi) {
  json_t *part = json_object(), *tensors = json_array(), *ops = json_array();
  json_object_set_new(part, "name", json_string(pi->name));
  json_object_set_new(part, "nodes", json_integer(pi->num_nodes));
  json_object_set_new(part, "first_node", json_string(pi->first_node));
  json_object_set_new(part, "last_node", json_string(pi->last_node));
  json_object_set_new(part, "inputs", json_integer(pi->num_inputs));
  json_object_set_new(part, "outputs", json_integer(pi->num_outputs));
  for (int i = 0; i < pi->num_tensors; i++) {
    eg_npu_tensor_info t;
    if (eg_model_npu_tensor(m, k, i, &t) != EG_OK) continue;
    json_t *shape = json_array();
    for (int d = 0; d < t.rank; d++) json_array_append_new(shape, json_integer(t.dims[d]));
    json_t *tj = json_pack("{s:s, s:s, s:s, s:o, s:I}", "name", t.name, "type", t.type, "dtype",
                           t.dtype, "shape", shape, "bytes", (json_int_t)t.nbytes);
    if (t.precision) json_object_set_new(tj, "precision", json_string(t.precision));
    if (t.encoding) { /* a quantized tensor: its encoding */
      json_t *sc = json_array(), *of = json_array();
      for (int j = 0; j < t.num_scales; j++) {
        json_array_append_new(sc, json_real(t.scales[j]));
        json_array_append_new(of, json_integer(t.offsets[j]));
      }
      json_object_set_new(tj, "quant", json_pack("{s:s, s:i, s:o, s:o}", "encoding", t.encoding,
                                                 "axis", t.quant_axis, "scales", sc, "offsets",
                                                 of));
    }
    json_array_append_new(tensors, tj);
  }
  for (int i = 0; i < pi->num_ops; i++) {
    eg_npu_op_info o;
    if (eg_model_npu_op(m, k, i, &o) != EG_OK) continue;
    json_t *ins = json_array(), *outs = json_array(), *params = json_object();
    for (int j = 0; j < o.num_inputs; j++) {
      const char *n = tensor_name(m, k, o.inputs[j]);
      json_array_append_new(ins, n ? json_string(n) : json_null());
    }
    for (int j = 0; j < o.num_outputs; j++)
      json_array_append_new(outs, json_string(tensor_name(m, k, o.outputs[j])));
    for (int j = 0; j < o.num_params; j++) {
      const char *name;
      char value[512];
      if (eg_model_npu_op_param(m, k, i, j, &name, value, sizeof value) != EG_OK) continue;
      json_t *v = json_loads(value, JSON_DECODE_ANY, NULL);
      json_object_set_new(params, name, v ? v : json_string(value));
    }
    json_array_append_new(ops, json_pack("{s:s, s:s, s:o, s:o, s:o}", "name", o.name, "type",
                                         o.type, "inputs", ins, "outputs", outs, "params", params));
  }
  json_object_set_new(part, "tensors", tensors);
  json_object_set_new(part, "ops", ops);
  return part;
}

static void inspect_partition_text(const eg_model *m, int k, const eg_npu_partition_info *pi) {
  printf("partition %d (%s): %d node%s (%s .. %s), %d input%s, %d output%s, %d tensors, %d ops\n",
         k, pi->name, pi->num_nodes, pi->num_nodes == 1 ? "" : "s", pi->first_node,
         pi->last_node, pi->num_inputs, pi->num_inputs == 1 ? "" : "s", pi->num_outputs,
         pi->num_outputs == 1 ? "" : "s", pi->num_tensors, pi->num_ops);
  printf("  tensors:\n");
  for (int i = 0; i < pi->num_tensors; i++) {
    eg_npu_tensor_info t;
    if (eg_model_npu_tensor(m, k, i, &t) != EG_OK) continue;
    char shape[256];
    eg_tensor as_tensor = {.rank = t.rank};
    for (int d = 0; d < t.rank; d++) as_tensor.shape[d] = t.dims[d];
    format_shape(shape, sizeof shape, &as_tensor);
    printf("    %%%-3d %-32s %-9s %-8s %-20s %zu bytes%s%s\n", i, t.name, t.type, t.dtype, shape,
           t.nbytes, t.precision ? ", stored " : "", t.precision ? t.precision : "");
  }
  printf("  ops:\n");
  for (int i = 0; i < pi->num_ops; i++) {
    eg_npu_op_info o;
    if (eg_model_npu_op(m, k, i, &o) != EG_OK) continue;
    printf("    %-24s %s(", o.name, o.type);
    for (int j = 0; j < o.num_inputs; j++) {
      const char *n = tensor_name(m, k, o.inputs[j]);
      printf("%s%s", j ? ", " : "", n ? n : "-");
    }
    printf(") -> (");
    for (int j = 0; j < o.num_outputs; j++)
      printf("%s%s", j ? ", " : "", tensor_name(m, k, o.outputs[j]));
    printf(")");
    for (int j = 0; j < o.num_params; j++) {
      const char *name;
      char value[512];
      if (eg_model_npu_op_param(m, k, i, j, &name, value, sizeof value) == EG_OK)
        printf(" %s=%s", name, value);
    }
    printf("\n");
  }
}

typedef struct inspect_args {
  const char *path;
  bool json;
} inspect_args;

static const opt_def inspect_opts[] = {
    {.name = "--json", .kind = OPT_FLAG, OPT_AT(inspect_args, json)}};
static const opt_pos inspect_pos[] = {{"program", offsetof(inspect_args, path)}};
static const opt_command inspect_command = {.name = "inspect", .usage = usage_inspect,
                                            OPT_OPTIONS(inspect_opts), OPT_POSITIONALS(inspect_pos),
                                            .n_required = 1, .synopsis = "PROGRAM.egp"};

static int cmd_inspect(int argc, char **argv) {
  inspect_args ia = {0};
  int rc = opt_parse(&inspect_command, argc, argv, &ia, NULL);
  if (rc) return rc < 0 ? 0 : rc;
  const char *path = ia.path;
  const bool as_json = ia.json;
  eg_model *m = NULL;
  rc = load_model("inspect", "a compiled program", path, &m);
  if (rc) return rc;
  eg_program_info pi;
  if (eg_model_program_info(m, &pi) != EG_OK) {
    eg_model_destroy(m);
    return fail(EXIT_USAGE, "inspect: %s is a graph file, not a compiled program: write one with "
                "edgegrad compile %s --soc SOC -o PROGRAM.egp", path, path);
  }
  eg_target_info t = {.soc = pi.soc, .product = "?"};
  for (int i = 0; i < eg_num_targets(); i++)
    if (eg_get_target(i, &t) == EG_OK && strcmp(t.soc, pi.soc) == 0) break;
  int nodes = pi.num_npu_nodes + pi.num_cpu_nodes;
  if (as_json) {
    json_t *root = json_object(), *parts = json_array();
    json_object_set_new(root, "file", json_string(path));
    json_object_set_new(root, "soc", json_string(pi.soc));
    json_object_set_new(root, "htp_arch", json_integer(t.htp_arch));
    json_object_set_new(root, "precision", json_string(pi.precision));
    json_object_set_new(root, "nodes", json_integer(nodes));
    json_object_set_new(root, "npu_nodes", json_integer(pi.num_npu_nodes));
    json_object_set_new(root, "cpu_nodes", json_integer(pi.num_cpu_nodes));
    json_object_set_new(root, "steps", json_integer(pi.num_steps));
    for (int k = 0; k < pi.num_partitions; k++) {
      eg_npu_partition_info p;
      if (eg_model_npu_partition(m, k, &p) == EG_OK)
        json_array_append_new(parts, inspect_partition_json(m, k, &p));
    }
    json_object_set_new(root, "partitions", parts);
    json_object_set_new(root, "static_bytes", json_integer((json_int_t)pi.static_bytes));
    json_object_set_new(root, "file_bytes", json_integer((json_int_t)pi.file_bytes));
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (text) puts(text);
    else rc = fail(EXIT_FAIL, "inspect: out of memory");
    free(text);
  } else {
    printf("%s: compiled for %s (%s, HTP V%d), precision %s\n", path, pi.soc, t.product,
           t.htp_arch, pi.precision);
    printf("nodes: %d (%d on the NPU in %d partition%s, %d on the CPU), %d steps\n", nodes,
           pi.num_npu_nodes, pi.num_partitions, pi.num_partitions == 1 ? "" : "s",
           pi.num_cpu_nodes, pi.num_steps);
    for (int k = 0; k < pi.num_partitions; k++) {
      eg_npu_partition_info p;
      if (eg_model_npu_partition(m, k, &p) == EG_OK) inspect_partition_text(m, k, &p);
    }
    printf("totals: static weight bytes %zu, file bytes %zu\n", pi.static_bytes, pi.file_bytes);
  }
  eg_model_destroy(m);
  return rc;
}

/* ---- export-onnx ---- */


/* Writes every partition into a staging folder inside `dir`, then renames them into place:
 * DIR gets all the models or none. */
static int export_partitions(const eg_model *m, const eg_program_info *pi, const char *dir) {
  char *tmp = outdir_join(dir, ".edgegrad-tmp.XXXXXX", "");
  if (!tmp) return fail(EXIT_FAIL, "export-onnx: out of memory");
  if (!mkdtemp(tmp)) {
    int rc = fail(EXIT_FAIL, "export-onnx: %s: cannot create a staging folder in it (%s)", dir,
                  strerror(errno));
    free(tmp);
    return rc;
  }
  int rc = 0, written = 0;
  for (int k = 0; k < pi->num_partitions && rc == 0; k++, written++) {
    eg_npu_partition_info p;
    eg_status s = eg_model_npu_partition(m, k, &p);
    char *path = s == EG_OK ? outdir_join(tmp, p.name, ".onnx") : NULL;
    if (s == EG_OK && !path) rc = fail(EXIT_FAIL, "export-onnx: out of memory");
    else if (s == EG_OK) s = eg_model_export_onnx(m, k, path);
    if (s != EG_OK) rc = s == EG_ERR_IO ? fail(EXIT_FAIL, "%s", eg_last_error()) : fail_status(s);
    free(path);
  }
  for (int k = 0; k < written; k++) { /* move each into DIR (rc == 0), or remove it */
    eg_npu_partition_info p;
    if (eg_model_npu_partition(m, k, &p) != EG_OK) continue;
    char *from = outdir_join(tmp, p.name, ".onnx"), *to = outdir_join(dir, p.name, ".onnx");
    if (!from || !to) rc = rc ? rc : fail(EXIT_FAIL, "export-onnx: out of memory");
    else if (rc == 0 && rename(from, to) != 0)
      rc = fail(EXIT_FAIL, "export-onnx: %s: cannot move into place (%s)", to, strerror(errno));
    else if (rc == 0)
      printf("wrote %s (%d QNN ops)\n", to, p.num_ops);
    if (from) remove(from);
    free(from);
    free(to);
  }
  rmdir(tmp);
  free(tmp);
  return rc;
}

typedef struct export_onnx_args {
  const char *path, *dir;
} export_onnx_args;

static const opt_pos export_onnx_pos[] = {{"program", offsetof(export_onnx_args, path)},
                                          {"DIR", offsetof(export_onnx_args, dir)}};
static const opt_command export_onnx_command = {
    .name = "export-onnx", .usage = usage_export_onnx, OPT_POSITIONALS(export_onnx_pos),
    .n_required = 2, .synopsis = "PROGRAM.egp DIR"};

static int cmd_export_onnx(int argc, char **argv) {
  export_onnx_args ea = {0};
  int rc = opt_parse(&export_onnx_command, argc, argv, &ea, NULL);
  if (rc) return rc < 0 ? 0 : rc;
  const char *path = ea.path, *dir = ea.dir;
  rc = outdir_check_dir("export-onnx", "DIR", dir);
  if (rc) return rc;
  eg_model *m = NULL;
  rc = load_model("export-onnx", "a compiled program", path, &m);
  if (rc) return rc;
  eg_program_info pi;
  if (eg_model_program_info(m, &pi) != EG_OK) {
    eg_model_destroy(m);
    return fail(EXIT_USAGE, "export-onnx: %s is a graph file, not a compiled program: write one "
                "with `edgegrad compile %s --soc SOC -o PROGRAM.egp`", path, path);
  }
  if (pi.num_partitions == 0) {
    fprintf(stderr, "export-onnx: %s has no NPU partition (everything runs on the CPU): nothing "
            "to write\n", path);
    eg_model_destroy(m);
    return 0;
  }
  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    rc = fail(EXIT_USAGE, "export-onnx: DIR %s: cannot create (%s)", dir, strerror(errno));
  if (rc == 0) rc = export_partitions(m, &pi, dir);
  eg_model_destroy(m);
  return rc;
}

/* The library's log messages: the --dump-after text IR (debug) on stdout, where the command's
 * output goes; anything else on stderr. */
static void cli_log(eg_log_level level, const char *message, void *user) {
  (void)user;
  FILE *to = level == EG_LOG_DEBUG ? stdout : stderr;
  size_t n = strlen(message);
  fputs(message, to);
  if (n == 0 || message[n - 1] != '\n') fputc('\n', to);
}

/* edgegrad's own options, before a command. */
typedef struct main_args {
  bool version;
} main_args;

static const opt_def main_opts[] = {
    {.name = "--version", .kind = OPT_FLAG, OPT_AT(main_args, version)}};
const opt_command cli_options = {.usage = usage_main, OPT_OPTIONS(main_opts)};

const cli_command cli_commands[] = {
    {"run", cmd_run, &run_command},
    {"train", cmd_train, &train_command},
    {"info", cmd_info, &info_command},
    {"targets", cmd_targets, &targets_command},
    {"compile", cmd_compile, &compile_command},
    {"inspect", cmd_inspect, &inspect_command},
    {"export-onnx", cmd_export_onnx, &export_onnx_command},
    {NULL, NULL, NULL},
};

int main(int argc, char **argv) {
  eg_set_log_callback(cli_log, NULL);
  if (argc < 2) {
    fputs(usage_main, stderr);
    return EXIT_USAGE;
  }
  if (argv[1][0] == '-') { /* --help, --version */
    main_args ma = {0};
    int rc = opt_parse(&cli_options, argc - 1, argv + 1, &ma, NULL);
    if (rc == 0 && ma.version) printf("edgegrad %s\n", eg_version_string());
    return rc < 0 ? 0 : rc;
  }
  char names[256] = "";
  size_t used = 0;
  int n = 0;
  while (cli_commands[n].name) n++;
  for (int k = 0; k < n; k++) {
    if (strcmp(argv[1], cli_commands[k].name) == 0) return cli_commands[k].main(argc - 2, argv + 2);
    if (used < sizeof names)
      used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                               k == 0 ? "" : k == n - 1 ? " or " : ", ", cli_commands[k].name);
  }
  return fail(EXIT_USAGE, "command '%s' unknown: use %s (see edgegrad --help)", argv[1], names);
}
