/* compile_options.h — the public compile options as the partitioner's (api/compile.c). */
#ifndef EG_API_COMPILE_OPTIONS_H
#define EG_API_COMPILE_OPTIONS_H

#include "edgegrad.h"
#include "partition/partition.h"

/* The partitioner's options for `o` (the target already looked up by name). */
void eg_api_partition_options(const eg_compile_options *o, const eg_target *target,
                              eg_partition_options *out);

#endif
