/* targets.c — the SoC table (see targets.h).
 *
 * Arch and VTCM per SoC follow Qualcomm's published QNN/ExecuTorch SoC tables. SM7675
 * (Snapdragon 7+ Gen 3) and SM8635 (Snapdragon 8s Gen 3) are V73 parts whose QNN HTP backend
 * rejects fp16 graphs, so they carry no FLOAT bit; their VTCM size is not in the public tables
 * and is recorded as the V73 family's smallest published value (2 MB).
 *
 * soc_model is QNN's number for the SoC (QnnHtpDevice's SoC model, the `soc_model` option of
 * ONNX Runtime's QNN execution provider): SM8635 is 68 and SM7675 70 (QNN 2.51's HTP backend
 * names them so in its log, "Performance Estimates unsupported on soc SM8635", and refuses
 * float graphs there: "The SocModel doesn't support FP16"). The float precision is what QNN's HTP emulator (onnxruntime-qnn 2.7.0) computed float
 * graphs in for each soc_model: fp16 storage on every float SoC, whatever
 * enable_htp_fp16_precision said (docs/fp16.md, tests/htp/fp16_probe.py). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "target/targets.h"
#include "util/error.h"

#define QUANT (EG_NPU_FEATURE_INT8 | EG_NPU_FEATURE_INT16)
#define FULL (QUANT | EG_NPU_FEATURE_FLOAT)

#define NO_FLOAT EG_PRECISION_DEFAULT
#define FP16 EG_PRECISION_FP16

static const eg_target eg_targets[] = {
    {"SM8350", "Snapdragon 888", 68, 4, QUANT, "V68 has no floating-point path", 30, NO_FLOAT},
    {"SM8450", "Snapdragon 8 Gen 1", 69, 8, FULL, "", 36, FP16},
    {"SM8475", "Snapdragon 8+ Gen 1", 69, 8, FULL, "", 42, FP16},
    {"SM7675", "Snapdragon 7+ Gen 3", 73, 2, QUANT, "QNN rejects fp16 on this V73 part", 70,
     NO_FLOAT},
    {"SM8550", "Snapdragon 8 Gen 2", 73, 8, FULL, "", 43, FP16},
    {"SM8635", "Snapdragon 8s Gen 3", 73, 2, QUANT, "QNN rejects fp16 on this V73 part", 68,
     NO_FLOAT},
    {"SM8650", "Snapdragon 8 Gen 3", 75, 8, FULL, "", 57, FP16},
    {"SM8750", "Snapdragon 8 Elite", 79, 8, FULL, "", 69, FP16},
    {"SM8850", "Snapdragon 8 Elite Gen 5", 81, 8, FULL, "", 87, FP16},
};

const char *eg_precision_name(eg_precision p) {
  return p == EG_PRECISION_FP16 ? "fp16" : p == EG_PRECISION_FP32 ? "fp32" : "none";
}

int eg_target_count(void) { return (int)(sizeof eg_targets / sizeof eg_targets[0]); }

const eg_target *eg_target_at(int index) {
  return index >= 0 && index < eg_target_count() ? &eg_targets[index] : NULL;
}

const eg_target *eg_target_find(const char *soc) {
  for (int i = 0; soc && i < eg_target_count(); i++)
    if (strcasecmp(eg_targets[i].soc, soc) == 0) return &eg_targets[i];
  char names[256] = "";
  size_t used = 0;
  for (int i = 0; i < eg_target_count(); i++)
    used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
                             eg_targets[i].soc);
  eg_error(EG_ERR_ARGUMENT, "--soc %s: unknown SoC: choose one of %s", soc ? soc : "(none)",
           names);
  return NULL;
}
