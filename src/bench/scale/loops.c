/*
 * The hot loops of kbench's scale testcases whose iteration takes a few
 * nanoseconds, in C, so that the system C compiler gives them the
 * instruction shape it gives will-it-scale's testcases: build.rs compiles
 * this file with the flags of will-it-scale's Makefile (-O2 -g -Wall) and
 * links it into kbench. In loops this short the shape alone (how a libc
 * function is called, which instruction increments a counter) moved
 * results by 5-34%, and by different amounts on different CPUs, so
 * imitating gcc's output from Rust matched one CPU only (docs/accuracy.md).
 *
 * Each loop bumps *ops once per operation, as will-it-scale's
 * `(*iterations)++` does, and never returns unless an operation fails; it
 * then returns the errno value. Cell-wide state (the "global" of
 * will-it-scale's testcases) lives in this file's static variables and is
 * reset by a prepare function that the cell process calls before its tasks
 * exist: threads share it, forked tasks get their own copy.
 *
 * Plain POSIX C, besides brk(): Linux has it, and FreeBSD on amd64 (its
 * libc keeps brk and sbrk there and nowhere else); elsewhere the brk loops
 * fail with ENOSYS.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <unistd.h>

typedef unsigned long long kbench_ops;

/* The cell's mutex and the variable it guards (pthread_mutex1, 3, 4, 5). */
static pthread_mutex_t cell_mutex = PTHREAD_MUTEX_INITIALIZER;
static unsigned long cell_val;
/* pthread_mutex5's variable: one per thread. */
static __thread unsigned long thread_val;

void kbench_mutex_prepare(void)
{
	pthread_mutex_init(&cell_mutex, NULL);
	cell_val = 0;
}

/* Lock and unlock the cell's mutex. */
int kbench_mutex_shared(kbench_ops *ops)
{
	for (;;) {
		pthread_mutex_lock(&cell_mutex);
		pthread_mutex_unlock(&cell_mutex);
		(*ops)++;
	}
}

/* Lock and unlock a mutex on the task's own stack. */
int kbench_mutex_private(kbench_ops *ops)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

	for (;;) {
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
		(*ops)++;
	}
}

/* The cell's mutex around an increment of the cell's variable. */
int kbench_mutex_shared_update(kbench_ops *ops)
{
	for (;;) {
		pthread_mutex_lock(&cell_mutex);
		cell_val++;
		pthread_mutex_unlock(&cell_mutex);
		(*ops)++;
	}
}

/*
 * The cell's mutex around an increment of a variable on the task's stack.
 * Through a pointer the compiler cannot see through (alloca), or the
 * variable is optimised away.
 */
int kbench_mutex_local_update(kbench_ops *ops)
{
	unsigned long *val = __builtin_alloca(sizeof(*val));

	*val = 0;
	for (;;) {
		pthread_mutex_lock(&cell_mutex);
		(*val)++;
		pthread_mutex_unlock(&cell_mutex);
		(*ops)++;
	}
}

/* The cell's mutex around an increment of a thread-local variable. */
int kbench_mutex_tls_update(kbench_ops *ops)
{
	for (;;) {
		pthread_mutex_lock(&cell_mutex);
		thread_val++;
		pthread_mutex_unlock(&cell_mutex);
		(*ops)++;
	}
}

/*
 * malloc() and free() of `size` bytes, the memory untouched. The null test
 * keeps the pair: the compiler may not drop an allocation whose result is
 * tested.
 */
int kbench_malloc_free(kbench_ops *ops, size_t size)
{
	for (;;) {
		void *p = malloc(size);

		if (p == NULL)
			return ENOMEM;
		free(p);
		(*ops)++;
	}
}

/* sem_wait() and sem_post() of a semaphore on the task's stack. */
int kbench_semaphore(kbench_ops *ops)
{
	sem_t sem;

	if (sem_init(&sem, 0, 1) != 0)
		return errno;
	for (;;) {
		sem_wait(&sem);
		sem_post(&sem);
		(*ops)++;
	}
}

#if defined(__linux__) || (defined(__FreeBSD__) && defined(__x86_64__))
/*
 * Move the break up by a page and back, from `start`; 2 operations per
 * round trip. The break never goes below `start`.
 */
static int brk_loop(kbench_ops *ops, char *start)
{
	long page = sysconf(_SC_PAGESIZE);
	char *at = start;

	for (;;) {
		at += page;
		if (brk(at) != 0)
			return errno;
		at -= page;
		if (brk(at) != 0)
			return errno;
		*ops += 2;
	}
}

/* From where the task finds the break. */
int kbench_brk_here(kbench_ops *ops)
{
	return brk_loop(ops, sbrk(0));
}

/* From one page above it: the heap mapping the loop resizes is the task's. */
int kbench_brk_above_page(kbench_ops *ops)
{
	long page = sysconf(_SC_PAGESIZE);
	char *old = sbrk(page);

	if (old == (char *)-1)
		return errno;
	return brk_loop(ops, old + page);
}
#else
int kbench_brk_here(kbench_ops *ops)
{
	(void)ops;
	return ENOSYS;
}

int kbench_brk_above_page(kbench_ops *ops)
{
	(void)ops;
	return ENOSYS;
}
#endif
