/* test_loader.c — the graph loader and verifier accept a good graph and reject hostile ones
 * (truncated or corrupted JSON, unknown op, dangling id, contradicting shape, cycle, double
 * definition, tuple misuse), each with a non-zero status and one line naming what is wrong.
 * Also the safetensors and .npy readers against corrupted files. Run under ASan by
 * `make check`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgegrad.h"
#include "eg_test.h"
#include "eg_test_files.h"

/* A graph: out = relu(x) * w, x input [2, 3], w static [3] (from w.safetensors). */
#define GOOD_VALUES                                                                    \
  "\"values\": [{\"id\": 0, \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [2, 3]}," \
  "{\"id\": 1, \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [3]},"           \
  "{\"id\": 2, \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [2, 3]},"        \
  "{\"id\": 3, \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [2, 3]}],"
#define GOOD_IO                                                                        \
  "\"inputs\": [{\"name\": \"x\", \"value\": 0, \"role\": \"data\"}],"               \
  "\"statics\": [{\"name\": \"w\", \"value\": 1}],"                                   \
  "\"outputs\": [{\"name\": \"out\", \"value\": 3, \"role\": \"output\"}],"
/* The same without roles, as an exporter before them wrote it. */
#define LEGACY_IO                                                                      \
  "\"inputs\": [{\"name\": \"x\", \"value\": 0}],"                                    \
  "\"statics\": [{\"name\": \"w\", \"value\": 1}],"                                   \
  "\"outputs\": [{\"name\": \"out\", \"value\": 3}],"
#define HEAD "{\"format\": \"edgegrad.graph\", \"version\": 1, \"weights\": \"w.safetensors\","
#define RELU(arg, out)                                                                \
  "{\"name\": \"relu\", \"target\": \"aten.relu.default\", \"args\": [{\"value\": " #arg \
  "}], \"kwargs\": {}, \"output\": " #out "}"
#define MUL(a, b, out)                                                                \
  "{\"name\": \"mul\", \"target\": \"aten.mul.Tensor\", \"args\": [{\"value\": " #a      \
  "}, {\"value\": " #b "}], \"kwargs\": {}, \"output\": " #out "}"

static const char good_graph[] =
    HEAD GOOD_VALUES GOOD_IO "\"nodes\": [" RELU(0, 2) "," MUL(2, 1, 3) "]}";

static void write_weights(void) {
  float w[3] = {1.0f, -2.0f, 0.5f};
  eg_tensor t = {.dtype = EG_DTYPE_FLOAT32, .rank = 1, .shape = {3}, .data = w};
  const eg_safetensors_entry e = {"w", t};
  EG_CHECK(eg_safetensors_save(path_in("w.safetensors"), &e, 1, NULL, 0) == EG_OK);
}

/* Loads `text` as g.json; expects failure whose one-line message contains `needle`. */
static void expect_reject(const char *text, const char *needle) {
  write_text("g.json", text);
  eg_model *m = (eg_model *)1;
  eg_status s = eg_model_load(path_in("g.json"), &m);
  const char *msg = eg_last_error();
  EG_CHECK_MSG(s != EG_OK, "accepted a graph that should fail with '%s'", needle);
  EG_CHECK(m == NULL);
  EG_CHECK_MSG(strstr(msg, needle) != NULL, "message '%s' lacks '%s'", msg, needle);
  EG_CHECK(strchr(msg, '\n') == NULL);
  EG_CHECK_MSG(strstr(msg, "g.json") != NULL, "message '%s' does not name the file", msg);
  if (s == EG_OK) eg_model_destroy(m);
}

static void test_good_graph_runs(void) {
  write_weights();
  write_text("g.json", good_graph);
  eg_model *m = NULL;
  eg_runtime *rt = NULL;
  EG_CHECK_MSG(eg_model_load(path_in("g.json"), &m) == EG_OK, "%s", eg_last_error());
  if (!m) return;
  EG_CHECK(eg_runtime_create(m, &rt) == EG_OK);
  float x[6] = {1, -1, 2, -2, 3, -3};
  eg_tensor in = {.dtype = EG_DTYPE_FLOAT32, .rank = 2, .shape = {2, 3}, .data = x};
  EG_CHECK(eg_runtime_run(rt) == EG_ERR_ARGUMENT); /* input not set */
  EG_CHECK(strstr(eg_last_error(), "input x") != NULL);
  eg_tensor bad = in;
  bad.shape[1] = 4;
  EG_CHECK(eg_runtime_set_input(rt, "x", &bad) == EG_ERR_ARGUMENT);
  EG_CHECK(strstr(eg_last_error(), "[2, 4]") && strstr(eg_last_error(), "[2, 3]"));
  EG_CHECK(eg_runtime_set_input(rt, "y", &in) == EG_ERR_ARGUMENT);
  EG_CHECK(eg_runtime_set_input(rt, "x", &in) == EG_OK);
  EG_CHECK_MSG(eg_runtime_run(rt) == EG_OK, "%s", eg_last_error());
  eg_tensor out;
  EG_CHECK(eg_runtime_output(rt, 0, &out) == EG_OK);
  const float want[6] = {1, 0, 1, 0, -6, 0}; /* relu([[1,-1,2],[-2,3,-3]]) * [1,-2,0.5] */
  for (int i = 0; i < 6 && out.data; i++) EG_CHECK(((float *)out.data)[i] == want[i]);
  eg_runtime_destroy(rt);
  eg_model_destroy(m);
}

/* The roles as the API describes them: tiny_step's inputs input (data), target (label) and
 * five parameters, each paired with its gradient output and back; the loss. A graph without
 * any "role" (good_graph without them) reads as data and output, and has nothing to train. */
static void test_roles_described(void) {
  eg_model *m = NULL;
  EG_CHECK_MSG(eg_model_load(EG_TEST_DATA "/tiny_step.json", &m) == EG_OK, "%s", eg_last_error());
  if (!m) return;
  eg_tensor_desc d, o;
  static const eg_io_role want[] = {EG_ROLE_DATA, EG_ROLE_LABEL, EG_ROLE_PARAMETER,
                                    EG_ROLE_PARAMETER, EG_ROLE_PARAMETER, EG_ROLE_PARAMETER,
                                    EG_ROLE_PARAMETER};
  EG_CHECK(eg_model_num_inputs(m) == 7 && eg_model_num_outputs(m) == 6);
  for (int i = 0; i < 7 && eg_model_input(m, i, &d) == EG_OK; i++) {
    EG_CHECK_MSG(d.role == want[i], "input %s: role %s", d.name, eg_io_role_name(d.role));
    EG_CHECK_MSG((d.pair >= 0) == (i >= 2), "input %s: pair %d", d.name, d.pair);
    if (d.pair < 0) continue;
    EG_CHECK(eg_model_output(m, d.pair, &o) == EG_OK && o.role == EG_ROLE_GRADIENT &&
             o.pair == i && strncmp(o.name, "grad_", 5) == 0 && strcmp(o.name + 5, d.name) == 0);
  }
  EG_CHECK(eg_model_output(m, 0, &o) == EG_OK && o.role == EG_ROLE_LOSS && o.pair == -1);
  int params = 0, buffers = 0;
  eg_model_training_io(m, &params, &buffers);
  EG_CHECK(params == 5 && buffers == 0);
  EG_CHECK(strcmp(eg_io_role_name(EG_ROLE_BUFFER_UPDATE), "buffer_update") == 0 &&
           strcmp(eg_io_role_name((eg_io_role)99), "?") == 0);
  eg_model_destroy(m);
  write_weights();
  write_text("g.json", HEAD GOOD_VALUES LEGACY_IO "\"nodes\": [" RELU(0, 2) "," MUL(2, 1, 3) "]}");
  EG_CHECK_MSG(eg_model_load(path_in("g.json"), &m) == EG_OK, "%s", eg_last_error());
  if (!m) return;
  EG_CHECK(eg_model_input(m, 0, &d) == EG_OK && d.role == EG_ROLE_DATA && d.pair == -1);
  EG_CHECK(eg_model_output(m, 0, &o) == EG_OK && o.role == EG_ROLE_OUTPUT && o.pair == -1);
  eg_runtime *rt = NULL;
  eg_optimizer *opt = NULL;
  eg_optimizer_options oo;
  eg_optimizer_defaults(EG_OPTIMIZER_SGD, &oo);
  EG_CHECK(eg_runtime_create(m, &rt) == EG_OK);
  EG_CHECK(rt && eg_optimizer_create(rt, &oo, &opt) == EG_ERR_ARGUMENT && !opt &&
           strstr(eg_last_error(), "nothing to train") &&
           strstr(eg_last_error(), "export the training step again"));
  eg_runtime_destroy(rt);
  eg_model_destroy(m);
}

static void test_truncated_json(void) {
  char text[sizeof good_graph];
  for (size_t cut = 0; cut + 1 < sizeof good_graph; cut += 7) {
    memcpy(text, good_graph, cut);
    text[cut] = 0;
    expect_reject(text, "g.json");
  }
  expect_reject("{\"format\": \"edgegrad.graph\", \"version\": 1, \"values\": [}", "JSON");
}

static void test_structural_errors(void) {
  expect_reject(HEAD GOOD_VALUES GOOD_IO "\"nodes\": [" RELU(0, 2) ","
                "{\"name\": \"x1\", \"target\": \"aten.frobnicate.default\", \"args\": [], "
                "\"output\": 3}]}", "op aten.frobnicate.default unknown");
  expect_reject(HEAD GOOD_VALUES GOOD_IO "\"nodes\": [" RELU(9, 2) "," MUL(2, 1, 3) "]}",
                "out of range");
  expect_reject(HEAD GOOD_VALUES GOOD_IO "\"nodes\": [" RELU(0, 7) "," MUL(2, 1, 3) "]}",
                "out of range");
  /* cycle: relu reads mul's output, mul reads relu's */
  expect_reject(HEAD GOOD_VALUES GOOD_IO "\"nodes\": [" RELU(3, 2) "," MUL(2, 1, 3) "]}",
                "topological order");
  /* two definitions of value 2 */
  expect_reject(HEAD GOOD_VALUES GOOD_IO "\"nodes\": [" RELU(0, 2) "," MUL(0, 1, 2) "]}",
                "already defined");
  /* value 3 defined by nobody */
  expect_reject(HEAD GOOD_VALUES GOOD_IO "\"nodes\": [" RELU(0, 2) "]}", "defined by no");
  expect_reject("{\"format\": \"edgegrad.graph\", \"version\": 99}", "version 99 unknown");
  expect_reject("{\"format\": \"other\", \"version\": 1}", "format 'other'");
  expect_reject("[1, 2]", "not an object");
  expect_reject(HEAD "\"values\": [{\"id\": 1, \"kind\": \"tensor\", \"dtype\": \"float32\", "
                "\"shape\": []}], \"inputs\": [], \"statics\": [], \"outputs\": [], \"nodes\": []}",
                "ids are dense");
  expect_reject(HEAD "\"values\": [{\"id\": 0, \"kind\": \"tensor\", \"dtype\": \"complex7\", "
                "\"shape\": []}], \"inputs\": [], \"statics\": [], \"outputs\": [], \"nodes\": []}",
                "dtype 'complex7' unknown");
  expect_reject(HEAD "\"values\": [{\"id\": 0, \"kind\": \"tensor\", \"dtype\": \"float32\", "
                "\"shape\": [-1]}], \"inputs\": [], \"statics\": [], \"outputs\": [], \"nodes\": []}",
                "shape[0]");
}

static void test_shape_contradicts_op(void) {
  const char *text =
      HEAD "\"values\": [{\"id\": 0, \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [2, 3]},"
      "{\"id\": 1, \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [3]},"
      "{\"id\": 2, \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [3, 2]},"
      "{\"id\": 3, \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [2, 3]}]," GOOD_IO
      "\"nodes\": [" RELU(0, 2) "," MUL(0, 1, 3) "]}";
  expect_reject(text, "node relu: output shape [3, 2] contradicts aten.relu.default");
}

static void test_tuple_rules(void) {
  /* A tuple fed to relu, and getitem out of range. Values: 0 x, 1 w, 2 tuple(3, null), 3. */
  const char *vals =
      "\"values\": [{\"id\": 0, \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [2, 3]},"
      "{\"id\": 1, \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [3]},"
      "{\"id\": 2, \"kind\": \"tuple\", \"elements\": [3, null]},"
      "{\"id\": 3, \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [2, 3]},"
      "{\"id\": 4, \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [2, 3]}],";
  char text[4096];
  snprintf(text, sizeof text, "%s%s%s%s", HEAD, vals,
           "\"inputs\": [{\"name\": \"x\", \"value\": 0}], \"statics\": [{\"name\": \"w\", "
           "\"value\": 1}], \"outputs\": [{\"name\": \"out\", \"value\": 4}],",
           "\"nodes\": [{\"name\": \"r\", \"target\": \"aten.relu.default\", \"args\": "
           "[{\"value\": 0}], \"output\": 2}, {\"name\": \"g\", \"target\": \"getitem\", "
           "\"args\": [{\"value\": 2}, 5], \"output\": 4}]}");
  expect_reject(text, "node r: output is a tuple");
}

static void test_safetensors_corruption(void) {
  write_weights();
  void *data;
  size_t n;
  FILE *f = fopen(path_in("w.safetensors"), "rb");
  fseek(f, 0, SEEK_END);
  n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  data = malloc(n);
  EG_CHECK(fread(data, 1, n, f) == n);
  fclose(f);
  write_text("g.json", good_graph);
  for (size_t cut = 0; cut < n; cut += 5) { /* every truncation is rejected */
    write_bytes("w.safetensors", data, cut);
    eg_model *m = NULL;
    EG_CHECK_MSG(eg_model_load(path_in("g.json"), &m) != EG_OK, "accepted truncation at %zu", cut);
    EG_CHECK(strstr(eg_last_error(), "w.safetensors") != NULL);
    eg_model_destroy(m);
  }
  unsigned char *bytes = data;
  bytes[0] = 0xff; /* header length beyond the file */
  bytes[5] = 0x01;
  write_bytes("w.safetensors", data, n);
  eg_model *m = NULL;
  EG_CHECK(eg_model_load(path_in("g.json"), &m) != EG_OK);
  EG_CHECK(strstr(eg_last_error(), "header length") != NULL);
  free(data);
  /* wrong dtype and offsets */
  const char *hdr = "{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,16]}}";
  unsigned char buf[256] = {0};
  size_t hl = strlen(hdr);
  buf[0] = (unsigned char)hl;
  memcpy(buf + 8, hdr, hl);
  write_bytes("w.safetensors", buf, 8 + hl + 12);
  EG_CHECK(eg_model_load(path_in("g.json"), &m) != EG_OK);
  EG_CHECK(strstr(eg_last_error(), "data_offsets") != NULL);
  hdr = "{\"w\":{\"dtype\":\"I64\",\"shape\":[3],\"data_offsets\":[0,24]}}";
  hl = strlen(hdr);
  buf[0] = (unsigned char)hl;
  memcpy(buf + 8, hdr, hl);
  write_bytes("w.safetensors", buf, 8 + hl + 24);
  EG_CHECK(eg_model_load(path_in("g.json"), &m) != EG_OK);
  EG_CHECK(strstr(eg_last_error(), "holds int64 [3] but the graph says float32 [3]") != NULL);
  write_weights();
}

static void test_npy_roundtrip_and_corruption(void) {
  float v[6] = {1, 2, 3, 4, 5, 6};
  eg_tensor t = {.dtype = EG_DTYPE_FLOAT32, .rank = 2, .shape = {3, 2}, .data = v}, r;
  EG_CHECK(eg_npy_save(path_in("a.npy"), &t) == EG_OK);
  EG_CHECK(eg_npy_load(path_in("a.npy"), &r) == EG_OK);
  EG_CHECK(r.rank == 2 && r.shape[0] == 3 && r.shape[1] == 2 && r.dtype == EG_DTYPE_FLOAT32);
  EG_CHECK(r.data && memcmp(r.data, v, sizeof v) == 0);
  eg_tensor_free(&r);
  FILE *f = fopen(path_in("a.npy"), "rb");
  unsigned char raw[256];
  size_t n = fread(raw, 1, sizeof raw, f);
  fclose(f);
  for (size_t cut = 0; cut < n; cut += 3) {
    write_bytes("b.npy", raw, cut);
    EG_CHECK_MSG(eg_npy_load(path_in("b.npy"), &r) != EG_OK, "accepted truncation at %zu", cut);
    EG_CHECK(r.data == NULL);
  }
  raw[0] = 'X';
  write_bytes("b.npy", raw, n);
  EG_CHECK(eg_npy_load(path_in("b.npy"), &r) == EG_ERR_FORMAT);
  const char *fortran = "\x93NUMPY\x01\x00\x46\x00{'descr': '<f4', 'fortran_order': True, "
                        "'shape': (1,), }                  \n";
  char buf[128];
  memcpy(buf, fortran, 80);
  memset(buf + 80, 0, 4);
  write_bytes("b.npy", buf, 84);
  EG_CHECK(eg_npy_load(path_in("b.npy"), &r) == EG_ERR_UNSUPPORTED);
  EG_CHECK(strstr(eg_last_error(), "fortran_order") != NULL);
  EG_CHECK(eg_npy_load(path_in("missing.npy"), &r) == EG_ERR_IO);
}

int main(void) {
  if (!eg_test_dir_open("loader")) return 1;
  EG_RUN(test_good_graph_runs);
  EG_RUN(test_roles_described);
  EG_RUN(test_truncated_json);
  EG_RUN(test_structural_errors);
  EG_RUN(test_shape_contradicts_op);
  EG_RUN(test_tuple_rules);
  EG_RUN(test_safetensors_corruption);
  EG_RUN(test_npy_roundtrip_and_corruption);
  if (!eg_test_dir_close()) return 1;
  return eg_test_summary();
}
