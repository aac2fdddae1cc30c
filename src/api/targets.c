/* targets.c — eg_num_targets / eg_get_target of the public API: the SoC table (target/targets.h)
 * as the app sees it. */
#include "api/targets.h"

#include "api/struct_size.h"
#include "util/error.h"

int eg_num_targets(void) { return eg_target_count(); }

eg_status eg_target_info_write(const eg_target *t, eg_target_info *out, size_t out_size,
                               const char *where) {
  eg_target_info info = {0};
  if (t)
    info = (eg_target_info){.soc = t->soc, .product = t->product, .htp_arch = t->htp_arch,
                            .vtcm_mb = t->vtcm_mb,
                            .has_float = (t->features & EG_NPU_FEATURE_FLOAT) != 0,
                            .note = t->note, .soc_model = t->soc_model,
                            .float_precision = eg_precision_name(t->float_precision)};
  return EG_STRUCT_WRITE(eg_target_info, out, out_size, &info, where);
}

eg_status(eg_get_target)(int index, eg_target_info *out, size_t out_size) {
  const eg_target *t = eg_target_at(index);
  if (!out) return eg_error(EG_ERR_ARGUMENT, "eg_get_target: out is NULL");
  if (!t)
    return eg_error(EG_ERR_ARGUMENT, "eg_get_target: index %d out of range [0, %d)", index,
                    eg_target_count());
  return eg_target_info_write(t, out, out_size, "eg_get_target");
}
