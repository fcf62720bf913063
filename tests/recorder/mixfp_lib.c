/* mixfp_lib.c - built without frame pointers (-O2 -fomit-frame-pointer):
 * the middle of a stack whose other frames have them. It keeps values in
 * registers across the call, rbp among them, as such code does. */
#include <stddef.h>

__attribute__((noinline)) size_t mix_middle(void *(*cb)(size_t), size_t n, volatile size_t *sink)
{
	size_t a = n * 3, b = n ^ 0x55, c = n + 7, d = n * n, e = n - 1, f = n << 2;
	void *p = cb(n); /* MIDDLE */
	*sink = a + b + c + d + e + f + (size_t)p;
	return *sink;
}
