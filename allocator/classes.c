/*
 * allocator/classes.c - the size-class table.
 *
 * Classes: 8, then 16..128 in steps of 16, then 8 classes per doubling up to
 * 1 MiB, so above 128 bytes a request wastes at most 1/8 of its block. From
 * 256 B to 16 KiB the first eighth above each power of two is split again at
 * 1/64, 1/32 and 17/256 rounded up to 16 bytes (272 alone above 256; 528,
 * 560 above 512; 1040, 1056, 1104, 1152; 4160, 4224, 4368, 4608; ...): "a
 * power of two plus a header" is a common request (sqlite's 1032- and
 * 4368-byte page-cache entries: 1040 and 4368; redis's 262-byte strings, a
 * 256-byte value and its header: 272, where 288 took 2 MB more of its 81 MB
 * peak) and would waste up to 11 % there. 17/256 rather than 5/64 (4416): 15 blocks of 4368
 * fill one slice but for 16 bytes, where 44 of 4416 took three slices and
 * 4468 bytes each, and sqlite's peak is 26 MB of them (glibc: 4384 each).
 * The split costs
 * 15 classes, not the hundreds that finer classes everywhere would (each
 * thread keeps a partly filled page per class it uses). Every
 * class above 8 is a multiple of 16, so blocks keep malloc's 16-byte alignment.
 * Classes up to 64 KiB get the shortest span (in 64 KiB slices) that wastes at
 * most 1/8 of it. Larger ("large") classes get one block per span, rounded up
 * to whole slices: such a page goes back to the pool as soon as its block is
 * freed, so big blocks of every thread and class share one pool of slices
 * (the tail beyond the block is address space only, never touched).
 */
#include "internal.h"

uint8_t arr__class_tab[ARR__DIRECT_N];
uint8_t arr__class_direct[ARR__FINE_FIRST + 1];
uint32_t arr__class_size[ARR__NCLASSES];
uint8_t arr__class_slices[ARR__NCLASSES];
uint64_t arr__class_magic[ARR__NCLASSES];
uint32_t arr__class_sparse_cap[ARR__SPARSE_END - ARR__SPARSE_FIRST];

static size_t class_size_of(unsigned c)
{
	if (c <= 1)
		return 8;
	if (c <= 9)
		return (size_t)16 * (c - 1);
	if (c < ARR__FINE_FIRST) {
		/* 8 a doubling from 128, and the splits of 256 and 512 (internal.h) */
		static ARR_HOT_DATA uint16_t mid[ARR__FINE_FIRST - 10] = {144, 160, 176, 192, 208, 224, 240, 256, 272,
									  288, 320, 352, 384, 416, 448, 480, 512, 528,
									  560, 576, 640, 704, 768, 832, 896, 960, 1024};
		return mid[c - 10];
	}
	if (c >= ARR__FINE_END) {
		unsigned k = 14 + (c - ARR__FINE_END) / 8, j = (c - ARR__FINE_END) % 8 + 1;
		return ((size_t)1 << k) + (size_t)j * ((size_t)1 << (k - 3));
	}
	unsigned k = 10 + (c - ARR__FINE_FIRST) / 11, r = (c - ARR__FINE_FIRST) % 11;
	if (r == 2)
		return arr__split3(k);
	static ARR_HOT_DATA uint8_t num[4] = {1, 2, 0, 8}; /* 64ths above 2^k (r = 2: above) */
	if (r < 4)
		return ((size_t)1 << k) + (size_t)num[r] * ((size_t)1 << (k - 6));
	return ((size_t)1 << k) + (size_t)(r - 2) * ((size_t)1 << (k - 3));
}

static bool split_class(unsigned c)
{
	return c >= ARR__FINE_FIRST && c < ARR__FINE_END && (c - ARR__FINE_FIRST) % 11 < 4;
}

ARR_HOT void arr__classes_init(void)
{
	for (unsigned c = 0; c < ARR__NCLASSES; c++) {
		size_t bs = class_size_of(c);
		arr__class_size[c] = (uint32_t)bs;
		arr__class_magic[c] = UINT64_MAX / bs + 1;
		unsigned n;
		if (bs > ARR__SLICE_SIZE) {
			n = (unsigned)((bs + ARR__SLICE_SIZE - 1) / ARR__SLICE_SIZE);
		} else {
			/* The span's tail is resident waste. The split classes
			 * serve "a power of two plus a header", often allocated
			 * by the thousand: up to 4 slices for a tail of at most
			 * 1/64. Others: the shortest span with a tail of 1/8. */
			n = 5;
			if (split_class(c))
				for (n = 1; n <= 4; n++)
					if ((n * ARR__SLICE_SIZE % bs) * 64 <= n * ARR__SLICE_SIZE)
						break;
			if (n > 4)
				for (n = 1; n < ARR__SLICES - 1; n++) {
					size_t cap = n * ARR__SLICE_SIZE;
					if ((cap % bs) * 8 <= cap)
						break;
				}
		}
		arr__class_slices[c] = (uint8_t)n;
	}
	for (size_t i = 0; i < ARR__DIRECT_N; i++) {
		size_t size = i * 8;
		unsigned c;
		if (size <= 8)
			c = 1;
		else if (size <= 128)
			c = (unsigned)((size + 15) >> 4) + 1;
		else
			for (c = 10; arr__class_size[c] < size; c++)
				;
		arr__class_tab[i] = (uint8_t)c;
	}
	/* Each class's run of entries, for the heaps' direct[]: the table
	 * never falls and ends at the last class up to 1 KiB, so the runs
	 * tile it. */
	for (unsigned c = 0, i = 0; c <= ARR__FINE_FIRST; c++) {
		while (i < ARR__DIRECT_N && arr__class_tab[i] < c)
			i++;
		arr__class_direct[c] = (uint8_t)i;
	}
	ARR__CHECK(arr__class_tab[ARR__DIRECT_N - 1] == ARR__FINE_FIRST - 1 &&
		   arr__class_direct[ARR__FINE_FIRST] == ARR__DIRECT_N);
	for (size_t i = 1; i < ARR__DIRECT_N; i++)
		ARR__CHECK(arr__class_tab[i] >= arr__class_tab[i - 1]);
	/* classes grow, and every one above 8 keeps malloc's 16-byte alignment (the
	 * sanitizer build checks; the table is fixed at build time) */
	for (unsigned c = 2; c < ARR__NCLASSES; c++)
		ARR__ASSERT(arr__class_size[c] > arr__class_size[c - 1] && arr__class_size[c] % 16 == 0);
	/* A sparse class's blocks come from the span heap rounded up to its
	 * 256-byte units; where that is more than the class's block (the split
	 * classes: a 1032-byte request takes 1280 bytes there, 1040 in its
	 * class), the excess past ARR__SPARSE_WASTE bytes costs more than the
	 * class page it saves: the class is dense from that many blocks on. */
	for (unsigned c = ARR__SPARSE_FIRST; c < ARR__SPARSE_END; c++) {
		size_t bs = arr__class_size[c];
		size_t units = (bs + ((size_t)1 << ARR__SPAN_UNIT_SHIFT) - 1) >> ARR__SPAN_UNIT_SHIFT;
		size_t excess = (units << ARR__SPAN_UNIT_SHIFT) - bs;
		arr__class_sparse_cap[c - ARR__SPARSE_FIRST] =
			excess == 0 ? UINT32_MAX : (uint32_t)(ARR__SPARSE_WASTE / excess);
	}
	/* one or two direct[] entries for a class up to ARR__DIRECT_MAX, all
	 * below ARR__HEAP_DIRECT_N (heap.c set_current writes them unrolled) */
	for (unsigned c = 1; c < ARR__FINE_FIRST && arr__class_size[c] <= ARR__DIRECT_MAX; c++)
		ARR__CHECK(arr__class_direct[c + 1] > arr__class_direct[c] &&
			   arr__class_direct[c + 1] <= arr__class_direct[c] + 2 &&
			   arr__class_direct[c + 1] <= ARR__HEAP_DIRECT_N);
	/* the sparse classes' bounds (internal.h) */
	ARR__CHECK(arr__class_size[ARR__SPARSE_FIRST - 1] == 1024 &&
		   arr__class_size[ARR__SPARSE_END - 1] == ARR__SPAN_SPARSE_MAX);
}
