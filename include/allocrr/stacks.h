/*
 * allocrr/stacks.h - call stacks and loaded modules of a trace recorded with
 * `allocrr record --stacks` (format 1.2, docs/trace-format.md).
 *
 * Glossary
 *   stack node  (parent, return address): a trie of the recorded stacks,
 *               outermost frame nearest the root. A stack id names the node
 *               of its innermost frame; 0 is the empty stack.
 *   truncated   the recorder could not walk the whole stack (depth limit,
 *               or a frame without a frame pointer): the outermost node
 *               then has address ARR_STACK_TRUNCATED, which is no frame.
 *   sampled     recorded with --stack-sample: only some calls carry a stack
 *               (arr_trace_stack_sample_bytes()), the others stack id 0.
 *   module      a mapped ELF object (path, build id, load address, size)
 *               as the recorder saw it: enough to symbolize elsewhere.
 *
 * Contract: the reader collects nodes and modules as it passes their chunks
 * (which come before their first use), so arr_trace_stack() answers for
 * every event delivered so far. Memory: 16 bytes per distinct node, plus
 * the modules. Functions return a count or a negative ARR_E* code.
 */
#ifndef ALLOCRR_STACKS_H
#define ALLOCRR_STACKS_H

#include <stddef.h>
#include <stdint.h>

struct arr_trace;

/* Header feature bit (arr_trace_meta.features): recorded with stacks. */
#define ARR_TRACE_FEAT_STACKS (1u << 3)

#define ARR_STACK_TRUNCATED 0 /* address of the marker node of a truncated stack */

/* Module entry kinds. */
#define ARR_MODULE_LOADED 1   /* mapped at t (or earlier: at the recorder's first look) */
#define ARR_MODULE_UNLOADED 2 /* no longer mapped at t: [base, base + size) is free */

struct arr_module {
	uint64_t t;       /* ns since start when the recorder saw it */
	uint64_t base;    /* load bias: runtime address - ELF virtual address */
	uint64_t size;    /* it covers [base, base + size): the highest PT_LOAD end, ELF addresses */
	const char *path; /* as the dynamic loader named it; "" for the main program may be the exe */
	uint8_t build_id[64];
	unsigned build_id_len;
	unsigned kind;  /* ARR_MODULE_* */
	unsigned epoch; /* the unloads before it: it names the addresses of stacks of that epoch and later */
};

/*
 * The return addresses of stack id, innermost first, into frames (room for
 * max). Returns the number of frames (the whole depth even when more than
 * max), 0 for id 0, ARR_EINVAL for an id not (yet) defined. *truncated (if
 * given) says whether the recorder stopped before the outermost frame; the
 * marker node is not counted as a frame.
 */
int arr_trace_stack(const struct arr_trace *tr, uint32_t id, uint64_t *frames, size_t max, int *truncated);
/* The node of id: its parent and return address. ARR_EINVAL if undefined. */
int arr_trace_stack_node(const struct arr_trace *tr, uint32_t id, uint32_t *parent, uint64_t *addr);
/* Distinct stack nodes seen so far. */
uint64_t arr_trace_stack_nodes(const struct arr_trace *tr);
/*
 * The mean of the Poisson sample of stacks (`record --stack-sample BYTES`):
 * each allocating call of n bytes carries its stack with probability
 * 1 - exp(-n / mean), the others stack id 0. 0: every call has its stack.
 */
uint64_t arr_trace_stack_sample_bytes(const struct arr_trace *tr);
/*
 * Module epochs: a dlclose makes a new epoch (an ARR_MODULE_UNLOADED entry),
 * after which the same address may belong to another object. A stack's
 * addresses belong to the modules of its epoch: the latest entry with
 * epoch <= the stack's that holds the address, unless that entry is an
 * unload (then none). 0 for every stack of a trace without unloads.
 */
unsigned arr_trace_stack_epoch(const struct arr_trace *tr, uint32_t id);
/* The modules seen so far, in file order. */
size_t arr_trace_modules(const struct arr_trace *tr, const struct arr_module **mods);

#endif
