// marks_cxx.cc - allocrr_mark() from C++: two marks around one allocation.
#include <cstdlib>

#include "allocrr/mark.h"

int main()
{
	allocrr_mark("cxx-begin");
	void *p = std::malloc(444);
	std::free(p);
	allocrr_mark("cxx-end");
	return 0;
}
