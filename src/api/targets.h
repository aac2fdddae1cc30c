/* targets.h — the public API's view of a SoC table row (target/targets.h), shared by
 * eg_get_target and eg_compile_report_target. */
#ifndef EG_API_TARGETS_H
#define EG_API_TARGETS_H

#include <stddef.h>

#include "edgegrad.h"
#include "target/targets.h"

/* Fills the caller's `out` (`out_size` bytes, edgegrad.h "struct sizes") with target `t`'s
 * info; all zeros when t is NULL. `where` names the API call in an error. */
eg_status eg_target_info_write(const eg_target *t, eg_target_info *out, size_t out_size,
                               const char *where);

#endif
