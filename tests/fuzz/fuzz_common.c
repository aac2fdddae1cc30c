/* fuzz_common.c — temporary files, error reset, and the describe / run walk the fuzz targets
 * share (fuzz_common.h). */
#include "fuzz_common.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ir/graph.h"
#include "runtime/model.h"
#include "util/checked.h"
#include "util/error.h"

/* Where the walks below put what they read, so the compiler cannot drop the reads. */
static volatile size_t eg_fuzz_sink;

static char tmp_dir[512];
static char tmp_path[640];

/* Removes `path` and, for a folder, everything in it (symbolic links removed, never
 * followed): the targets that drive the CLI leave files and folders of their own making. */
static void remove_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    unlink(path);
    return;
  }
  DIR *d = opendir(path);
  for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char sub[4096];
    if ((size_t)snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) < sizeof sub) remove_tree(sub);
  }
  if (d) closedir(d);
  rmdir(path);
}

static void remove_tmp_dir(void) { remove_tree(tmp_dir); }

static int ensure_tmp_dir(void) {
  if (tmp_dir[0]) return 0;
  const char *base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  snprintf(tmp_dir, sizeof tmp_dir, "%s/edgegrad-fuzz.XXXXXX", base);
  if (!mkdtemp(tmp_dir)) {
    perror("fuzz: mkdtemp");
    tmp_dir[0] = '\0';
    return -1;
  }
  atexit(remove_tmp_dir);
  return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  /* One thread: the fuzzer runs one input at a time, and the machine is shared. OpenMP and
   * OpenBLAS read these when they start, which is after this. */
  setenv("OMP_NUM_THREADS", "1", 0);
  setenv("OPENBLAS_NUM_THREADS", "1", 0);
  return ensure_tmp_dir();
}

const char *eg_fuzz_dir(void) { return ensure_tmp_dir() == 0 ? tmp_dir : NULL; }

const char *eg_fuzz_path(const char *name) {
  if (ensure_tmp_dir() != 0) return NULL;
  snprintf(tmp_path, sizeof tmp_path, "%s/%s", tmp_dir, name);
  return tmp_path;
}

const char *eg_fuzz_write_file(const char *name, const void *data, size_t size) {
  const char *path = eg_fuzz_path(name);
  if (!path) return NULL;
  FILE *f = fopen(path, "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
    perror(path);
    return NULL;
  }
  return path;
}

void eg_fuzz_clear_error(void) { eg_error(EG_OK, "%s", ""); }

const char *eg_fuzz_input(const char *name, const uint8_t *data, size_t size) {
  eg_fuzz_clear_error();
  const char *path = eg_fuzz_write_file(name, data, size);
  if (!path) abort();
  return path;
}

void eg_fuzz_read_bytes(const void *data, size_t size) {
  const unsigned char *p = data;
  size_t sum = 0;
  for (size_t i = 0; i < size; i++) sum += p[i];
  eg_fuzz_sink += sum;
}

/* Touches every byte of a string the library returned, so a dangling one shows under ASan. */
static size_t touch(const char *s) { return s ? strlen(s) : 0; }

static void describe_program(const eg_model *m) {
  eg_program_info pi;
  if (!eg_model_is_compiled(m) || eg_model_program_info(m, &pi) != EG_OK) return;
  size_t sink = touch(pi.soc);
  for (int k = 0; k < pi.num_partitions; k++) {
    eg_npu_partition_info p;
    if (eg_model_npu_partition(m, k, &p) != EG_OK) continue;
    sink += touch(p.name) + touch(p.first_node) + touch(p.last_node);
    for (int i = 0; i < p.num_nodes; i++) sink += (size_t)p.nodes[i];
    for (int i = 0; i < p.num_tensors; i++) {
      eg_npu_tensor_info t;
      if (eg_model_npu_tensor(m, k, i, &t) != EG_OK) continue;
      sink += touch(t.name) + touch(t.type) + touch(t.dtype) + touch(t.encoding) + t.nbytes;
      for (int j = 0; j < t.num_scales; j++) sink += (size_t)t.offsets[j] + (t.scales[j] > 0);
    }
    for (int i = 0; i < p.num_ops; i++) {
      eg_npu_op_info o;
      if (eg_model_npu_op(m, k, i, &o) != EG_OK) continue;
      sink += touch(o.name) + touch(o.type);
      for (int j = 0; j < o.num_inputs; j++) sink += (size_t)o.inputs[j];
      for (int j = 0; j < o.num_outputs; j++) sink += (size_t)o.outputs[j];
      for (int j = 0; j < o.num_params; j++) {
        const char *name;
        char value[512];
        if (eg_model_npu_op_param(m, k, i, j, &name, value, sizeof value) == EG_OK)
          sink += touch(name) + touch(value);
      }
    }
  }
  eg_fuzz_sink += sink;
}

void eg_fuzz_describe(const eg_model *m) {
  size_t sink = 0;
  eg_tensor_desc d;
  for (int i = 0; i < eg_model_num_inputs(m); i++)
    if (eg_model_input(m, i, &d) == EG_OK) sink += touch(d.name) + (size_t)d.tensor.rank;
  for (int i = 0; i < eg_model_num_outputs(m); i++)
    if (eg_model_output(m, i, &d) == EG_OK) sink += touch(d.name) + (size_t)d.tensor.rank;
  for (int i = 0; i < eg_model_num_op_kinds(m); i++) {
    const char *target;
    int count;
    if (eg_model_op_kind(m, i, &target, &count) == EG_OK) sink += touch(target) + (size_t)count;
  }
  eg_model_stats st;
  eg_model_get_stats(m, &st);
  int n_params, n_buffers;
  eg_model_training_io(m, &n_params, &n_buffers);
  eg_fuzz_sink += sink + (size_t)st.num_nodes + (size_t)n_params + (size_t)n_buffers;
  describe_program(m);
}

static size_t add_sat(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }

size_t eg_fuzz_run_bytes(const eg_model *model) {
  const eg_graph *g = model->graph;
  size_t total = 0;
  for (int32_t i = 0; i < g->n_values; i++) {
    const eg_value *v = &g->values[i];
    if (v->kind != EG_VALUE_TENSOR) continue;
    int64_t numel = eg_shape_numel(v->shape, v->rank, EG_MAX_NUMEL);
    size_t bytes;
    if (numel < 0 || !eg_count_bytes(numel, eg_dtype_size(v->dtype), &bytes)) return SIZE_MAX;
    total = add_sat(total, bytes);
  }
  size_t scratch = 0;
  for (int32_t i = 0; i < g->n_nodes; i++)
    if (g->nodes[i].scratch_bytes > scratch) scratch = g->nodes[i].scratch_bytes;
  return add_sat(total, scratch);
}

/* A small, fixed pattern of a dtype: floats in [-0.75, 0.75], integers and bools 0 (a valid
 * class index or mask for every graph). */
static void fill_pattern(eg_tensor *t, int64_t numel) {
  for (int64_t i = 0; i < numel; i++) {
    float f = (float)((i % 7) - 3) * 0.25f;
    switch (t->dtype) {
      case EG_DTYPE_FLOAT32: ((float *)t->data)[i] = f; break;
      case EG_DTYPE_FLOAT64: ((double *)t->data)[i] = f; break;
      default: return; /* calloc'ed: zero */
    }
  }
}

void eg_fuzz_run(const eg_model *model, eg_runtime *rt) {
  for (int i = 0; i < eg_model_num_inputs(model); i++) {
    eg_tensor_desc d;
    if (eg_model_input(model, i, &d) != EG_OK) continue;
    eg_tensor t = d.tensor;
    int64_t numel = eg_tensor_numel(&t);
    size_t bytes = (size_t)numel * eg_dtype_size(t.dtype); /* bounded by eg_fuzz_run_bytes */
    t.data = calloc(1, bytes ? bytes : 1);
    if (!t.data) continue;
    fill_pattern(&t, numel);
    eg_runtime_set_input(rt, d.name, &t);
    free(t.data);
  }
  if (eg_runtime_run(rt) != EG_OK) return;
  for (int i = 0; i < eg_model_num_outputs(model); i++) {
    eg_tensor out;
    if (eg_runtime_output(rt, i, &out) == EG_OK)
      eg_fuzz_read_bytes(out.data, (size_t)eg_tensor_numel(&out) * eg_dtype_size(out.dtype));
  }
  eg_optimizer_options o;
  eg_optimizer_defaults(EG_OPTIMIZER_SGD, &o);
  eg_optimizer *opt = NULL;
  if (eg_optimizer_create(rt, &o, &opt) == EG_OK) eg_optimizer_step(opt);
  eg_optimizer_destroy(opt);
}
