/* version.c — eg_version / eg_version_string of the public API: the version the library was
 * built as (the header an app includes may be another release's). */
#include "edgegrad.h"

int eg_version(void) { return EG_VERSION_NUMBER; }

const char *eg_version_string(void) { return EG_VERSION_STRING; }
