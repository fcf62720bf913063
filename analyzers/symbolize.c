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
	uint64_t addr; /* address + (epoch << 48); 0: empty */
	struct arr_frame_info fi;
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
	for (size_t i = 0; i <= s->mask; i++)
		if (s->tab[i].addr) {
			free((char *)s->tab[i].fi.func);
			free((char *)s->tab[i].fi.file);
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

static void lookup(struct arr_symbolizer *s, uint64_t addr, unsigned e, struct arr_frame_info *fi)
{
	uint64_t pc = addr - 1; /* inside the call instruction, not after it */
	const struct arr_module *m = module_of(s, pc, e);
	char buf[64 + 256];
	fi->module = m ? m->path : NULL;
	Dwfl *dw = m ? dwfl_of(s, e) : NULL;
	Dwfl_Module *dm = dw ? dwfl_addrmodule(dw, pc) : NULL;
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
	return arr_symbolize_at(s, addr, s->nepochs - 1);
}

const struct arr_frame_info *arr_symbolize_at(struct arr_symbolizer *s, uint64_t addr, unsigned epoch)
{
	static const struct arr_frame_info none = {"?", NULL, 0, NULL, 0};
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
			return &e->fi;
		if (!e->addr) {
			e->addr = key;
			lookup(s, addr, epoch, &e->fi);
			if (!e->fi.func)
				e->fi.func = strdup("?");
			s->count++;
			return &e->fi;
		}
	}
}
