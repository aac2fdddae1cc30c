/* precision.c — the --precision option of compile, run and train (cli.h). */
#include "cli.h"

const opt_choice precision_choices[] = {
    {"fp16", EG_PRECISION_FP16}, {"fp32", EG_PRECISION_FP32}, {NULL, 0}};
