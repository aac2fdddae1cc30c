/* test_safetensors.c — api/safetensors.c, the safetensors codec: a save read back is the same
 * tensors and metadata, in order; the bytes written are those jansson's compact, order-keeping
 * json_dumps gave edgegrad's earlier writers (header padded with spaces to a multiple of 8, then
 * the tensors back to back); the writer refuses what it cannot write faithfully, writing
 * nothing; the reader refuses malformed metadata and headers with a one-line message naming the
 * file and the key at fault. (Damaged tensor entries: test_hostile_frontend.c, test_loader.c.) */
#include <jansson.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "eg_test.h"
#include "eg_test_files.h"
#include "util/file.h"

static float w[6] = {1, -2, 3.5f, 4, 5, -6};
static int64_t step = 42;
static uint16_t half[3] = {0x3c00, 0xc000, 0x0000};
static uint8_t flags[2] = {1, 0};
static double d1 = 0.25;
static int32_t i2[2] = {-7, 7};
static int8_t s3[3] = {-128, 0, 127};

#define N_ENTRIES 8
static const eg_safetensors_entry entries[N_ENTRIES] = {
    {"conv.weight", {EG_DTYPE_FLOAT32, 2, {2, 3}, w}},
    {"input/b\xc3\xa9 \"q\" \\ /\n\x01", {EG_DTYPE_INT64, 0, {0}, &step}},
    {"empty", {EG_DTYPE_UINT8, 2, {0, 5}, NULL}},
    {"h", {EG_DTYPE_FLOAT16, 1, {3}, half}},
    {"flag", {EG_DTYPE_BOOL, 1, {2}, flags}},
    {"d", {EG_DTYPE_FLOAT64, 1, {1}, &d1}},
    {"i", {EG_DTYPE_INT32, 1, {2}, i2}},
    {"s", {EG_DTYPE_INT8, 1, {3}, s3}},
};
static const eg_safetensors_meta meta[2] = {{"format", "pt"}, {"k\t\"\xe2\x82\xac", "v\n\\"}};
static const char *const codes[] = {"F32", "F64", "F16", "I64", "I32", "I8", "U8", "BOOL"};

static size_t nbytes(const eg_tensor *t) {
  return (size_t)eg_tensor_numel(t) * eg_dtype_size(t->dtype);
}

static void test_round_trip(void) {
  EG_CHECK(eg_safetensors_save(path_in("rt.safetensors"), entries, N_ENTRIES, meta, 2) == EG_OK);
  eg_safetensors *st = NULL;
  EG_CHECK_MSG(eg_safetensors_load(path_in("rt.safetensors"), &st) == EG_OK, "%s",
               eg_last_error());
  if (!st) return;
  int n = 0, n_meta = 0;
  const eg_safetensors_entry *e = eg_safetensors_entries(st, &n);
  const eg_safetensors_meta *m = eg_safetensors_metadata(st, &n_meta);
  EG_CHECK(n == N_ENTRIES && n_meta == 2);
  for (int i = 0; i < n && i < N_ENTRIES; i++) {
    const eg_tensor *a = &e[i].t, *b = &entries[i].t;
    EG_CHECK_MSG(strcmp(e[i].name, entries[i].name) == 0, "entry %d is '%s'", i, e[i].name);
    EG_CHECK(a->dtype == b->dtype && a->rank == b->rank);
    for (int d = 0; d < b->rank; d++) EG_CHECK(a->shape[d] == b->shape[d]);
    EG_CHECK(a->data != NULL && (!nbytes(b) || memcmp(a->data, b->data, nbytes(b)) == 0));
    EG_CHECK(eg_safetensors_find(st, entries[i].name) == &e[i]);
  }
  for (int i = 0; i < n_meta && i < 2; i++) {
    EG_CHECK(strcmp(m[i].key, meta[i].key) == 0 && strcmp(m[i].value, meta[i].value) == 0);
    EG_CHECK(eg_safetensors_meta_get(st, meta[i].key) == m[i].value);
  }
  EG_CHECK(eg_safetensors_find(st, "missing") == NULL && eg_safetensors_find(st, NULL) == NULL);
  EG_CHECK(eg_safetensors_meta_get(st, "missing") == NULL);
  EG_CHECK(eg_safetensors_find(st, "__metadata__") == NULL);
  eg_safetensors_destroy(st);
  eg_safetensors_destroy(NULL);
  EG_CHECK(eg_safetensors_entries(NULL, &n) == NULL && n == 0);
}

/* The file the earlier writers made: the header built and dumped with jansson. */
static unsigned char *jansson_file(const eg_safetensors_entry *e, int n,
                                   const eg_safetensors_meta *m, int n_meta, size_t *size) {
  json_t *root = json_object(), *md = json_object();
  size_t off = 0;
  for (int i = 0; i < n; i++) {
    json_t *shape = json_array();
    for (int d = 0; d < e[i].t.rank; d++)
      json_array_append_new(shape, json_integer(e[i].t.shape[d]));
    json_object_set_new(root, e[i].name,
                        json_pack("{s:s, s:o, s:[I, I]}", "dtype", codes[e[i].t.dtype], "shape",
                                  shape, "data_offsets", (json_int_t)off,
                                  (json_int_t)(off + nbytes(&e[i].t))));
    off += nbytes(&e[i].t);
  }
  for (int i = 0; i < n_meta; i++) json_object_set_new(md, m[i].key, json_string(m[i].value));
  if (n_meta) json_object_set_new(root, "__metadata__", md);
  else json_decref(md);
  char *text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(root);
  const size_t hlen = strlen(text), padded = (hlen + 7) & ~(size_t)7;
  *size = 8 + padded + off;
  unsigned char *b = malloc(*size + 1);
  for (int k = 0; k < 8; k++) b[k] = (unsigned char)((uint64_t)padded >> (8 * k));
  memcpy(b + 8, text, hlen);
  memset(b + 8 + hlen, ' ', padded - hlen);
  off = 8 + padded;
  for (int i = 0; i < n; i++) {
    if (nbytes(&e[i].t)) memcpy(b + off, e[i].t.data, nbytes(&e[i].t));
    off += nbytes(&e[i].t);
  }
  free(text);
  return b;
}

static void check_bytes(int n, int n_meta) {
  EG_CHECK(eg_safetensors_save(path_in("b.safetensors"), entries, n, meta, n_meta) == EG_OK);
  size_t got_size = 0, want_size = 0;
  void *file = NULL;
  EG_CHECK(eg_file_read(path_in("b.safetensors"), (size_t)1 << 20, &file, &got_size) == EG_OK);
  unsigned char *got = file;
  unsigned char *want = jansson_file(entries, n, meta, n_meta, &want_size);
  EG_CHECK_MSG(got && got_size == want_size && memcmp(got, want, want_size) == 0,
               "%d tensors, %d metadata pairs: %zu bytes written, %zu expected: '%.*s'", n,
               n_meta, got_size, want_size, got && got_size > 8 ? (int)(got_size - 8) : 0,
               got ? (const char *)got + 8 : "");
  EG_CHECK(got_size >= 8 && got[0] % 8 == 0); /* the buffer starts 8-byte aligned */
  free(got);
  free(want);
}

static void test_bytes_as_before(void) {
  check_bytes(N_ENTRIES, 2);
  check_bytes(N_ENTRIES, 0);
  check_bytes(0, 2);
  check_bytes(0, 0);
  check_bytes(1, 1);
}

/* The save is refused with EG_ERR_ARGUMENT, the message naming `needle`, and nothing written. */
static void expect_refused(const eg_safetensors_entry *e, int n, const eg_safetensors_meta *m,
                           int n_meta, const char *needle) {
  unlink(path_in("no.safetensors"));
  EG_CHECK(eg_safetensors_save(path_in("no.safetensors"), e, n, m, n_meta) == EG_ERR_ARGUMENT);
  EG_CHECK_MSG(strstr(eg_last_error(), needle) != NULL, "'%s' lacks '%s'", eg_last_error(),
               needle);
  struct stat sb;
  EG_CHECK(stat(path_in("no.safetensors"), &sb) != 0);
}

static void test_save_refusals(void) {
  eg_safetensors_entry e[2] = {entries[0], entries[3]};
  e[1].name = e[0].name;
  expect_refused(e, 2, NULL, 0, "tensor name 'conv.weight' given twice");
  e[1].name = "__metadata__";
  expect_refused(e, 2, NULL, 0, "reserves it for the metadata");
  e[1].name = NULL;
  expect_refused(e, 2, NULL, 0, "a tensor name is NULL");
  e[1].name = "bad\xff";
  expect_refused(e, 2, NULL, 0, "is not UTF-8");
  e[1] = entries[3];
  e[1].t.dtype = EG_DTYPE_COUNT;
  expect_refused(e, 2, NULL, 0, "tensor 'h': dtype");
  e[1] = entries[3];
  e[1].t.rank = EG_MAX_RANK + 1;
  expect_refused(e, 2, NULL, 0, "tensor 'h'");
  e[1] = entries[3];
  e[1].t.shape[0] = -1;
  expect_refused(e, 2, NULL, 0, "shape [-1]");
  e[1] = entries[3];
  e[1].t.data = NULL;
  expect_refused(e, 2, NULL, 0, "tensor 'h': data is NULL (6 bytes to write)");
  const eg_safetensors_meta twice[2] = {{"k", "1"}, {"k", "2"}};
  expect_refused(entries, 1, twice, 2, "metadata key 'k' given twice");
  const eg_safetensors_meta null_value[1] = {{"k", NULL}};
  expect_refused(entries, 1, null_value, 1, "a metadata value is NULL");
  expect_refused(NULL, 1, NULL, 0, "eg_safetensors_save");
  expect_refused(entries, -1, NULL, 0, "eg_safetensors_save");
  expect_refused(entries, 1, NULL, 1, "eg_safetensors_save");
  EG_CHECK(eg_safetensors_save(NULL, entries, 1, NULL, 0) == EG_ERR_ARGUMENT);
}

/* Writes an 8-byte header length, `header`, then `ndata` zero bytes; expects `status` and a
 * one-line message naming the file and holding `needle`. */
static void expect_load(const char *header, size_t ndata, eg_status status, const char *needle) {
  const size_t hl = strlen(header), n = 8 + hl + ndata;
  unsigned char *b = calloc(n, 1);
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)hl >> (8 * i));
  memcpy(b + 8, header, hl);
  write_bytes("l.safetensors", b, n);
  free(b);
  eg_safetensors *st = (eg_safetensors *)1;
  const eg_status s = eg_safetensors_load(path_in("l.safetensors"), &st);
  const char *msg = eg_last_error();
  EG_CHECK_MSG(s == status, "%s: status %d (%s)", header, (int)s, msg);
  if (s == EG_OK) {
    eg_safetensors_destroy(st);
    return;
  }
  EG_CHECK(st == NULL);
  const char *path = path_in("l.safetensors");
  EG_CHECK_MSG(strstr(msg, needle) && strncmp(msg, path, strlen(path)) == 0 &&
               !strchr(msg, '\n'), "'%s' lacks '%s' or does not start with the path", msg,
               needle);
}

#define W "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"

static void test_load_refusals(void) {
  expect_load("{" W ",\"__metadata__\":{\"a\":\"b\"}}", 8, EG_OK, "");
  expect_load("{" W ",\"__metadata__\":{}}", 8, EG_OK, "");
  expect_load("{" W ",\"__metadata__\":[]}", 8, EG_ERR_FORMAT,
              "__metadata__ is not an object: it maps keys to strings");
  expect_load("{" W ",\"__metadata__\":{\"a\":\"b\",\"n\":null}}", 8, EG_ERR_FORMAT,
              "__metadata__ 'n' is not a string: metadata values are strings");
  expect_load("[" W "]", 8, EG_ERR_FORMAT,
              "header JSON, line 1, column 5: ']' expected near ':'");
  expect_load("[]", 0, EG_ERR_FORMAT, "header is not a JSON object");
  expect_load("{" W "," W "}", 8, EG_ERR_FORMAT, "duplicate object key near '\"w\"'");
  expect_load("{" W ",\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],"
              "\"extra\":{\"a\":[1,2.5,true]}}}", 8, EG_OK, "");
  expect_load("{\"w\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 8,
              EG_ERR_UNSUPPORTED, "tensor 'w': dtype 'BF16' unknown to edgegrad");
  expect_load("{\"w\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}",
              8, EG_ERR_UNSUPPORTED, "tensor 'w': rank 9 exceeds 8");
  expect_load("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0.0,8]}}", 8,
              EG_ERR_FORMAT, "tensor 'w': data_offsets are not two integers");
  expect_load("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 8,
              EG_ERR_FORMAT, "tensor 'w': data_offsets [4, 12] outside the 8-byte buffer");
  expect_load("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 8,
              EG_ERR_FORMAT, "tensor 'w': data_offsets [0, 4] hold 4 bytes but F32 [2] takes 8");
  expect_load("{\"w\":[]}", 8, EG_ERR_FORMAT, "tensor 'w': an entry needs");
  expect_load("{\"w\\n\":{\"dtype\":7}}", 8, EG_ERR_FORMAT, "tensor 'w ': an entry needs");
  eg_safetensors *st = (eg_safetensors *)1;
  EG_CHECK(eg_safetensors_load(eg_test_dir, &st) == EG_ERR_IO && st == NULL);
  EG_CHECK(eg_safetensors_load(path_in("absent.safetensors"), &st) == EG_ERR_IO && st == NULL);
  EG_CHECK(eg_safetensors_load(NULL, &st) == EG_ERR_ARGUMENT && st == NULL);
  EG_CHECK(eg_safetensors_load(path_in("l.safetensors"), NULL) == EG_ERR_ARGUMENT);
}

int main(void) {
  if (!eg_test_dir_open("safetensors")) return 1;
  EG_RUN(test_round_trip);
  EG_RUN(test_bytes_as_before);
  EG_RUN(test_save_refusals);
  EG_RUN(test_load_refusals);
  eg_test_dir_close();
  return eg_test_summary();
}
