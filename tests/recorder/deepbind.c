/*
 * deepbind.c [deep] - dlopen "libarrdeep.so" by bare name (found through
 * this program's RUNPATH, which dlopen takes from its caller), twice, with
 * RTLD_DEEPBIND when an argument is given; the library makes ten
 * malloc(555) and frees them. Prints "ok".
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	(void)argv;
	int mode = RTLD_NOW | (argc > 1 ? RTLD_DEEPBIND : 0);
	void *h = dlopen("libarrdeep.so", mode), *h2 = dlopen("libarrdeep.so", mode);
	if (!h || !h2) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	void *(*alloc)(size_t) = (void *(*)(size_t))dlsym(h, "deep_alloc");
	void (*release)(void *) = (void (*)(void *))dlsym(h, "deep_free");
	void *p[10];
	for (int i = 0; i < 10; i++)
		p[i] = alloc(555);
	for (int i = 0; i < 10; i++)
		release(p[i]);
	puts("ok");
	return 0;
}
