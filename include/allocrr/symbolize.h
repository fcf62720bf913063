/*
 * allocrr/symbolize.h - names for the return addresses of a trace's stacks
 * (allocrr/stacks.h), found at analysis time with elfutils' libdw in the
 * modules the recorder listed: function, source file and line where the
 * module (or its debug file, by build id) has them.
 *
 * Inlined calls: one return address can stand for several source frames
 * (a function inlined into another, perhaps inlined in turn). The frame
 * returned is the innermost - the inlined function, with the line inside
 * it - and its `caller` chain walks outwards through the functions it was
 * inlined into, each with the line of the inlined call, ending at the real
 * (symbol table) function, whose caller is NULL. Found with libdw's
 * dwarf_getscopes() on the compilation unit's DIE; without debug info the
 * chain is the one symbol.
 *
 * Contract: a module that is gone or has no symbols still gives a name,
 * "module+0xOFFSET" (or "0xADDR" outside every module). Each address is
 * looked up once and cached; frames and strings live (at fixed addresses)
 * as long as the symbolizer. The
 * modules are those the trace had when arr_symbolizer_open() was called:
 * open it after reading the events (their chunks come first).
 */
#ifndef ALLOCRR_SYMBOLIZE_H
#define ALLOCRR_SYMBOLIZE_H

#include <stdint.h>

struct arr_trace;
struct arr_symbolizer;

struct arr_frame_info {
	const char *func;                    /* "leaky", or "libfoo.so+0x1234" */
	const char *file;                    /* source file, NULL without line info */
	int line;                            /* 0 without line info */
	const char *module;                  /* the module's path, NULL outside every module */
	uint64_t module_offset;              /* the return address less the module's base (0 without module):
					      * what addr2line or objdump -d need when there are no lines */
	int known;                           /* func is a symbol (not an address) */
	int inlined;                         /* func was inlined into caller at this address */
	const struct arr_frame_info *caller; /* the function it was inlined into; NULL: a real frame */
};

int arr_symbolizer_open(struct arr_symbolizer **out, const struct arr_trace *tr);
void arr_symbolizer_close(struct arr_symbolizer *s);
/* The innermost frame of return address addr (the call before it is what
 * is named), in the modules of the trace's last epoch; follow ->caller for
 * the frames it was inlined into. */
const struct arr_frame_info *arr_symbolize(struct arr_symbolizer *s, uint64_t addr);
/* The same in the modules of a module epoch (arr_trace_stack_epoch() of the
 * stack it comes from): right across a dlclose and a dlopen at the same place. */
const struct arr_frame_info *arr_symbolize_at(struct arr_symbolizer *s, uint64_t addr, unsigned epoch);

#endif
