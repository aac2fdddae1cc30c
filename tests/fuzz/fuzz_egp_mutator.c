/* fuzz_egp_mutator.c — libFuzzer's custom mutator for fuzz_egp, linked only into the libFuzzer
 * build (the replay build has no LLVMFuzzerMutate).
 *
 * The .egp reader refuses a file whose header or section table is off (magic, version, exact
 * file_size, six sections with aligned, non-overlapping offsets, zero padding; see
 * src/program/egp_format.h) before it reads any section, so byte-level mutation of a whole file
 * almost never gets further. The format has no checksum; what must be re-fixed after a change
 * is the layout. This mutator parses the header and table and then, by a random draw:
 *   - (most often) mutates the payload of one section with LLVMFuzzerMutate, which may grow or
 *     shrink it, and lays the file out again: sections in their original order, each at the
 *     next multiple of 8 (STATIC: 64) with zero padding, offsets, sizes and file_size
 *     rewritten;
 *   - or flips one byte of the header or section table, left unfixed (the checks themselves);
 * and falls back to plain LLVMFuzzerMutate on an input that does not parse as a .egp. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "program/egp_format.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

typedef struct section {
  uint32_t kind;
  uint64_t offset, size;
} section;

static uint32_t rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const uint8_t *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static void wr64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

#define TABLE_END (EG_EGP_HEADER_SIZE + EG_EGP_N_SECTIONS * EG_EGP_SECTION_ENTRY_SIZE)

/* The section table, entries sorted by offset into `order`; false when the header is not an
 * .egp's or an entry lies outside the file. */
static int parse(const uint8_t *data, size_t size, section *sec, int *order) {
  if (size < TABLE_END || memcmp(data, EG_EGP_MAGIC, 4) != 0 ||
      rd32(data + 16) != EG_EGP_N_SECTIONS)
    return 0;
  for (int i = 0; i < (int)EG_EGP_N_SECTIONS; i++) {
    const uint8_t *e = data + EG_EGP_HEADER_SIZE + i * EG_EGP_SECTION_ENTRY_SIZE;
    sec[i].kind = rd32(e);
    sec[i].offset = rd64(e + 8);
    sec[i].size = rd64(e + 16);
    if (sec[i].offset < TABLE_END || sec[i].offset > size || sec[i].size > size - sec[i].offset)
      return 0;
    order[i] = i;
  }
  for (int i = 1; i < (int)EG_EGP_N_SECTIONS; i++) /* insertion sort by offset */
    for (int j = i; j > 0 && sec[order[j]].offset < sec[order[j - 1]].offset; j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  return 1;
}

static size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

/* Mutates section `k`'s payload and lays the file out again into `data` (max_size bytes);
 * 0 when the result would not fit. */
static size_t mutate_section(uint8_t *data, size_t size, size_t max_size, section *sec,
                             const int *order, int k) {
  size_t room = max_size > size ? max_size - size : 0;
  size_t cap = (size_t)sec[k].size + (room < 4096 ? room : 4096);
  uint8_t *payload = malloc(cap ? cap : 1);
  uint8_t *out = calloc(1, max_size);
  if (!payload || !out) {
    free(payload);
    free(out);
    return 0;
  }
  memcpy(payload, data + sec[k].offset, (size_t)sec[k].size);
  size_t new_size = sec[k].size ? LLVMFuzzerMutate(payload, (size_t)sec[k].size, cap) : 0;
  memcpy(out, data, TABLE_END);
  size_t pos = TABLE_END;
  for (int i = 0; i < (int)EG_EGP_N_SECTIONS; i++) {
    int s = order[i];
    const uint8_t *src = s == k ? payload : data + sec[s].offset;
    size_t n = s == k ? new_size : (size_t)sec[s].size;
    pos = align_up(pos, sec[s].kind == EG_EGP_SECTION_STATIC ? EG_EGP_STATIC_ALIGN
                                                             : EG_EGP_SECTION_ALIGN);
    if (pos > max_size || n > max_size - pos) {
      free(payload);
      free(out);
      return 0;
    }
    memcpy(out + pos, src, n);
    uint8_t *e = out + EG_EGP_HEADER_SIZE + s * EG_EGP_SECTION_ENTRY_SIZE;
    wr64(e + 8, pos);
    wr64(e + 16, n);
    pos += n;
  }
  wr64(out + 8, pos); /* file_size */
  memcpy(data, out, pos);
  free(payload);
  free(out);
  return pos;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
  section sec[EG_EGP_N_SECTIONS];
  int order[EG_EGP_N_SECTIONS];
  srand(seed);
  if (!parse(data, size, sec, order) || rand() % 16 == 0)
    return LLVMFuzzerMutate(data, size, max_size);
  if (rand() % 8 == 0) { /* one header or table byte, left as it is */
    data[(size_t)rand() % TABLE_END] ^= (uint8_t)(1u << (rand() % 8));
    return size;
  }
  /* STATIC holds only weight bytes; the metadata sections are where the reader's checks are. */
  int k;
  do k = rand() % (int)EG_EGP_N_SECTIONS;
  while (sec[k].kind == EG_EGP_SECTION_STATIC && rand() % 4 != 0);
  size_t n = mutate_section(data, size, max_size, sec, order, k);
  return n ? n : LLVMFuzzerMutate(data, size, max_size);
}
