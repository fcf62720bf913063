/*
 * dlclose.c - dlopens library A, allocates through it, dlcloses it, dlopens
 * library B (loaded at A's old address) and allocates through it; prints
 * both load addresses. Usage: rec_dlclose LIB_A LIB_B
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static void *run(const char *path, const char *sym, size_t size, int n, void **base)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
		exit(2);
	}
	void *(*f)(size_t) = (void *(*)(size_t))dlsym(h, sym);
	Dl_info info;
	if (!f || !dladdr((void *)f, &info)) {
		fprintf(stderr, "dlsym %s: %s\n", sym, dlerror());
		exit(2);
	}
	*base = info.dli_fbase;
	for (int i = 0; i < n; i++)
		free(f(size));
	return h;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	void *ba, *bb;
	void *h = run(argv[1], "dlc_alloc_a", 1111, 100, &ba);
	if (dlclose(h))
		return 3;
	h = run(argv[2], "dlc_alloc_b", 2222, 200, &bb);
	printf("%p %p\n", ba, bb);
	return dlclose(h) ? 3 : 0;
}
