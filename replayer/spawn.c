/*
 * spawn.c - allocators by name, and running the engine for one of them in a
 * fresh process (see allocrr/replay.h). Each replay gets its own process so
 * that no allocator sees another's heap, and LD_PRELOAD takes effect from
 * the first call.
 */
#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "allocrr/replay.h"

static const char *const libdirs[] = {
#ifdef ARR_MULTIARCH
	"/usr/lib/" ARR_MULTIARCH,   "/lib/" ARR_MULTIARCH,
#endif
	"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib",
};

static int add_env(struct arr_allocator *a, const char *name, const char *value)
{
	for (unsigned i = 0; i < a->nenv; i++)
		if (!strcmp(a->env[i][0], name)) { /* append to a list variable */
			size_t l = strlen(a->env[i][1]);
			const char *sep = !strcmp(name, "GLIBC_TUNABLES") ? ":" : ",";
			if (snprintf(a->env[i][1] + l, sizeof a->env[i][1] - l, "%s%s", sep, value) >=
			    (int)(sizeof a->env[i][1] - l))
				return ARR_ESYNTAX;
			return 0;
		}
	if (a->nenv == 4 || strlen(name) >= sizeof a->env[0][0] || strlen(value) >= sizeof a->env[0][1])
		return ARR_ESYNTAX;
	strcpy(a->env[a->nenv][0], name);
	strcpy(a->env[a->nenv][1], value);
	a->nenv++;
	return 0;
}

static int why(struct arr_allocator *a, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(a->why, sizeof a->why, fmt, ap);
	va_end(ap);
	return rc;
}

/* The tunables we know the range of: glibc's (glibc.malloc.*, the limits it
 * enforces or silently ignores past, from its manual and malloc.c for
 * 64-bit) and the built-in allocator's (docs/allocator.md). */
struct tunable {
	const char *name;
	long long min;
	unsigned long long max;
	int suffix; /* k/m/g accepted */
};
static const struct tunable glibc_tunables[] = {
	{"arena_max", 1, UINT64_MAX, 0},
	{"arena_test", 1, UINT64_MAX, 0},
	{"check", 0, 3, 0},
	{"hugetlb", 0, 2, 0},
	{"mmap_max", 0, INT32_MAX, 0},
	{"mmap_threshold", 0, 32ull << 20, 0},
	{"mxfast", 0, 160, 0},
	{"perturb", 0, 255, 0},
	{"tcache_count", 0, 65535, 0},
	{"tcache_max", 0, 1032, 0},
	{"tcache_unsorted_limit", 0, UINT64_MAX, 0},
	{"top_pad", 0, UINT64_MAX, 0},
	{"trim_threshold", 0, UINT64_MAX, 0},
};
static const struct tunable builtin_tunables[] = {
	{"purge_delay", INT64_MIN, INT64_MAX, 1}, /* operations; negative = never */
	{"mmap_threshold", 0, 1ull << 20, 1},     /* bytes, at most the largest class */
	{"idle_ratio", 0, 1000000, 1},            /* used:idle bound on free resident memory; 0 = none */
	{"span_min", 0, 1ull << 20, 1},           /* bytes: larger blocks from the span heap; 0 = none */
	{"sparse", 0, 1000000, 1},                /* pages' worth under which a class above 1 KiB is sparse */
	{"sparse_threads", 0, 1000000, 1},        /* sparse classes while at most this many heaps; 0 = any */
	{"sparse_min", 1024, 8192, 1},            /* bytes: the sparse classes are those above this */
	{"sparse_cache", 0, 1, 1},                /* a thread keeps the last span block <= 8 KiB it freed; 0 = off */
	{"span_cache", 0, 1ull << 30, 1},         /* bytes of free span-heap blocks a thread keeps; 0 = none */
	{"span_arenas", 1, 8, 1},                 /* span-heap arenas (locks) threads may be dealt to */
	{"span_split", 0, 1000000000, 1},         /* contended span mallocs before a thread's own arena */
	{"young", 0, 1000000, 1},                 /* young-program purge delay: 1/young of the ops; 0 = off */
	{"aged", 0, 1000000, 1},                  /* the full purge delay is at least 1/aged of the ops; 0 = off */
	{"light", 0, 1000000, 1},                 /* a thread's slow-path mallocs from the shared heap; 0 = none */
};

/* How an allocator takes its tunables "name:k=v,k=v". */
enum pass {
	PASS_GLIBC,    /* GLIBC_TUNABLES=glibc.malloc.k=v:... */
	PASS_LIST,     /* VAR=k=v,... as written (the built-in allocator's options) */
	PASS_JEMALLOC, /* MALLOC_CONF=k:v,... */
	PASS_UPPER,    /* PREFIXK=v, one variable each (mimalloc, tcmalloc) */
	PASS_NONE,     /* a library given by path: none known */
};

/* Every allocator known by name: what it is, where its library is, and its
 * tunables. One row each; arr_allocator_resolve() reads nothing else. */
struct known {
	const char *name, *alias;
	enum { K_GLIBC, K_BUILTIN, K_LIBRARY } kind;
	const char *file, *package;     /* K_LIBRARY: the library's file name and Debian package */
	const struct tunable *tunables; /* NULL: passed unchecked */
	size_t ntunables;
	enum pass pass;
	const char *var; /* the variable, or the prefix of PASS_UPPER's */
};
#define TUNABLES(t) t, sizeof t / sizeof *t
static const struct known known[] = {
	{"glibc", "libc", K_GLIBC, NULL, NULL, TUNABLES(glibc_tunables), PASS_GLIBC, "GLIBC_TUNABLES"},
	{"builtin", NULL, K_BUILTIN, NULL, NULL, TUNABLES(builtin_tunables), PASS_LIST, "ALLOCRR_MALLOC_OPTIONS"},
	{"jemalloc", NULL, K_LIBRARY, "libjemalloc.so.2", "libjemalloc2", NULL, 0, PASS_JEMALLOC, "MALLOC_CONF"},
	{"mimalloc", NULL, K_LIBRARY, "libmimalloc.so.2", "libmimalloc2.0", NULL, 0, PASS_UPPER, "MIMALLOC_"},
	{"tcmalloc", NULL, K_LIBRARY, "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4", NULL, 0, PASS_UPPER,
	 "TCMALLOC_"},
};
#undef TUNABLES

/* Check name=value against a table; the reason goes to a->why. */
static int check_tunable(struct arr_allocator *a, const struct tunable *t, size_t n, const char *style, const char *kv,
			 int klen)
{
	const char *v = kv + klen + 1;
	for (size_t i = 0; i < n; i++) {
		if (strncmp(t[i].name, kv, (size_t)klen) || t[i].name[klen])
			continue;
		char *end;
		errno = 0;
		int neg = *v == '-';
		unsigned long long u = neg ? 0 : strtoull(v, &end, 0);
		long long s = neg ? strtoll(v, &end, 0) : 0;
		int shift = 0;
		if (t[i].suffix && end != v && *end && strchr("kKmMgG", *end) && !end[1]) {
			shift = *end == 'k' || *end == 'K' ? 10 : *end == 'm' || *end == 'M' ? 20 : 30;
			end++;
		}
		int ok = !errno && end != v && !*end && (isdigit((unsigned char)*v) || neg);
		if (ok && shift) {
			if (neg)
				ok = s >= INT64_MIN >> shift, s = (long long)((unsigned long long)s << shift);
			else
				ok = u <= UINT64_MAX >> shift, u <<= shift;
		}
		if (ok)
			ok = neg ? t[i].min < 0 && s >= t[i].min
				 : u <= t[i].max && (t[i].min <= 0 || u >= (unsigned long long)t[i].min);
		if (ok)
			return 0;
		if (t[i].min == INT64_MIN)
			return why(a, ARR_ERANGE, "%s tunable '%s': bad value '%s' (want an integer%s)", style,
				   t[i].name, v, t[i].suffix ? ", k/m/g suffix allowed" : "");
		return why(a, ARR_ERANGE, "%s tunable '%s': bad value '%s' (want %lld to %llu%s)", style, t[i].name, v,
			   t[i].min, t[i].max, t[i].suffix ? ", k/m/g suffix allowed" : "");
	}
	char names[256] = "";
	for (size_t i = 0; i < n; i++)
		snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", t[i].name);
	return why(a, ARR_ESYNTAX, "unknown tunable '%.*s' for %s (known: %s)", klen, kv, style, names);
}

/* One "key=value" tunable for allocator k (NULL: a library given by path). */
static int add_tunable(struct arr_allocator *a, const struct known *k, const char *kv)
{
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv || !eq[1])
		return why(a, ARR_ESYNTAX, "bad tunables: '%s' is not key=value", kv);
	for (const char *p = kv; p < eq; p++)
		if (!isalnum((unsigned char)*p) && *p != '_')
			return why(a, ARR_ESYNTAX, "bad tunable name in '%s'", kv);
	char buf[256], name[128];
	int klen = (int)(eq - kv), rc;
	if (k && k->tunables && (rc = check_tunable(a, k->tunables, k->ntunables, k->name, kv, klen)))
		return rc;
	switch (k ? k->pass : PASS_NONE) {
	case PASS_GLIBC:
		snprintf(buf, sizeof buf, "glibc.malloc.%.*s=%s", klen, kv, eq + 1);
		rc = add_env(a, k->var, buf);
		break;
	case PASS_LIST:
		rc = add_env(a, k->var, kv);
		break;
	case PASS_JEMALLOC:
		snprintf(buf, sizeof buf, "%.*s:%s", klen, kv, eq + 1);
		rc = add_env(a, k->var, buf);
		break;
	case PASS_UPPER: {
		int n = snprintf(name, sizeof name, "%s", k->var);
		for (int i = 0; i < klen && n < (int)sizeof name - 1; i++)
			name[n++] = (char)toupper((unsigned char)kv[i]);
		name[n] = 0;
		rc = add_env(a, name, eq + 1);
		break;
	}
	default:
		return why(a, ARR_ESYNTAX, "no tunables are known for a library given by path");
	}
	return rc ? why(a, ARR_ESYNTAX, "tunables too long") : 0;
}

#if defined(__x86_64__)
#define ARR_EM EM_X86_64
#elif defined(__aarch64__)
#define ARR_EM EM_AARCH64
#endif

int arr_allocator_check_lib(const char *path, char *reason, size_t cap)
{
	struct arr_allocator a; /* only for why() */
	int rc = 0, fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0) {
		snprintf(reason, cap, "cannot open it: %s", strerror(errno));
		return -errno;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		snprintf(reason, cap, "not an ELF shared library");
		return ARR_EUNSUPPORTED;
	}
	size_t len = (size_t)st.st_size;
	const uint8_t *f = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (f == MAP_FAILED) {
		snprintf(reason, cap, "cannot read it: %s", strerror(errno));
		return ARR_EIO;
	}
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f;
	int has_malloc = 0, has_free = 0;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG)) {
		rc = why(&a, ARR_EUNSUPPORTED, "not an ELF file");
	} else if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB
#ifdef ARR_EM
		   || eh->e_machine != ARR_EM
#endif
	) {
		rc = why(&a, ARR_EUNSUPPORTED, "built for another machine");
	} else if (eh->e_type != ET_DYN) {
		rc = why(&a, ARR_EUNSUPPORTED, "not a shared library (ELF type %u)", eh->e_type);
	} else if (eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > len ||
		   (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > len - eh->e_shoff) {
		rc = why(&a, ARR_EUNSUPPORTED, "damaged ELF section table");
	} else {
		const Elf64_Shdr *sh = (const Elf64_Shdr *)(f + eh->e_shoff);
		int found = 0;
		for (unsigned i = 0; i < eh->e_shnum && !rc; i++) {
			if (sh[i].sh_type != SHT_DYNSYM)
				continue;
			found = 1;
			if (sh[i].sh_link >= eh->e_shnum || sh[i].sh_offset > len ||
			    sh[i].sh_size > len - sh[i].sh_offset || sh[sh[i].sh_link].sh_offset > len ||
			    sh[sh[i].sh_link].sh_size > len - sh[sh[i].sh_link].sh_offset) {
				rc = why(&a, ARR_EUNSUPPORTED, "damaged dynamic symbol table");
				break;
			}
			const Elf64_Sym *sym = (const Elf64_Sym *)(f + sh[i].sh_offset);
			const char *str = (const char *)(f + sh[sh[i].sh_link].sh_offset);
			size_t nsym = sh[i].sh_size / sizeof *sym, strsz = sh[sh[i].sh_link].sh_size;
			for (size_t k = 0; k < nsym; k++) {
				unsigned type = ELF64_ST_TYPE(sym[k].st_info), bind = ELF64_ST_BIND(sym[k].st_info);
				if (sym[k].st_shndx == SHN_UNDEF || sym[k].st_name >= strsz ||
				    (type != STT_FUNC && type != STT_GNU_IFUNC) ||
				    (bind != STB_GLOBAL && bind != STB_WEAK))
					continue;
				const char *name = str + sym[k].st_name;
				size_t room = strsz - sym[k].st_name;
				if (room > 6 && !memcmp(name, "malloc", 7))
					has_malloc = 1;
				else if (room > 4 && !memcmp(name, "free", 5))
					has_free = 1;
			}
		}
		if (!rc && !found)
			rc = why(&a, ARR_EUNSUPPORTED, "it has no dynamic symbol table");
		else if (!rc && !has_malloc)
			rc = why(&a, ARR_EUNSUPPORTED, "it exports no malloc");
		else if (!rc && !has_free)
			rc = why(&a, ARR_EUNSUPPORTED, "it exports no free");
	}
	munmap((void *)f, len);
	if (rc)
		snprintf(reason, cap, "%s", a.why);
	return rc;
}

/* A known allocator's library in the usual directories: 0, or ARR_ENOTFOUND
 * with out->lib its bare file name. */
static int find_library(const struct known *k, struct arr_allocator *out)
{
	for (size_t d = 0; d < sizeof libdirs / sizeof *libdirs; d++) {
		snprintf(out->lib, sizeof out->lib, "%s/%s", libdirs[d], k->file);
		if (!access(out->lib, R_OK))
			return 0;
	}
	snprintf(out->lib, sizeof out->lib, "%s", k->file);
	return ARR_ENOTFOUND;
}

int arr_allocator_resolve(const char *spec, const char *builtin_lib, struct arr_allocator *out)
{
	memset(out, 0, sizeof *out);
	snprintf(out->name, sizeof out->name, "%s", spec);
	const char *colon = strchr(spec, ':');
	size_t nlen = colon ? (size_t)(colon - spec) : strlen(spec);
	char name[4096];
	if (!nlen || nlen >= sizeof name)
		return ARR_EINVAL;
	memcpy(name, spec, nlen);
	name[nlen] = 0;

	const struct known *k = NULL;
	for (size_t i = 0; i < sizeof known / sizeof *known && !k; i++)
		if (!strcmp(name, known[i].name) || (known[i].alias && !strcmp(name, known[i].alias)))
			k = &known[i];
	if (k && k->kind == K_GLIBC) {
		out->is_glibc = 1;
	} else if (k && k->kind == K_BUILTIN) {
		out->is_builtin = 1;
		snprintf(out->lib, sizeof out->lib, "%s", builtin_lib ? builtin_lib : "liballocrr-malloc.so");
		if (!builtin_lib || access(out->lib, R_OK))
			return ARR_ENOTFOUND;
	} else if (k) {
		out->package = k->package;
		if (find_library(k, out))
			return ARR_ENOTFOUND;
	} else if (strchr(name, '/') || strstr(name, ".so")) {
		snprintf(out->lib, sizeof out->lib, "%s", name);
		if (access(out->lib, R_OK))
			return ARR_ENOTFOUND;
		/* the loader would ignore it (or load no malloc), and glibc's
		 * results would carry its name */
		if (arr_allocator_check_lib(out->lib, out->why, sizeof out->why))
			return ARR_EUNSUPPORTED;
	} else {
		return why(out, ARR_EINVAL, "unknown allocator '%s'", name);
	}
	/* tunables: name:k=v,k=v */
	if (colon && !colon[1])
		return why(out, ARR_ESYNTAX, "no tunables after ':'");
	if (colon) {
		char kvs[1024];
		snprintf(kvs, sizeof kvs, "%s", colon + 1);
		char *save = NULL;
		for (char *kv = strtok_r(kvs, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
			int rc = add_tunable(out, k, kv);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* MemAvailable in bytes, 0 if unknown. */
static uint64_t mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	if (!f)
		return 0;
	char line[128];
	unsigned long long kb = 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024;
}

static void human(char *b, size_t cap, uint64_t v)
{
	static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	double d = (double)v;
	int i = 0;
	while (d >= 1024 && i < 5)
		d /= 1024, i++;
	snprintf(b, cap, i ? "%.1f %s" : "%.0f %s", d, u[i]);
}

int arr_replay_choose_touch(const struct arr_workload_info *info, int explicit, enum arr_replay_touch *touch,
			    char *note, size_t cap)
{
	char need[32], have[32], rss[32];
	uint64_t avail = mem_available();
	int fits = !avail || info->ideal_rss <= avail / 10 * 9; /* leave the machine a tenth */
	human(need, sizeof need, info->ideal_rss);
	human(have, sizeof have, avail);
	/* the samples miss a spike between two of them, the high-water mark does not */
	uint64_t peak = info->recorded_peak_rss > info->recorded_true_peak_rss ? info->recorded_peak_rss
									       : info->recorded_true_peak_rss;
	human(rss, sizeof rss, peak);
	*note = 0;
	if (*touch == ARR_TOUCH_NONE)
		return 0;
	if (!fits) {
		snprintf(note, cap,
			 "touching the workload's peak live memory (%s) would take more than the memory "
			 "available (%s)%s",
			 need, have,
			 explicit ? "; --touch none replays without touching" : ": replaying with --touch none");
		if (explicit)
			return ARR_ENOMEM;
		*touch = ARR_TOUCH_NONE;
		return 0;
	}
	if (!explicit && peak && peak < info->ideal_rss / 2) {
		snprintf(note, cap,
			 "the program's recorded peak RSS (%s) is under half its peak live memory (%s): it touched "
			 "little of what it allocated; replaying with --touch none (--touch page to insist)",
			 rss, need);
		*touch = ARR_TOUCH_NONE;
	}
	return 0;
}

int arr_replay_spawn(const char *engine, const struct arr_allocator *a, const char *wl_path,
		     const struct arr_replay_options *opt, struct arr_replay_result *res, int *status)
{
	int pfd[2];
	*status = 0;
	memset(res, 0, sizeof *res);
	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	char samples[32], every[32], pace[32];
	snprintf(samples, sizeof samples, "%u", opt->samples);
	snprintf(every, sizeof every, "%u", opt->latency_every);
	snprintf(pace, sizeof pace, "%u", opt->pace);
	const char *argv[24];
	int n = 0;
	argv[n++] = engine;
	argv[n++] = "--result-fd=3";
	argv[n++] = "--threads";
	argv[n++] = arr_replay_threads_name(opt->threads);
	argv[n++] = "--touch";
	argv[n++] = arr_replay_touch_name(opt->touch);
	argv[n++] = "--samples";
	argv[n++] = samples;
	argv[n++] = "--latency-every";
	argv[n++] = every;
	argv[n++] = "--pace";
	argv[n++] = pace;
	if (a->is_glibc)
		argv[n++] = "--glibc-stats";
	if (opt->zeroing != ARR_ZERO_AS_RECORDED) {
		argv[n++] = "--zeroing";
		argv[n++] = arr_replay_zeroing_name(opt->zeroing);
	}
	if (opt->measure_usable)
		argv[n++] = "--measure-usable";
	argv[n++] = "--";
	argv[n++] = wl_path;
	argv[n] = NULL;

	fflush(NULL);
	pid_t parent = getpid(), pid = fork();
	if (pid < 0) {
		int e = errno;
		close(pfd[0]);
		close(pfd[1]);
		return -e;
	}
	if (pid == 0) {
		/* the engine dies with us, however we die (kept across exec) */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
			_exit(127);
		if (pfd[1] == 3)
			fcntl(3, F_SETFD, 0);
		else if (dup2(pfd[1], 3) < 0)
			_exit(127);
		if (a->lib[0])
			setenv("LD_PRELOAD", a->lib, 1);
		else
			unsetenv("LD_PRELOAD");
		for (unsigned i = 0; i < a->nenv; i++)
			setenv(a->env[i][0], a->env[i][1], 1);
		execv(engine, (char *const *)argv);
		_exit(127);
	}
	close(pfd[1]);
	int rc = arr_replay_result_read(pfd[0], res);
	close(pfd[0]);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	if (!rc && !(WIFEXITED(*status) && WEXITSTATUS(*status) == 0))
		rc = ARR_EIO;
	if (rc)
		arr_replay_result_release(res);
	return rc;
}
