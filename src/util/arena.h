/* arena.h — bump allocator owning everything a graph holds (values, nodes, args, names).
 * Freed in one go by eg_arena_destroy; individual allocations are never freed. Allocation
 * returns NULL when out of memory (callers report EG_ERR_NOMEM). */
#ifndef EG_UTIL_ARENA_H
#define EG_UTIL_ARENA_H

#include <stddef.h>

typedef struct eg_arena eg_arena;

eg_arena *eg_arena_create(void);
void eg_arena_destroy(eg_arena *arena);
/* `size` bytes aligned to 16, zero-filled. */
void *eg_arena_alloc(eg_arena *arena, size_t size);
/* Array of `count` elements of `size` bytes, zero-filled; NULL on overflow. */
void *eg_arena_array(eg_arena *arena, size_t count, size_t size);
char *eg_arena_strdup(eg_arena *arena, const char *s);

#endif
