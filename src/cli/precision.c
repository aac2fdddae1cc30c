/* precision.c — the --precision option of compile, run and train (cli.h). */
#include <string.h>

#include "cli.h"

const opt_choice precision_choices[] = {
    {"fp16", EG_PRECISION_FP16}, {"fp32", EG_PRECISION_FP32}, {NULL, 0}};

int parse_precision(const char *cmd, const char *v, eg_precision *out) {
  if (v && strcmp(v, "fp32") == 0) *out = EG_PRECISION_FP32;
  else if (v && strcmp(v, "fp16") == 0) *out = EG_PRECISION_FP16;
  else
    return fail(EXIT_USAGE, "%s: --precision %s: must be fp16 or fp32", cmd, v ? v : "(missing)");
  return 0;
}
