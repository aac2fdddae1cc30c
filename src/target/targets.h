/* targets.h — the Snapdragon SoCs edgegrad compiles for, as data.
 *
 * One const table maps each SoC to its HTP (Hexagon Tensor Processor) architecture, its VTCM
 * size and its feature bits. Every placement decision that depends on the target reads this
 * table (never an `if (arch == ...)` in a builder): float execution needs
 * EG_NPU_FEATURE_FLOAT, which V68 lacks entirely and which some V73 parts' QNN rejects.
 *
 * Each SoC also carries QNN's own number for it (the HTP backend's `soc_model`, as ONNX
 * Runtime's QNN execution provider takes it) and the precision its HTP computes float graphs
 * in, measured with QNN's HTP emulator (docs/fp16.md): fp16 storage on every SoC with a float
 * path. Compiling follows it unless eg_compile_options.precision says otherwise. */
#ifndef EG_TARGET_TARGETS_H
#define EG_TARGET_TARGETS_H

#include "edgegrad.h"

typedef enum eg_npu_feature {
  EG_NPU_FEATURE_FLOAT = 1u << 0, /* floating-point (fp16) execution path */
  EG_NPU_FEATURE_INT8 = 1u << 1,  /* 8-bit quantized execution */
  EG_NPU_FEATURE_INT16 = 1u << 2  /* 16-bit activations with 8-bit weights */
} eg_npu_feature;

typedef struct eg_target {
  const char *soc;        /* "SM8650" */
  const char *product;    /* "Snapdragon 8 Gen 3" */
  int htp_arch;           /* 68, 69, 73, 75, 79, 81 */
  int vtcm_mb;            /* on-chip tightly coupled memory, MB */
  unsigned features;      /* eg_npu_feature bits */
  const char *note;       /* why the features differ from the arch's usual, or "" */
  int soc_model;          /* QNN's soc_model number (SM8650: 57); 0 when not known */
  eg_precision float_precision; /* how its HTP computes float graphs (FP16); DEFAULT: no float
                                   path */
} eg_target;

/* The target called `soc` (case-insensitive), or NULL with an error listing the valid names. */
const eg_target *eg_target_find(const char *soc);
int eg_target_count(void);
/* "fp32", "fp16", or "none" for DEFAULT (a target's float_precision: no float path). */
const char *eg_precision_name(eg_precision p);
const eg_target *eg_target_at(int index);

#endif
