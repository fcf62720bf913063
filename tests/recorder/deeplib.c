/* deeplib.c - a library whose allocations come from its own code, for
 * deepbind.c: opened with or without RTLD_DEEPBIND. */
#include <stdlib.h>

void *deep_alloc(size_t n) { return malloc(n); }
void deep_free(void *p) { free(p); }
