/* test_hostile_frontend.c — the .npy, safetensors and graph JSON readers against files built to
 * break them (found by fuzzing): a .npy header that ends inside 'descr'; shapes whose element
 * count wraps to zero or hides behind a zero dimension ([2^40, 2^40], [2^62, 4, 0]); empty
 * names; a safetensors size error that must quote the real file size; and a 100k-node graph
 * whose duplicate-name check must not compare every pair. Every rejection is a status and one
 * line naming the file, what is wrong and the rule. Run under ASan+UBSan by `make check`; the
 * hostile files are written to a temporary folder at run time. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgegrad.h"
#include "eg_test.h"
#include "eg_test_files.h"
#include "compiler/frontend/frontend.h"
#include "util/file.h"

/* The message is one line that names the file and contains `needle`. */
static void check_message(const char *file, const char *needle) {
  const char *msg = eg_last_error();
  EG_CHECK_MSG(strstr(msg, needle) != NULL, "message '%s' lacks '%s'", msg, needle);
  EG_CHECK_MSG(strstr(msg, file) != NULL, "message '%s' does not name %s", msg, file);
  EG_CHECK(strchr(msg, '\n') == NULL);
}

/* ---- .npy ---- */

/* Writes a version 1.0 .npy file: magic, version, u16 header length, `header` as given (no
 * padding: the reader must not rely on it), then `ndata` zero bytes. */
static void write_npy(const char *name, const char *header, size_t ndata) {
  size_t hl = strlen(header), n = 10 + hl + ndata;
  unsigned char *b = calloc(n, 1);
  memcpy(b, "\x93NUMPY\x01\x00", 8);
  b[8] = (unsigned char)(hl & 0xff);
  b[9] = (unsigned char)(hl >> 8);
  memcpy(b + 10, header, hl);
  write_bytes(name, b, n);
  free(b);
}

static void expect_npy_reject(const char *header, size_t ndata, eg_status want,
                              const char *needle) {
  write_npy("h.npy", header, ndata);
  eg_tensor t;
  eg_status s = eg_npy_load(path_in("h.npy"), &t);
  EG_CHECK_MSG(s == want, "header \"%s\": status %d, wanted %d (%s)", header, (int)s, (int)want,
               eg_last_error());
  EG_CHECK(t.data == NULL);
  if (s != EG_OK) check_message("h.npy", needle);
  eg_tensor_free(&t);
  /* the same bytes held in memory (an .npz member) are refused alike */
  void *bytes = NULL;
  size_t size = 0;
  EG_CHECK(eg_file_read(path_in("h.npy"), 1 << 20, &bytes, &size) == EG_OK);
  s = eg_npy_parse("mem.npy", bytes, size, &t);
  EG_CHECK_MSG(s == want, "in memory: header \"%s\": status %d, wanted %d", header, (int)s,
               (int)want);
  EG_CHECK(t.data == NULL);
  if (s != EG_OK) EG_CHECK_MSG(strstr(eg_last_error(), needle) && strstr(eg_last_error(),
                                                                         "mem.npy"),
                               "in memory: '%s' lacks '%s'", eg_last_error(), needle);
  free(bytes);
}

/* A header that stops right after the quote opening 'descr' (a 21-byte file) used to be read
 * past its end. */
static void test_npy_header_ends_inside_descr(void) {
  write_npy("h.npy", "{'descr': '", 0);
  FILE *f = fopen(path_in("h.npy"), "rb");
  fseek(f, 0, SEEK_END);
  EG_CHECK(ftell(f) == 21);
  fclose(f);
  expect_npy_reject("{'descr': '", 0, EG_ERR_FORMAT, "'descr' is malformed");
  expect_npy_reject("{'descr': '<", 0, EG_ERR_FORMAT, "'descr' is malformed");
  expect_npy_reject("{'descr': '<f4", 0, EG_ERR_FORMAT, "'descr' is malformed");
  expect_npy_reject("{'descr': ''", 0, EG_ERR_FORMAT, "'descr' is malformed");
  expect_npy_reject("{'descr': '<'", 0, EG_ERR_FORMAT, "'descr' is malformed");
  expect_npy_reject("{'descr': '<f4f4f4f4f'", 0, EG_ERR_FORMAT, "'descr' is malformed");
  expect_npy_reject("{'descr': '<f4'", 0, EG_ERR_FORMAT, "fortran_order");
  /* every prefix of a good header is read without reading past it; those that stop before
   * the shape's ')' are refused */
  const char *good = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
  size_t close = (size_t)(strchr(good, ')') - good);
  char cut[128];
  for (size_t n = 0; n < strlen(good); n++) {
    memcpy(cut, good, n);
    cut[n] = 0;
    write_npy("h.npy", cut, 4);
    eg_tensor t;
    eg_status s = eg_npy_load(path_in("h.npy"), &t);
    EG_CHECK_MSG(n > close || s != EG_OK, "accepted header \"%s\"", cut);
    eg_tensor_free(&t);
  }
}

/* (2^40, 2^40) used to wrap to zero elements and load with no data. */
static void test_npy_shape_wraps(void) {
  expect_npy_reject("{'descr': '<f4', 'fortran_order': False, "
                    "'shape': (1099511627776, 1099511627776), }", 0, EG_ERR_FORMAT,
                    "shape [1099511627776, 1099511627776] too large");
  expect_npy_reject("{'descr': '<f4', 'fortran_order': False, "
                    "'shape': (1099511627776, 1099511627776, 0), }", 0, EG_ERR_FORMAT, "2^40");
  expect_npy_reject("{'descr': '<u1', 'fortran_order': False, "
                    "'shape': (65536, 65536, 65536, 65536), }", 0, EG_ERR_FORMAT, "2^40");
  expect_npy_reject("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627777,), }", 0,
                    EG_ERR_FORMAT, "shape[0] = 1099511627777 too large");
  /* 2^40 elements of f8 need 8 TiB: refused by size, no allocation attempted */
  expect_npy_reject("{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }", 0,
                    EG_ERR_FORMAT, "data bytes but shape and dtype need 8796093022208");
  /* what the rule allows: empty arrays, even with a dimension of 2^40 */
  const char *ok[] = {"{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }",
                      "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 0), }"};
  for (int k = 0; k < 2; k++) {
    write_npy("h.npy", ok[k], 0);
    eg_tensor t;
    EG_CHECK_MSG(eg_npy_load(path_in("h.npy"), &t) == EG_OK, "%s", eg_last_error());
    EG_CHECK(t.rank == 2 && t.shape[1] == (k == 0 ? 3 : 0));
    eg_tensor_free(&t);
  }
}

/* ---- safetensors ---- */

/* Writes an 8-byte header length, `header`, then `ndata` zero bytes. */
static void write_st(const char *name, const char *header, size_t ndata) {
  size_t hl = strlen(header), n = 8 + hl + ndata;
  unsigned char *b = calloc(n, 1);
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)hl >> (8 * i));
  memcpy(b + 8, header, hl);
  write_bytes(name, b, n);
  free(b);
}

static void expect_st_reject(const char *header, size_t ndata, const char *needle) {
  write_st("h.safetensors", header, ndata);
  eg_safetensors *st = NULL;
  eg_status s = eg_safetensors_load(path_in("h.safetensors"), &st);
  EG_CHECK_MSG(s == EG_ERR_FORMAT, "header %s: status %d (%s)", header, (int)s, eg_last_error());
  EG_CHECK(st == NULL);
  if (s != EG_OK) check_message("h.safetensors", needle);
  else eg_safetensors_destroy(st);
}

/* [2^40, 2^40] with data_offsets [0, 0] used to wrap to zero elements and load. */
static void test_safetensors_shape_wraps(void) {
  expect_st_reject("{\"w\":{\"dtype\":\"F32\",\"shape\":[1099511627776,1099511627776],"
                   "\"data_offsets\":[0,0]}}", 0,
                   "tensor 'w': shape [1099511627776, 1099511627776] too large");
  expect_st_reject("{\"w\":{\"dtype\":\"U8\",\"shape\":[1099511627776,1099511627776,0],"
                   "\"data_offsets\":[0,0]}}", 0, "2^40");
  expect_st_reject("{\"w\":{\"dtype\":\"U8\",\"shape\":[65536,65536,65536,65536],"
                   "\"data_offsets\":[0,0]}}", 0, "2^40");
  expect_st_reject("{\"w\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4,0],"
                   "\"data_offsets\":[0,0]}}", 0, "shape[0] is not a size in [0, 2^40]");
  /* allowed by the rule: no elements, no bytes */
  write_st("h.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1099511627776,0],"
           "\"data_offsets\":[0,0]}}", 0);
  eg_safetensors *st = NULL;
  EG_CHECK_MSG(eg_safetensors_load(path_in("h.safetensors"), &st) == EG_OK, "%s",
               eg_last_error());
  int n = 0;
  eg_safetensors_entries(st, &n);
  const eg_safetensors_entry *e = n == 1 ? eg_safetensors_find(st, "w") : NULL;
  EG_CHECK(e && e->t.rank == 2 && eg_tensor_numel(&e->t) == 0);
  eg_safetensors_destroy(st);
}

/* The size in the message is the file's, not 0 from the struct already cleared. */
static void test_safetensors_size_message(void) {
  unsigned char b[40] = {0};
  b[0] = 0xe8; /* header length 1000 in a 40-byte file */
  b[1] = 0x03;
  write_bytes("h.safetensors", b, sizeof b);
  eg_safetensors *st = NULL;
  EG_CHECK(eg_safetensors_load(path_in("h.safetensors"), &st) == EG_ERR_FORMAT);
  check_message("h.safetensors", "header length 1000 exceeds the file (40 bytes)");
  write_bytes("h.safetensors", b, 5);
  EG_CHECK(eg_safetensors_load(path_in("h.safetensors"), &st) == EG_ERR_FORMAT);
  check_message("h.safetensors", "5 bytes: a safetensors file starts with an 8-byte");
}

/* ---- graph JSON ---- */

#define HEAD "{\"format\": \"edgegrad.graph\", \"version\": 1, "
#define TENSOR(id, shape) \
  "{\"id\": " #id ", \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": " shape "}"

/* x -> relu -> out, with the given value shape, input, output and node names. */
static void write_relu_graph(const char *shape, const char *in, const char *out,
                             const char *node, const char *kwargs) {
  char text[2048];
  snprintf(text, sizeof text,
           HEAD "\"values\": [{\"id\": 0, \"kind\": \"tensor\", \"dtype\": \"float32\", "
           "\"shape\": %s}, {\"id\": 1, \"kind\": \"tensor\", \"dtype\": \"float32\", "
           "\"shape\": %s}], \"inputs\": [{\"name\": \"%s\", \"value\": 0}], \"statics\": [], "
           "\"outputs\": [{\"name\": \"%s\", \"value\": 1}], \"nodes\": [{\"name\": \"%s\", "
           "\"target\": \"aten.relu.default\", \"args\": [{\"value\": 0}], \"kwargs\": %s, "
           "\"output\": 1}]}",
           shape, shape, in, out, node, kwargs);
  write_text("g.json", text);
}

static void expect_graph_reject(const char *needle) {
  eg_model *m = (eg_model *)1;
  eg_status s = eg_model_load(path_in("g.json"), &m);
  EG_CHECK_MSG(s != EG_OK, "accepted a graph that should fail with '%s'", needle);
  EG_CHECK(m == NULL);
  check_message("g.json", needle);
  if (s == EG_OK) eg_model_destroy(m);
}

static void test_graph_relu_loads(void) {
  write_relu_graph("[2, 3]", "x", "out", "relu", "{}");
  eg_model *m = NULL;
  EG_CHECK_MSG(eg_model_load(path_in("g.json"), &m) == EG_OK, "%s", eg_last_error());
  eg_model_destroy(m);
}

/* [2^62, 4, 0] has no elements but used to pass, then overflow in every count derived from
 * it. */
static void test_graph_zero_dim_hides_huge_shape(void) {
  static const char *const cases[][2] = {
      {"[4611686018427387904, 4, 0]", "values[0]: shape [4611686018427387904, 4, 0] too large"},
      {"[1099511627776, 1099511627776, 0]", "2^40"},
      {"[9223372036854775807, 0]", "2^40"},
      {"[65536, 65536, 65536, 65536]", "2^40"},
      {"[1099511627777]", "2^40"}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    write_relu_graph(cases[k][0], "x", "out", "relu", "{}");
    expect_graph_reject(cases[k][1]);
  }
}

/* Empty names used to load and fail deep inside lowering. */
static void test_graph_empty_names(void) {
  static const char *const cases[][5] = {/* input, output, node, kwargs, message */
                                         {"x", "out", "", "{}", "nodes[0]: 'name' is empty"},
                                         {"", "out", "relu", "{}", "inputs[0]: 'name' is empty"},
                                         {"x", "", "relu", "{}", "outputs[0]: 'name' is empty"},
                                         {"x", "out", "relu", "{\"\": 1}",
                                          "node relu: a kwarg name is empty"}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    write_relu_graph("[2, 3]", cases[k][0], cases[k][1], cases[k][2], cases[k][3]);
    expect_graph_reject(cases[k][4]);
  }
  /* a static named "" (checked before the weights file is looked for) */
  write_text("g.json", HEAD "\"weights\": \"w.safetensors\", \"values\": [" TENSOR(0, "[3]") "], \"inputs\": [], "
        "\"statics\": [{\"name\": \"\", \"value\": 0}], \"outputs\": [{\"name\": \"out\", "
        "\"value\": 0}], \"nodes\": []}");
  expect_graph_reject("statics[0]: 'name' is empty");
}

/* A chain of n relu nodes n0..n(n-1) over values 0..n; node `dup` (if >= 0) is renamed to
 * the name of node `dup_of`. */
static char *chain_graph(int n, int dup, int dup_of) {
  size_t cap = (size_t)n * 200 + 1024, used = 0;
  char *t = malloc(cap);
  used += (size_t)snprintf(t + used, cap - used, HEAD "\"values\": [");
  for (int i = 0; i <= n; i++)
    used += (size_t)snprintf(t + used, cap - used,
                             "%s{\"id\": %d, \"kind\": \"tensor\", \"dtype\": \"float32\", "
                             "\"shape\": [2]}", i ? ", " : "", i);
  used += (size_t)snprintf(t + used, cap - used,
                           "], \"inputs\": [{\"name\": \"x\", \"value\": 0}], \"statics\": [], "
                           "\"outputs\": [{\"name\": \"out\", \"value\": %d}], \"nodes\": [", n);
  for (int i = 0; i < n; i++)
    used += (size_t)snprintf(t + used, cap - used,
                             "%s{\"name\": \"n%d\", \"target\": \"aten.relu.default\", "
                             "\"args\": [{\"value\": %d}], \"output\": %d}", i ? ", " : "",
                             i == dup ? dup_of : i, i, i + 1);
  snprintf(t + used, cap - used, "]}");
  return t;
}

static void test_graph_duplicate_names(void) {
  /* the earliest repeat is reported, naming the entry it repeats */
  char *t = chain_graph(6, 4, 1);
  write_text("g.json", t);
  free(t);
  expect_graph_reject("nodes[4]: name 'n1' repeats nodes[1]");
  write_text("g.json", HEAD "\"values\": [" TENSOR(0, "[2]") "," TENSOR(1, "[2]") "], "
             "\"inputs\": [{\"name\": \"b\", \"value\": 0}, {\"name\": \"a\", \"value\": 1}, "
             "{\"name\": \"a\", \"value\": 1}, {\"name\": \"b\", \"value\": 1}], "
             "\"statics\": [], \"outputs\": [], \"nodes\": []}");
  expect_graph_reject("inputs[2]: name 'a' repeats inputs[1]");
  write_text("g.json", HEAD "\"values\": [" TENSOR(0, "[2]") "], \"inputs\": [{\"name\": \"x\", "
             "\"value\": 0}], \"statics\": [], \"outputs\": [{\"name\": \"o\", \"value\": 0}, "
             "{\"name\": \"p\", \"value\": 0}, {\"name\": \"o\", \"value\": 0}], \"nodes\": []}");
  expect_graph_reject("outputs[2]: name 'o' repeats outputs[0]");
}

/* 100k nodes: the duplicate-name check used to compare every pair (80k nodes took 29 s). No
 * timing assertion; ctest's timeout is the bound. */
static void test_graph_many_nodes(void) {
  enum { N = 100000 };
  char *t = chain_graph(N, -1, 0);
  write_text("big.json", t);
  free(t);
  eg_graph *g = NULL;
  EG_CHECK_MSG(eg_graph_load_json(path_in("big.json"), &g) == EG_OK, "%s", eg_last_error());
  EG_CHECK(g && g->n_nodes == N);
  eg_graph_destroy(g);
  t = chain_graph(N, N - 1, 5);
  write_text("big.json", t);
  free(t);
  EG_CHECK(eg_graph_load_json(path_in("big.json"), &g) == EG_ERR_INVALID && g == NULL);
  check_message("big.json", "nodes[99999]: name 'n5' repeats nodes[5]: names in nodes are unique");
}

/* `test_hostile_frontend NAME` runs the one test NAME (to see a single failure under ASan). */
static const char *only;
#define RUN(fn)                                      \
  do {                                               \
    if (!only || strcmp(only, #fn) == 0) EG_RUN(fn); \
  } while (0)

int main(int argc, char **argv) {
  only = argc > 1 ? argv[1] : NULL;
  if (!eg_test_dir_open("hostile_frontend")) return 1;
  RUN(test_npy_header_ends_inside_descr);
  RUN(test_npy_shape_wraps);
  RUN(test_safetensors_shape_wraps);
  RUN(test_safetensors_size_message);
  RUN(test_graph_relu_loads);
  RUN(test_graph_zero_dim_hides_huge_shape);
  RUN(test_graph_empty_names);
  RUN(test_graph_duplicate_names);
  RUN(test_graph_many_nodes);
  if (!eg_test_dir_close()) return 1;
  return eg_test_summary();
}
