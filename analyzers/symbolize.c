/*
 * symbolize.c - return addresses to function, file and line (see
 * allocrr/symbolize.h), with libdw: each recorded module is reported at its
 * recorded bias to the Dwfl of each module epoch it is mapped in (an epoch
 * ends at a dlclose), so the trace can be read on any machine with
 * the same binaries (or their debug files, found by build id). Inlined
 * frames come from the scopes (dwarf_getscopes) of the compilation unit
 * that holds the address: each DW_TAG_inlined_subroutine is a frame, named
 * by its abstract origin, placed at the call line of the scope inside it.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocrr/error.h"
#include "allocrr/stacks.h"
#include "allocrr/symbolize.h"

#define MAX_INLINE 16 /* inlined frames kept per address (deeper nests are cut) */

struct sym_ent {
	uint64_t addr;             /* address + (epoch << 48); 0: empty */
	struct arr_frame_info *fi; /* chain, innermost first, one allocation */
};

struct arr_symbolizer {
	Dwfl **dwfl; /* one per module epoch (allocrr/stacks.h), made when first asked */
	unsigned nepochs;
	const struct arr_module *mods;
	size_t nmods;
	struct sym_ent *tab;
	size_t mask, count;
};

static char *debuginfo_path;
static const char unknown[] = "?"; /* a name that could not be copied (out of memory) */
static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

int arr_symbolizer_open(struct arr_symbolizer **out, const struct arr_trace *tr)
{
	struct arr_symbolizer *s = calloc(1, sizeof *s);
	*out = NULL;
	if (!s)
		return ARR_ENOMEM;
	s->mask = 1023;
	s->tab = calloc(s->mask + 1, sizeof *s->tab);
	if (!s->tab) {
		free(s);
		return ARR_ENOMEM;
	}
	s->nmods = arr_trace_modules(tr, &s->mods);
	s->nepochs = s->nmods ? s->mods[s->nmods - 1].epoch + 1 : 1;
	s->dwfl = calloc(s->nepochs, sizeof *s->dwfl);
	if (!s->dwfl) {
		free(s->tab);
		free(s);
		return ARR_ENOMEM;
	}
	*out = s;
	return 0;
}

/* Is module entry i unloaded by epoch e (a later unload at its base)? */
static int gone_by(const struct arr_symbolizer *s, size_t i, unsigned e)
{
	for (size_t j = i + 1; j < s->nmods && s->mods[j].epoch <= e; j++)
		if (s->mods[j].kind == ARR_MODULE_UNLOADED && s->mods[j].base == s->mods[i].base)
			return 1;
	return 0;
}

/* The Dwfl of epoch e: each distinct (path, base) mapped then, once. */
static Dwfl *dwfl_of(struct arr_symbolizer *s, unsigned e)
{
	if (s->dwfl[e])
		return s->dwfl[e];
	Dwfl *d = dwfl_begin(&callbacks);
	if (!d)
		return NULL;
	dwfl_report_begin(d);
	for (size_t i = 0; i < s->nmods && s->mods[i].epoch <= e; i++) {
		const struct arr_module *m = &s->mods[i];
		if (m->kind != ARR_MODULE_LOADED || m->path[0] != '/' || gone_by(s, i, e))
			continue;
		int seen = 0;
		for (size_t j = 0; j < i && !seen; j++)
			seen = s->mods[j].kind == ARR_MODULE_LOADED && s->mods[j].base == m->base &&
			       !strcmp(s->mods[j].path, m->path) && !gone_by(s, j, e);
		if (!seen)
			dwfl_report_elf(d, m->path, m->path, -1, m->base, false);
	}
	dwfl_report_end(d, NULL, NULL);
	return s->dwfl[e] = d;
}

void arr_symbolizer_close(struct arr_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i <= s->mask; i++) {
		struct arr_frame_info *fi = s->tab[i].fi;
		for (size_t k = 0; fi; k++) {
			if (fi[k].func != unknown)
				free((char *)fi[k].func);
			free((char *)fi[k].file);
			if (!fi[k].caller)
				break;
		}
		free(fi);
	}
	free(s->tab);
	for (unsigned e = 0; e < s->nepochs; e++)
		if (s->dwfl[e])
			dwfl_end(s->dwfl[e]);
	free(s->dwfl);
	free(s);
}

/* The latest entry of epoch e or before that holds addr; NULL if none, or
 * if that entry is an unload. */
static const struct arr_module *module_of(const struct arr_symbolizer *s, uint64_t addr, unsigned e)
{
	for (size_t i = s->nmods; i-- > 0;)
		if (s->mods[i].epoch <= e && addr >= s->mods[i].base && addr - s->mods[i].base < s->mods[i].size)
			return s->mods[i].kind == ARR_MODULE_UNLOADED ? NULL : &s->mods[i];
	return NULL;
}

/* C++'s __cxa_demangle (libstdc++, which every g++ program loads anyway):
 * the one demangler that follows the compiler's ABI as it changes. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/*
 * A name as people read it, malloc'd (NULL: out of memory): without the
 * symbol version the symbol table gives aliases ("__libc_start_main@@GLIBC_2.34"),
 * demangled ("_ZN3app5Store4fillEi" -> "app::Store::fill(int)", clones
 * as "... [clone .isra.0]"); anything else as it is.
 */
static char *readable_name(const char *name)
{
	char *n = strdup(name);
	if (!n)
		return NULL;
	char *at = strchr(n, '@');
	if (at && at != n)
		*at = 0;
	if (n[0] == '_' && n[1] == 'Z') {
		int st = -1;
		char *d = __cxa_demangle(n, NULL, NULL, &st);
		if (d && !st) {
			free(n);
			return d;
		}
		free(d);
	}
	return n;
}

/* A function's name from its DIE (through abstract origin and declaration):
 * the linkage name when it has one (C++: qualified, with its parameters once
 * demangled), else the plain name. */
static const char *die_name(Dwarf_Die *d)
{
	Dwarf_Attribute a;
	const char *n = dwarf_formstring(dwarf_attr_integrate(d, DW_AT_linkage_name, &a));
	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(d, DW_AT_MIPS_linkage_name, &a));
	return n ? n : dwarf_formstring(dwarf_attr_integrate(d, DW_AT_name, &a));
}

static int is_function(Dwarf_Die *d)
{
	int tag = dwarf_tag(d);
	return tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram;
}

/*
 * The inlined calls around pc, innermost first: each one's name and call
 * site. Returns how many (0 without debug info or inlining).
 * dwarf_getscopes() gives the scopes of the innermost inlined instance and
 * then those of its abstract definition, not of the function it was
 * inlined into; so each instance's concrete parents are asked in turn
 * (dwarf_getscopes_die), as eu-addr2line -i does, out to the subprogram.
 */
struct inl {
	const char *name, *call_file;
	int call_line;
};
static int inlined_scopes(Dwfl_Module *dm, uint64_t pc, struct inl *out, int max)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = dwfl_module_addrdie(dm, pc, &bias), *scopes = NULL, cur;
	if (!cu)
		return 0;
	int n = dwarf_getscopes(cu, pc - bias, &scopes), k = 0, have = 0;
	for (int i = 0; i < n && !have; i++)
		if (is_function(&scopes[i])) {
			cur = scopes[i];
			have = 1;
		}
	free(scopes);
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	if (have && dwarf_getsrcfiles(cu, &files, &nfiles) != 0)
		files = NULL;
	while (have && dwarf_tag(&cur) == DW_TAG_inlined_subroutine && k < max) {
		Dwarf_Attribute a;
		Dwarf_Word fileno = 0, line = 0;
		dwarf_formudata(dwarf_attr(&cur, DW_AT_call_file, &a), &fileno);
		dwarf_formudata(dwarf_attr(&cur, DW_AT_call_line, &a), &line);
		out[k].name = die_name(&cur);
		out[k].call_file = files && fileno < nfiles ? dwarf_filesrc(files, fileno, NULL, NULL) : NULL;
		out[k].call_line = (int)line;
		k++;
		Dwarf_Die *up = NULL; /* up[0] is cur itself */
		int m = dwarf_getscopes_die(&cur, &up);
		have = 0;
		for (int j = 1; j < m && !have; j++)
			if (is_function(&up[j])) {
				cur = up[j];
				have = 1;
			}
		free(up);
	}
	return k;
}

/* The frames of addr, innermost first, as one array linked by ->caller. */
static struct arr_frame_info *lookup(struct arr_symbolizer *s, uint64_t addr, unsigned e)
{
	uint64_t pc = addr - 1; /* inside the call instruction, not after it */
	const struct arr_module *m = module_of(s, pc, e);
	char buf[64 + 256];
	Dwfl *dw = m ? dwfl_of(s, e) : NULL;
	Dwfl_Module *dm = dw ? dwfl_addrmodule(dw, pc) : NULL;
	const char *name = dm ? dwfl_module_addrname(dm, pc) : NULL;
	struct inl inl[MAX_INLINE];
	int ninl = name ? inlined_scopes(dm, pc, inl, MAX_INLINE) : 0;
	struct arr_frame_info *fi = calloc((size_t)ninl + 1, sizeof *fi);
	if (!fi)
		return NULL;
	for (int i = 0; i <= ninl; i++) {
		fi[i].module = m ? m->path : NULL;
		fi[i].module_offset = m ? addr - m->base : 0;
		fi[i].caller = i < ninl ? &fi[i + 1] : NULL;
		fi[i].inlined = i < ninl;
	}
	if (name) {
		/* innermost: the line table's line; each outer frame: the call line of the scope inside it */
		Dwfl_Line *ln = dwfl_module_getsrc(dm, pc);
		int line = 0;
		const char *file = ln ? dwfl_lineinfo(ln, NULL, &line, NULL, NULL, NULL) : NULL;
		for (int i = 0; i <= ninl; i++) {
			fi[i].func = readable_name(i == ninl ? name : inl[i].name ? inl[i].name : "?");
			fi[i].known = 1;
			if (file) {
				fi[i].file = strdup(file);
				fi[i].line = line;
			}
			if (i < ninl) {
				file = inl[i].call_file;
				line = inl[i].call_line;
			}
		}
	} else {
		if (m) {
			const char *base = strrchr(m->path, '/');
			snprintf(buf, sizeof buf, "%.255s+0x%llx", base ? base + 1 : m->path,
				 (unsigned long long)(addr - m->base));
		} else {
			snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)addr);
		}
		fi->func = strdup(buf);
	}
	for (int i = 0; i <= ninl; i++)
		if (!fi[i].func)
			fi[i].func = unknown;
	return fi;
}

const struct arr_frame_info *arr_symbolize(struct arr_symbolizer *s, uint64_t addr)
{
	return arr_symbolize_at(s, addr, s->nepochs - 1);
}

const struct arr_frame_info *arr_symbolize_at(struct arr_symbolizer *s, uint64_t addr, unsigned epoch)
{
	static const struct arr_frame_info none = {.func = "?"};
	if (!addr)
		return &none;
	if (epoch >= s->nepochs)
		epoch = s->nepochs - 1;
	uint64_t key = addr + ((uint64_t)epoch << 48); /* user addresses are below 2^47 */
	if ((s->count + 1) * 2 > s->mask + 1) {
		size_t cap = (s->mask + 1) * 2;
		struct sym_ent *t = calloc(cap, sizeof *t);
		if (!t)
			return &none;
		for (size_t i = 0; i <= s->mask; i++)
			if (s->tab[i].addr) {
				size_t h = (s->tab[i].addr * 0x9E3779B97F4A7C15ull) >> 32;
				while (t[h & (cap - 1)].addr)
					h++;
				t[h & (cap - 1)] = s->tab[i];
			}
		free(s->tab);
		s->tab = t;
		s->mask = cap - 1;
	}
	size_t h = (key * 0x9E3779B97F4A7C15ull) >> 32;
	for (;; h++) {
		struct sym_ent *e = &s->tab[h & s->mask];
		if (e->addr == key)
			return e->fi ? e->fi : &none;
		if (!e->addr) {
			e->addr = key;
			e->fi = lookup(s, addr, epoch); /* NULL (out of memory): "?" */
			s->count++;
			return e->fi ? e->fi : &none;
		}
	}
}
