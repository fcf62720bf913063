/*
 * preload.c - the interposed functions of liballocrr-record.so.
 *
 * Each allocation hook calls the next definition (found with
 * dlsym(RTLD_NEXT), so another preloaded malloc is recorded too) and
 * appends one raw record. Allocations are timestamped after the call and
 * frees before it, so that across threads a block's allocation is stamped
 * before anyone else can free it, and a free before anyone can get the block
 * back. While dlsym itself allocates, a small static arena serves it.
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recorder.h"

#define EXPORT __attribute__((visibility("default")))

static struct {
	void *(*malloc)(size_t);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void (*free)(void *);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	void *(*reallocarray)(void *, size_t, size_t);
	size_t (*malloc_usable_size)(void *);
} real;

/* --- bootstrap: memory for dlsym before the real malloc is known --------- */

static _Alignas(64) unsigned char boot_arena[64 * 1024];
static size_t boot_used;
static int resolving;

static int is_boot(const void *p)
{
	return (const unsigned char *)p >= boot_arena && (const unsigned char *)p < boot_arena + sizeof boot_arena;
}

static void *boot_alloc(size_t size, size_t align)
{
	if (align < 16)
		align = 16;
	size_t start = (boot_used + 16 + align - 1) & ~(align - 1);
	if (size > sizeof boot_arena || start + size > sizeof boot_arena)
		return NULL;
	memcpy(boot_arena + start - 8, &size, sizeof size);
	boot_used = start + size;
	return boot_arena + start; /* static storage: already zero */
}

static size_t boot_size(const void *p)
{
	size_t size;
	memcpy(&size, (const unsigned char *)p - 8, sizeof size);
	return size;
}

static void resolve(void)
{
	if (resolving)
		return;
	resolving = 1;
	arr__rec_early(); /* before the first stamp, see there */
#define R(name) real.name = (__typeof__(real.name))dlsym(RTLD_NEXT, #name)
	R(calloc);
	R(free);
	R(realloc);
	R(posix_memalign);
	R(aligned_alloc);
	R(memalign);
	R(valloc);
	R(pvalloc);
	R(reallocarray);
	R(malloc_usable_size);
	R(malloc); /* last: its presence means the table is complete */
#undef R
	resolving = 0;
}

static inline int ready(void)
{
	if (ARR_LIKELY(real.malloc != NULL))
		return 1;
	resolve();
	return real.malloc != NULL;
}

/* --- the allocation API -------------------------------------------------- */

EXPORT void *malloc(size_t size)
{
	if (ARR_UNLIKELY(!ready()))
		return boot_alloc(size, 16);
	void *r = real.malloc(size);
	uint64_t t = rec_stamp();
	if (ARR_LIKELY(!(r == NULL)))
		rec_ok(ARR_OP_MALLOC, t, 2, size, (uint64_t)r, 0, 0);
	else
		arr__rec_event(ARR_OP_MALLOC, t, 1, errno, 2, size, (uint64_t)r, 0, 0);
	return r;
}

EXPORT void *calloc(size_t n, size_t size)
{
	if (ARR_UNLIKELY(!ready())) {
		size_t total;
		if (__builtin_mul_overflow(n, size, &total))
			return NULL;
		return boot_alloc(total, 16);
	}
	void *r = real.calloc(n, size);
	uint64_t t = rec_stamp();
	if (ARR_LIKELY(!(r == NULL)))
		rec_ok(ARR_OP_CALLOC, t, 3, n, size, (uint64_t)r, 0);
	else
		arr__rec_event(ARR_OP_CALLOC, t, 1, errno, 3, n, size, (uint64_t)r, 0);
	return r;
}

EXPORT void free(void *p)
{
	if (ARR_UNLIKELY(is_boot(p)))
		return;
	if (ARR_UNLIKELY(!ready()))
		return;
	uint64_t t = rec_stamp();
	real.free(p);
	rec_ok(ARR_OP_FREE, t, 1, (uint64_t)p, 0, 0, 0);
}

static void *boot_realloc(void *p, size_t size)
{
	void *n = ready() ? real.malloc(size) : boot_alloc(size, 16);
	if (n && p) {
		size_t old = boot_size(p);
		memcpy(n, p, old < size ? old : size);
	}
	return n;
}

EXPORT void *realloc(void *p, size_t size)
{
	if (ARR_UNLIKELY(is_boot(p) || !ready()))
		return boot_realloc(p, size);
	void *r = real.realloc(p, size);
	/* realloc(p, 0) frees p and may return NULL without failing. */
	uint64_t t = rec_stamp();
	if (ARR_LIKELY(!(r == NULL)))
		rec_ok(ARR_OP_REALLOC, t, 3, (uint64_t)p, size, (uint64_t)r, 0);
	else
		arr__rec_event(ARR_OP_REALLOC, t, 1, errno, 3, (uint64_t)p, size, (uint64_t)r, 0);
	return r;
}

EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
	if (ARR_UNLIKELY(is_boot(p) || !ready())) {
		size_t total;
		if (__builtin_mul_overflow(n, size, &total)) {
			errno = ENOMEM;
			return NULL;
		}
		return boot_realloc(p, total);
	}
	/* glibc's reallocarray calls realloc: record the outer call only. */
	uint8_t mode = arr__ts.mode;
	if (mode == MODE_ACTIVE)
		ts_set(MODE_BUSY);
	void *r = real.reallocarray(p, n, size);
	ts_set(mode);
	uint64_t t = rec_stamp();
	if (ARR_LIKELY(!(r == NULL)))
		rec_ok(ARR_OP_REALLOCARRAY, t, 4, (uint64_t)p, n, size, (uint64_t)r);
	else
		arr__rec_event(ARR_OP_REALLOCARRAY, t, 1, errno, 4, (uint64_t)p, n, size, (uint64_t)r);
	return r;
}

EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	if (ARR_UNLIKELY(!ready())) {
		void *p = boot_alloc(size, align);
		if (!p)
			return ENOMEM;
		*out = p;
		return 0;
	}
	int rc = real.posix_memalign(out, align, size);
	uint64_t t = rec_stamp();
	if (ARR_LIKELY(!(rc != 0)))
		rec_ok(ARR_OP_POSIX_MEMALIGN, t, 3, align, size, rc ? 0 : (uint64_t)*out, 0);
	else
		arr__rec_event(ARR_OP_POSIX_MEMALIGN, t, 1, rc, 3, align, size, rc ? 0 : (uint64_t)*out, 0);
	return rc;
}

EXPORT void *aligned_alloc(size_t align, size_t size)
{
	if (ARR_UNLIKELY(!ready()))
		return boot_alloc(size, align);
	void *r = real.aligned_alloc(align, size);
	uint64_t t = rec_stamp();
	if (ARR_LIKELY(!(r == NULL)))
		rec_ok(ARR_OP_ALIGNED_ALLOC, t, 3, align, size, (uint64_t)r, 0);
	else
		arr__rec_event(ARR_OP_ALIGNED_ALLOC, t, 1, errno, 3, align, size, (uint64_t)r, 0);
	return r;
}

EXPORT void *memalign(size_t align, size_t size)
{
	if (ARR_UNLIKELY(!ready()))
		return boot_alloc(size, align);
	void *r = real.memalign(align, size);
	uint64_t t = rec_stamp();
	if (ARR_LIKELY(!(r == NULL)))
		rec_ok(ARR_OP_MEMALIGN, t, 3, align, size, (uint64_t)r, 0);
	else
		arr__rec_event(ARR_OP_MEMALIGN, t, 1, errno, 3, align, size, (uint64_t)r, 0);
	return r;
}

EXPORT void *valloc(size_t size)
{
	if (ARR_UNLIKELY(!ready()))
		return boot_alloc(size, 4096);
	void *r = real.valloc(size);
	uint64_t t = rec_stamp();
	if (ARR_LIKELY(!(r == NULL)))
		rec_ok(ARR_OP_VALLOC, t, 2, size, (uint64_t)r, 0, 0);
	else
		arr__rec_event(ARR_OP_VALLOC, t, 1, errno, 2, size, (uint64_t)r, 0, 0);
	return r;
}

EXPORT void *pvalloc(size_t size)
{
	if (ARR_UNLIKELY(!ready()))
		return boot_alloc((size + 4095) & ~(size_t)4095, 4096);
	void *r = real.pvalloc(size);
	uint64_t t = rec_stamp();
	if (ARR_LIKELY(!(r == NULL)))
		rec_ok(ARR_OP_PVALLOC, t, 2, size, (uint64_t)r, 0, 0);
	else
		arr__rec_event(ARR_OP_PVALLOC, t, 1, errno, 2, size, (uint64_t)r, 0, 0);
	return r;
}

EXPORT size_t malloc_usable_size(void *p)
{
	if (is_boot(p))
		return boot_size(p);
	if (!ready() || !real.malloc_usable_size)
		return 0;
	return real.malloc_usable_size(p);
}

/* allocrr_mark() of include/allocrr/mark.h finds this with dlsym. */
EXPORT void allocrr_mark_impl(const char *name)
{
	int saved = errno;
	if (ready())
		arr__rec_mark(name);
	errno = saved;
}

/* --- process events: fork, exec, _exit ------------------------------------ */

/*
 * The recorder in the environment of exec'd programs. A program may reset
 * LD_PRELOAD for what it runs (`env LD_PRELOAD=libjemalloc.so.2 app`, a
 * shell's `env -i`), which would leave its children unrecorded. At the start
 * the recorder keeps its own library path and ALLOCRR_* settings; every exec
 * and posix_spawn that is given an environment without them gets a copy with
 * them put back: the library first in LD_PRELOAD (before what the program
 * asked for, so the program's choice of malloc is what gets recorded), and
 * each missing ALLOCRR_* variable as it was. What the program set itself is
 * kept. The copy is built on the stack (a vfork child may be the caller).
 */
#define ENV_KEEP_MAX 24
static struct {
	char lib[PATH_MAX];
	size_t lib_len;
	char vars[4096]; /* "NAME=value\0" of each ALLOCRR_* variable */
	const char *var[ENV_KEEP_MAX];
	size_t name_len[ENV_KEEP_MAX];
	int nvars;
	int on;
} envk;

extern char **environ;

static void env_capture(void)
{
	Dl_info info;
	if (!dladdr((void *)env_capture, &info) || !info.dli_fname || info.dli_fname[0] != '/')
		return;
	size_t len = strlen(info.dli_fname);
	if (len >= sizeof envk.lib)
		return;
	memcpy(envk.lib, info.dli_fname, len + 1);
	envk.lib_len = len;
	size_t used = 0;
	for (char **e = environ; e && *e && envk.nvars < ENV_KEEP_MAX; e++) {
		size_t n = strlen(*e);
		const char *eq = strchr(*e, '=');
		if (strncmp(*e, "ALLOCRR_", 8) || !eq || used + n + 1 > sizeof envk.vars)
			continue;
		memcpy(envk.vars + used, *e, n + 1);
		envk.var[envk.nvars] = envk.vars + used;
		envk.name_len[envk.nvars++] = (size_t)(eq - *e) + 1; /* with the '=' */
		used += n + 1;
	}
	const char *nc = getenv("ALLOCRR_NO_CHILDREN");
	envk.on = !(nc && !strcmp(nc, "1")) && !getenv("ALLOCRR_DISABLE");
}

/* Does LD_PRELOAD's value (after "LD_PRELOAD=") name our library? */
static int preload_has_lib(const char *v)
{
	while (*v) {
		size_t n = strcspn(v, ": ");
		if (n == envk.lib_len && !memcmp(v, envk.lib, n))
			return 1;
		v += n;
		v += *v != 0;
	}
	return 0;
}

static int env_find(char *const envp[], const char *name, size_t len)
{
	for (int i = 0; envp && envp[i]; i++)
		if (!strncmp(envp[i], name, len))
			return i;
	return -1;
}

/* Whether envp needs the recorder put back; if so the sizes of the copy:
 * *n pointers and *bytes of strings. */
static int env_plan(char *const envp[], size_t *n, size_t *bytes)
{
	if (!envk.on || !envk.lib_len)
		return 0;
	size_t count = 0;
	while (envp && envp[count])
		count++;
	int need = 0;
	int pre = env_find(envp, "LD_PRELOAD=", 11);
	if (pre < 0 || !preload_has_lib(envp[pre] + 11)) {
		need = 1;
		*bytes = 11 + envk.lib_len + 1 + (pre >= 0 ? strlen(envp[pre] + 11) : 0) + 1;
	} else {
		*bytes = 1;
	}
	for (int i = 0; i < envk.nvars; i++)
		need |= env_find(envp, envk.var[i], envk.name_len[i]) < 0;
	*n = count + (size_t)envk.nvars + 2;
	return need;
}

static char *const *env_build(char *const envp[], char **v, char *s)
{
	size_t k = 0;
	int pre = env_find(envp, "LD_PRELOAD=", 11), replaced = 0;
	if (pre < 0 || !preload_has_lib(envp[pre] + 11)) {
		replaced = 1;
		const char *old = pre >= 0 ? envp[pre] + 11 : "";
		size_t ol = strlen(old);
		memcpy(s, "LD_PRELOAD=", 11);
		memcpy(s + 11, envk.lib, envk.lib_len);
		size_t at = 11 + envk.lib_len;
		if (ol)
			s[at++] = ':';
		memcpy(s + at, old, ol + 1);
		v[k++] = s;
	}
	for (int i = 0; envp && envp[i]; i++)
		if (i != pre || !replaced)
			v[k++] = envp[i];
	for (int i = 0; i < envk.nvars; i++)
		if (env_find(envp, envk.var[i], envk.name_len[i]) < 0)
			v[k++] = (char *)envk.var[i];
	v[k] = NULL;
	return v;
}

/* Run stmt with `env`: envp, or the copy with the recorder put back. */
#define WITH_RECORDER_ENV(envp, stmt)                                 \
	do {                                                          \
		size_t n_ = 0, b_ = 0;                                \
		if (env_plan((envp), &n_, &b_)) {                     \
			char *v_[n_];                                 \
			char s_[b_];                                  \
			char *const *env = env_build((envp), v_, s_); \
			stmt;                                         \
		} else {                                              \
			char *const *env = (envp);                    \
			stmt;                                         \
		}                                                     \
	} while (0)

#define NEXT(type, name, ...)                    \
	static type (*next_##name)(__VA_ARGS__); \
	if (!next_##name)                        \
		next_##name = (type(*)(__VA_ARGS__))next_symbol(#name);

static void *next_symbol(const char *name)
{
	uint8_t mode = arr__ts.mode;
	ts_set(MODE_BUSY); /* dlsym may allocate */
	void *p = dlsym(RTLD_NEXT, name);
	ts_set(mode);
	return p;
}

EXPORT pid_t fork(void)
{
	NEXT(pid_t, fork, void);
	pid_t pid = next_fork();
	if (pid != 0) {
		int err = pid < 0 ? errno : 0;
		arr__rec_event_now(ARR_OP_FORK, pid < 0, err, (uint64_t)(int64_t)pid);
		errno = err ? err : errno;
	}
	return pid;
}

EXPORT void _exit(int status)
{
	NEXT(void, _exit, int);
	arr__final_flush(ARR_END_UNDERSCORE_EXIT, status);
	next__exit(status);
	__builtin_unreachable();
}

EXPORT void _Exit(int status)
{
	NEXT(void, _Exit, int);
	arr__final_flush(ARR_END_UNDERSCORE_EXIT, status);
	next__Exit(status);
	__builtin_unreachable();
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	NEXT(int, execve, const char *, char *const *, char *const *);
	arr__rec_exec(path);
	int rc;
	WITH_RECORDER_ENV(envp, rc = next_execve(path, argv, env));
	int err = errno;
	arr__rec_exec_failed(path, err);
	errno = err;
	return rc;
}

EXPORT int execv(const char *path, char *const argv[])
{
	NEXT(int, execve, const char *, char *const *, char *const *);
	arr__rec_exec(path);
	int rc;
	WITH_RECORDER_ENV(environ, rc = next_execve(path, argv, env));
	int err = errno;
	arr__rec_exec_failed(path, err);
	errno = err;
	return rc;
}

EXPORT int execvp(const char *file, char *const argv[])
{
	NEXT(int, execvpe, const char *, char *const *, char *const *);
	arr__rec_exec(file);
	int rc;
	WITH_RECORDER_ENV(environ, rc = next_execvpe(file, argv, env));
	int err = errno;
	arr__rec_exec_failed(file, err);
	errno = err;
	return rc;
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	NEXT(int, execvpe, const char *, char *const *, char *const *);
	arr__rec_exec(file);
	int rc;
	WITH_RECORDER_ENV(envp, rc = next_execvpe(file, argv, env));
	int err = errno;
	arr__rec_exec_failed(file, err);
	errno = err;
	return rc;
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	NEXT(int, fexecve, int, char *const *, char *const *);
	arr__rec_exec("(fexecve)");
	int rc;
	WITH_RECORDER_ENV(envp, rc = next_fexecve(fd, argv, env));
	int err = errno;
	arr__rec_exec_failed("(fexecve)", err);
	errno = err;
	return rc;
}

EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		       const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	NEXT(int, posix_spawn, pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
	     char *const *, char *const *);
	int rc;
	WITH_RECORDER_ENV(envp, rc = next_posix_spawn(pid, path, fa, attr, argv, env));
	return rc;
}

EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	NEXT(int, posix_spawnp, pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
	     char *const *, char *const *);
	int rc;
	WITH_RECORDER_ENV(envp, rc = next_posix_spawnp(pid, file, fa, attr, argv, env));
	return rc;
}

/*
 * dlopen: a library opened with RTLD_DEEPBIND binds its own malloc and free
 * calls to libc before the global scope, where the recorder is: they bypass
 * the hooks, and its blocks then look like frees of unknown addresses. Say
 * so, once. The hook must not change what dlopen does, and dlopen depends on
 * its caller (the caller's RUNPATH and $ORIGIN, its namespace: glibc takes
 * the return address), so it is an assembly trampoline: check the flag,
 * then jump -- not call -- to the real dlopen with the caller's return
 * address still on the stack.
 */
ARR_HIDDEN __attribute__((used)) void *arr__dlopen_check(const char *file, int mode)
{
	static void *(*next)(const char *, int);
	static int warned;
	int saved = errno;
	if (!next)
		next = (void *(*)(const char *, int))next_symbol("dlopen");
	if ((mode & RTLD_DEEPBIND) && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED) && arr__rec_owns_process() &&
	    envk.lib_len) {
		char line[PATH_MAX + 200];
		int n = snprintf(line, sizeof line,
				 "allocrr: %s is opened with RTLD_DEEPBIND: its own allocation calls bypass the "
				 "recorder and are not recorded\n",
				 file ? file : "(main program)");
		if (n > 0 && write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1) < 0)
			(void)0;
	}
	errno = saved;
	return (void *)next;
}

__asm__(".text\n"
	".globl dlopen\n"
	".type dlopen, @function\n"
	"dlopen:\n"
	"	push %rdi\n"
	"	push %rsi\n"
	"	sub $8, %rsp\n" /* 16-byte aligned for the call */
	"	call arr__dlopen_check\n"
	"	add $8, %rsp\n"
	"	pop %rsi\n"
	"	pop %rdi\n"
	"	test %rax, %rax\n"
	"	jz 1f\n"
	"	jmp *%rax\n"
	"1:	xor %eax, %eax\n" /* no dlopen found: fail as dlopen fails */
	"	ret\n"
	".size dlopen, .-dlopen\n");

/* dlclose: with stacks, the modules and every cached unwind rule and stack
 * node must be looked at again (another library may come to the same
 * addresses). Nothing else changes. */
EXPORT int dlclose(void *handle)
{
	static int (*next)(void *);
	if (!next)
		next = (int (*)(void *))next_symbol("dlclose");
	if (!next)
		return -1;
	int rc = next(handle);
	if (arr__hot.stacks)
		arr__stacks_dlclosed();
	return rc;
}

/* The execl family is variadic: gather the arguments, then use the above. */
#define GATHER_ARGS(arg0, ap, argv, extra)    \
	size_t argc = 1;                      \
	va_start(ap, arg0);                   \
	while (va_arg(ap, char *))            \
		argc++;                       \
	va_end(ap);                           \
	char *argv[argc + 1];                 \
	argv[0] = (char *)arg0;               \
	va_start(ap, arg0);                   \
	for (size_t i = 1; i <= argc; i++)    \
		argv[i] = va_arg(ap, char *); \
	extra;                                \
	va_end(ap)

EXPORT int execl(const char *path, const char *arg0, ...)
{
	va_list ap;
	GATHER_ARGS(arg0, ap, argv, (void)0);
	return execv(path, argv);
}

EXPORT int execlp(const char *file, const char *arg0, ...)
{
	va_list ap;
	GATHER_ARGS(arg0, ap, argv, (void)0);
	return execvp(file, argv);
}

EXPORT int execle(const char *path, const char *arg0, ...)
{
	va_list ap;
	char *const *envp;
	GATHER_ARGS(arg0, ap, argv, envp = va_arg(ap, char *const *));
	return execve(path, argv, envp);
}

__attribute__((constructor)) static void rec_ctor(void)
{
	env_capture();
	/* Make sure the top process opens its trace even if it never allocates. */
	if (ready() && arr__ts.mode == MODE_NEW && rec_enter()) {
		(void)arr__rec_slow(1); /* registration alone records thread_start; nothing else */
		rec_leave();
	}
}
