/*
 * reuse.c - seeds 000, 001 and 004 on what a freed block still holds and
 * where blocks sit:
 *   1. a 64-byte block holding a string is freed and the next malloc(64)
 *      gets the same block back, the string's tail still in it (seed 001:
 *      "ord=hunter2" at bytes 16-26; glibc wrote its free-list links over
 *      the first 16 bytes);
 *   2. the same with 32 bytes filled with 0xab (seed 000), then calloc(1, 32);
 *   3. three malloc(5) blocks 32 bytes apart: glibc's 8-byte header and
 *      32-byte minimum chunk (seed 004).
 * Prints what it saw; the trace shows the same through the addresses.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Through a volatile pointer: the compiler may not drop the writes to a
 * block that is freed before anything reads it. */
static void *(*volatile copy)(void *, const void *, size_t) = memcpy;
static void *(*volatile fill)(void *, int, size_t) = memset;

int main(void)
{
	static const char secret[] = "user=alice;password=hunter2";
	char *first = malloc(64);
	if (!first)
		return 1;
	copy(first, secret, sizeof secret);
	uintptr_t old = (uintptr_t)first;
	free(first);
	char *second = malloc(64);
	if (!second)
		return 1;
	printf("64 B: same block %s, bytes 16-26: %.11s\n", (uintptr_t)second == old ? "yes" : "no", second + 16);

	unsigned char *a = malloc(32);
	if (!a)
		return 1;
	fill(a, 0xab, 32);
	old = (uintptr_t)a;
	free(a);
	unsigned char *b = malloc(32);
	unsigned char *c = calloc(1, 32);
	if (!b || !c)
		return 1;
	int kept = 0, zero = 0;
	for (int i = 16; i < 32; i++)
		kept += b[i] == 0xab;
	for (int i = 0; i < 32; i++)
		zero += c[i] == 0;
	printf("32 B: same block %s, %d of bytes 16-31 still 0xab; calloc: %d of 32 bytes zero\n",
	       (uintptr_t)b == old ? "yes" : "no", kept, zero);

	char *x = malloc(5), *y = malloc(5), *z = malloc(5);
	if (!x || !y || !z)
		return 1;
	printf("5 B: blocks %td and %td bytes apart\n", y - x, z - y);
	free(second);
	free(b);
	free(c);
	free(x);
	free(y);
	free(z);
	return 0;
}
