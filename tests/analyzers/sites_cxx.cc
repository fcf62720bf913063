/*
 * sites_cxx.cc - C++ call sites with known names and lines, built -O2 -g:
 * std::vector growth from a member function inlined into main (the
 * allocation's return address stands for five source frames: the
 * library's allocate, _M_allocate, _M_realloc_insert's call, push_back and
 * fill), std::string growth in a member function that is not inlined, and
 * a malloc three inlined calls deep (deep3 in deep2 in deep1 in main).
 * Every block leaks (the store is never deleted), so each site's figures
 * are its whole allocation.
 */
#include <cstdlib>
#include <string>
#include <vector>

namespace app {

struct Store {
	std::vector<long> v;
	std::string text;
	inline __attribute__((always_inline)) void fill(int n)
	{
		for (int i = 0; i < n; i++)
			v.push_back(i); /* FILL */
	}
	__attribute__((noinline)) void grow(int n)
	{
		for (int i = 0; i < n; i++)
			text += "0123456789abcdef"; /* GROW */
	}
};

inline __attribute__((always_inline)) void *deep3(size_t n)
{
	void *p = malloc(n); /* DEEP3 */
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}
inline __attribute__((always_inline)) void *deep2(size_t n)
{
	return deep3(n + 1); /* DEEP2 */
}
inline __attribute__((always_inline)) void *deep1(size_t n)
{
	return deep2(n + 1); /* DEEP1 */
}

} // namespace app

int main(int argc, char **argv)
{
	(void)argv;
	app::Store *s = new app::Store;
	s->fill(10000 * argc); /* MAIN_FILL */
	s->grow(1000);
	void *volatile keep = app::deep1(4000); /* MAIN_DEEP */
	(void)keep;
	return 0;
}
