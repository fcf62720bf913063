/*
 * symbolize.c - return addresses to function, file and line (see
 * allocrr/symbolize.h), with libdw: each recorded module is reported to one
 * Dwfl at its recorded bias, so the trace can be read on any machine with
 * the same binaries (or their debug files, found by build id).
 */
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocrr/error.h"
#include "allocrr/stacks.h"
#include "allocrr/symbolize.h"

struct sym_ent {
	uint64_t addr; /* 0: empty */
	struct arr_frame_info fi;
};

struct arr_symbolizer {
	Dwfl *dwfl;
	const struct arr_module *mods;
	size_t nmods;
	struct sym_ent *tab;
	size_t mask, count;
};

static char *debuginfo_path;
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
	s->dwfl = dwfl_begin(&callbacks);
	if (s->dwfl) {
		dwfl_report_begin(s->dwfl);
		/* The latest snapshot that lists an address wins: report each
		 * distinct (path, base) once. */
		for (size_t i = 0; i < s->nmods; i++) {
			const struct arr_module *m = &s->mods[i];
			int seen = 0;
			for (size_t j = 0; j < i && !seen; j++)
				seen = s->mods[j].base == m->base && !strcmp(s->mods[j].path, m->path);
			if (!seen && m->path[0] == '/')
				dwfl_report_elf(s->dwfl, m->path, m->path, -1, m->base, false);
		}
		dwfl_report_end(s->dwfl, NULL, NULL);
	}
	*out = s;
	return 0;
}

void arr_symbolizer_close(struct arr_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i <= s->mask; i++)
		if (s->tab[i].addr) {
			free((char *)s->tab[i].fi.func);
			free((char *)s->tab[i].fi.file);
		}
	free(s->tab);
	if (s->dwfl)
		dwfl_end(s->dwfl);
	free(s);
}

static const struct arr_module *module_of(const struct arr_symbolizer *s, uint64_t addr)
{
	for (size_t i = s->nmods; i-- > 0;)
		if (addr >= s->mods[i].base && addr - s->mods[i].base < s->mods[i].size)
			return &s->mods[i];
	return NULL;
}

static void lookup(struct arr_symbolizer *s, uint64_t addr, struct arr_frame_info *fi)
{
	uint64_t pc = addr - 1; /* inside the call instruction, not after it */
	const struct arr_module *m = module_of(s, pc);
	char buf[64 + 256];
	fi->module = m ? m->path : NULL;
	Dwfl_Module *dm = s->dwfl ? dwfl_addrmodule(s->dwfl, pc) : NULL;
	const char *name = dm ? dwfl_module_addrname(dm, pc) : NULL;
	if (name) {
		fi->func = strdup(name);
		fi->known = 1;
		Dwfl_Line *ln = dwfl_module_getsrc(dm, pc);
		int line = 0;
		const char *file = ln ? dwfl_lineinfo(ln, NULL, &line, NULL, NULL, NULL) : NULL;
		if (file) {
			fi->file = strdup(file);
			fi->line = line;
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
}

const struct arr_frame_info *arr_symbolize(struct arr_symbolizer *s, uint64_t addr)
{
	static const struct arr_frame_info none = {"?", NULL, 0, NULL, 0};
	if (!addr)
		return &none;
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
	size_t h = (addr * 0x9E3779B97F4A7C15ull) >> 32;
	for (;; h++) {
		struct sym_ent *e = &s->tab[h & s->mask];
		if (e->addr == addr)
			return &e->fi;
		if (!e->addr) {
			e->addr = addr;
			lookup(s, addr, &e->fi);
			if (!e->fi.func)
				e->fi.func = strdup("?");
			s->count++;
			return &e->fi;
		}
	}
}
