/*
 * error.c - arr_strerror() from the ARR_ERRNO_MAP table.
 */
#include <string.h>

#include "allocrr/error.h"

static const char *const messages[] = {
#define ARR_ERRNO_STR(name, msg) msg,
	ARR_ERRNO_MAP(ARR_ERRNO_STR)
#undef ARR_ERRNO_STR
};

const char *arr_strerror(int code)
{
	if (code == 0)
		return "success";
	if (code > ARR_EFIRST_ && code < ARR_ELAST_)
		return messages[code - ARR_EFIRST_ - 1];
	if (code < 0 && code > ARR_EFIRST_)
		return strerror(-code);
	return "unknown error";
}
