/*
 * ideal.c - two programs whose peak / ideal RSS cannot be read, for the
 * report tests: `ideal tiny` makes 30 blocks of 40-69 bytes (1.6 KiB live at
 * the peak, less than a page: a replay serves it from pages the engine
 * already has resident, so its RSS grows by 0 B); `ideal untouched` makes 16
 * blocks of 4 MiB and writes one byte of each (64 MiB live, 64 KiB touched:
 * the replay chooses --touch none, so no block is written); `ideal touched`
 * makes 16 blocks of 64 KiB and fills them (1 MiB live, a ratio to keep).
 */
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	static char *p[32];
	const char *mode = argc > 1 ? argv[1] : "";
	int tiny = !strcmp(mode, "tiny"), touched = !strcmp(mode, "touched");
	int n = tiny ? 30 : 16;
	for (int i = 0; i < n; i++) {
		size_t size = tiny ? 40 + (size_t)i : touched ? 64u << 10 : 4u << 20;
		p[i] = malloc(size);
		if (!p[i])
			return 1;
		memset(p[i], 1, tiny ? 40 : touched ? size : 1);
	}
	for (int i = 0; i < n; i++)
		free(p[i]);
	return 0;
}
