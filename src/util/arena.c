/* arena.c — chunked bump allocator (see arena.h). */
#include "util/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct eg_chunk {
  struct eg_chunk *next;
  size_t size, used;
  _Alignas(16) unsigned char data[];
} eg_chunk;

struct eg_arena {
  eg_chunk *head;
};

enum { EG_ARENA_CHUNK = 64 * 1024 };

eg_arena *eg_arena_create(void) { return calloc(1, sizeof(eg_arena)); }

void eg_arena_destroy(eg_arena *arena) {
  if (!arena) return;
  for (eg_chunk *c = arena->head, *next; c; c = next) {
    next = c->next;
    free(c);
  }
  free(arena);
}

void *eg_arena_alloc(eg_arena *arena, size_t size) {
  size = (size + 15) & ~(size_t)15;
  if (size == 0) size = 16;
  eg_chunk *c = arena->head;
  if (!c || c->size - c->used < size) {
    size_t cap = size > EG_ARENA_CHUNK ? size : EG_ARENA_CHUNK;
    if (cap > SIZE_MAX - sizeof(eg_chunk)) return NULL;
    c = malloc(sizeof(eg_chunk) + cap);
    if (!c) return NULL;
    c->size = cap;
    c->used = 0;
    c->next = arena->head;
    arena->head = c;
  }
  void *p = c->data + c->used;
  c->used += size;
  memset(p, 0, size);
  return p;
}

void *eg_arena_array(eg_arena *arena, size_t count, size_t size) {
  if (size && count > SIZE_MAX / size) return NULL;
  return eg_arena_alloc(arena, count * size);
}

char *eg_arena_strdup(eg_arena *arena, const char *s) {
  size_t n = strlen(s) + 1;
  char *p = eg_arena_alloc(arena, n);
  if (p) memcpy(p, s, n);
  return p;
}
