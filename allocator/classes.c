/*
 * allocator/classes.c - the size-class table.
 *
 * Classes: 8, then 16..128 in steps of 16, then 8 classes per doubling up to
 * 1 MiB, so above 128 bytes a request wastes at most 1/8 of its block. Every
 * class above 8 is a multiple of 16, so blocks keep malloc's 16-byte alignment.
 * Classes up to 64 KiB get the shortest span (in 64 KiB slices) that wastes at
 * most 1/8 of it. Larger ("large") classes get one block per span, rounded up
 * to whole slices: such a page goes back to the pool as soon as its block is
 * freed, so big blocks of every thread and class share one pool of slices
 * (the tail beyond the block is address space only, never touched).
 */
#include "internal.h"

uint8_t arr__class_tab[ARR__SMALL_TAB / 8 + 1];
uint32_t arr__class_size[ARR__NCLASSES];
uint8_t arr__class_slices[ARR__NCLASSES];

static size_t class_size_of(unsigned c)
{
	if (c <= 1)
		return 8;
	if (c <= 9)
		return (size_t)16 * (c - 1);
	unsigned k = 7 + (c - 10) / 8, j = (c - 10) % 8 + 1;
	return ((size_t)1 << k) + (size_t)j * ((size_t)1 << (k - 3));
}

void arr__classes_init(void)
{
	for (unsigned c = 0; c < ARR__NCLASSES; c++) {
		size_t bs = class_size_of(c);
		arr__class_size[c] = (uint32_t)bs;
		unsigned n;
		if (bs > ARR__SLICE_SIZE) {
			n = (unsigned)((bs + ARR__SLICE_SIZE - 1) / ARR__SLICE_SIZE);
		} else {
			for (n = 1; n < ARR__SLICES - 1; n++) {
				size_t cap = n * ARR__SLICE_SIZE;
				if ((cap % bs) * 8 <= cap)
					break;
			}
		}
		arr__class_slices[c] = (uint8_t)n;
	}
	for (size_t i = 0; i <= ARR__SMALL_TAB / 8; i++) {
		size_t size = i * 8;
		unsigned c;
		if (size <= 8)
			c = 1;
		else if (size <= 128)
			c = (unsigned)((size + 15) >> 4) + 1;
		else {
			size_t s1 = size - 1;
			unsigned k = 63u - (unsigned)__builtin_clzll(s1);
			unsigned j = (unsigned)(s1 >> (k - 3)) - 7u;
			c = 10u + (k - 7u) * 8u + (j - 1u);
		}
		arr__class_tab[i] = (uint8_t)c;
	}
}
