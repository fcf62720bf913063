/*
 * ops.c - names of operations and end reasons.
 */
#include <string.h>

#include "allocrr/trace.h"

static const char *const op_names[ARR_OP_MAX_] = {
#define ARR_OP_NAME(name, val, str, args, facts) [val] = str,
	ARR_OP_MAP(ARR_OP_NAME)
#undef ARR_OP_NAME
};

const char *arr_op_name(unsigned op) { return op < ARR_OP_MAX_ ? op_names[op] : NULL; }

unsigned arr_op_from_name(const char *name)
{
	for (unsigned op = 1; op < ARR_OP_MAX_; op++)
		if (op_names[op] && strcmp(op_names[op], name) == 0)
			return op;
	return 0;
}

const char *arr_end_name(unsigned reason)
{
	switch (reason) {
#define ARR_END_CASE(name, val, str) \
	case val:                    \
		return str;
		ARR_END_MAP(ARR_END_CASE)
#undef ARR_END_CASE
	}
	return "unknown";
}
