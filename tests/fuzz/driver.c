/*
 * driver.c - run a fuzz target without libFuzzer: every file given, then
 * N random mutations of each (bit flips, byte sets, cuts, splices), with a
 * fixed seed so a failure repeats.   driver [-n N] [-b BYTES] FILE...
 * -b bounds the mutated bytes per seed file: a large seed gets BYTES/size
 * mutations when that is fewer than N (a 100 KB trace costs a full decode per
 * mutation; the small seeds keep all N).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return state;
}

int main(int argc, char **argv)
{
	long n = 200, budget = 0;
	int first = 1;
	while (argc > first + 1 && (!strcmp(argv[first], "-n") || !strcmp(argv[first], "-b"))) {
		long v = strtol(argv[first + 1], NULL, 10);
		if (argv[first][1] == 'n')
			n = v;
		else
			budget = v;
		first += 2;
	}
	long runs = 0;
	for (int a = first; a < argc; a++) {
		FILE *f = fopen(argv[a], "rb");
		if (!f) {
			fprintf(stderr, "driver: cannot open '%s'\n", argv[a]);
			return 2;
		}
		fseek(f, 0, SEEK_END);
		size_t size = (size_t)ftell(f);
		rewind(f);
		uint8_t *data = malloc(size + 1), *mut = malloc(size + 1);
		if (fread(data, 1, size, f) != size) {
			fclose(f);
			return 2;
		}
		fclose(f);
		LLVMFuzzerTestOneInput(data, size);
		runs++;
		long mutations = n;
		if (budget > 0 && size && (long)(budget / (long)size) < n)
			mutations = budget / (long)size;
		for (long i = 0; i < mutations && size; i++, runs++) {
			memcpy(mut, data, size);
			size_t len = size;
			switch (rnd() % 4) {
			case 0:
				for (int k = 0; k < 1 + (int)(rnd() % 8); k++)
					mut[rnd() % len] ^= (uint8_t)(1u << (rnd() % 8));
				break;
			case 1:
				for (int k = 0; k < 1 + (int)(rnd() % 4); k++)
					mut[rnd() % len] = (uint8_t)(rnd() % 2 ? 0xff : rnd());
				break;
			case 2:
				len = rnd() % len;
				break;
			default: { /* copy one stretch over another */
				size_t from = rnd() % len, to = rnd() % len, k = rnd() % 64;
				if (from + k > len)
					k = len - from;
				if (to + k > len)
					k = len - to;
				memmove(mut + to, mut + from, k);
			}
			}
			LLVMFuzzerTestOneInput(mut, len);
		}
		free(data);
		free(mut);
	}
	printf("ok: %ld inputs\n", runs);
	return 0;
}
