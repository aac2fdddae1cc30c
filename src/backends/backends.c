/* backends.c — the backend registry (see backend.h): which backend compiles for which target. */
#include "backends/backend.h"

#include "backends/htp/compiler.h"

const eg_backend *eg_backend_for_target(const eg_target *t) {
  (void)t; /* every SoC edgegrad targets has a Hexagon NPU (HTP) */
  return &eg_htp_backend;
}
