/*
 * will-it-scale's malloc2 loop (malloc and free 1 kB, count) in a process
 * whose pieces can be moved one at a time, to find which placement moves
 * its rate (docs/accuracy.md, "malloc2 and where libc sits"). A child
 * process runs the loop pinned wherever taskset put it; the parent prints
 * one line per second in will-it-scale's format (min:N max:N total:N).
 *
 *   cc -O2 -g -o malloc2_layout scripts/fidelity/malloc2_layout.c -lpthread
 *   taskset -c 0 setarch -R ./malloc2_layout [options]
 *   (ulimit -s 400000; taskset -c 0 setarch -R ./malloc2_layout)  # libc lower
 *
 * Options (addresses in hex or decimal):
 *   -s N     seconds (default 4)
 *   -n N     put N more 1 kB chunks in the tcache bin first (0: as
 *            will-it-scale's task; 6 fills the bin, as kbench's forked task)
 *   -p N     malloc N bytes (kept) first: moves the chunk within the heap
 *   -B N     sbrk(N) first: moves the whole heap
 *   -A ADDR  the counter's shared page at ADDR
 *   -S N     alloca(N) before the loop: moves the stack pointer
 *   -K ADDR  run the loop on a 1 MB stack at ADDR (same thread, same TLS)
 *   -T ADDR  run the loop in a thread whose stack (and so its TLS) is at ADDR
 *   -t       run the loop in a new thread (its own arena, as threads mode)
 *   -M N     mallopt(M_ARENA_MAX, N) first (-M 1: threads share the main arena)
 *   -X ADDR  run the loop from a copy of its code at ADDR (calls through
 *            registers; x86-64 only)
 *
 * It prints the chunk, counter, stack and malloc addresses once on stderr.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

static int fill, pad, secs = 4, stackpad, new_thread, arena_max;
static long brkpad, counter_at, stack_at, thread_at, code_at;
static volatile unsigned long long *counter;
static ucontext_t uc_main, uc_task;

__attribute__((noinline)) static void testcase(unsigned long long *iterations)
{
	for (;;) {
		void *addr = malloc(1024);

		if (addr == NULL)
			abort();
		free(addr);
		(*iterations)++;
	}
}

static void *fixed(long at, size_t len, int prot)
{
	void *p = mmap((void *)at, len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return p;
}

/* The loop copied to `code_at`: malloc and free called through r12/r13. */
static void run_copied_loop(void)
{
	static const unsigned char code[] = {
		0x48, 0x89, 0xfb,		/* mov %rdi,%rbx */
		0x49, 0x89, 0xf4,		/* mov %rsi,%r12 */
		0x49, 0x89, 0xd5,		/* mov %rdx,%r13 */
		0x48, 0x83, 0xec, 0x08,		/* sub $8,%rsp */
		0xbf, 0x00, 0x04, 0x00, 0x00,	/* mov $1024,%edi */
		0x41, 0xff, 0xd4,		/* call *%r12 */
		0x48, 0x89, 0xc7,		/* mov %rax,%rdi */
		0x41, 0xff, 0xd5,		/* call *%r13 */
		0x48, 0x83, 0x03, 0x01,		/* addq $1,(%rbx) */
		0xeb, 0xec,			/* jmp to mov $1024 */
	};
	unsigned char *x = fixed(code_at, 4096, PROT_READ | PROT_WRITE | PROT_EXEC);

	memcpy(x, code, sizeof(code));
	fprintf(stderr, "code %p\n", (void *)x);
	((void (*)(volatile unsigned long long *, void *, void *))x)(counter, (void *)malloc,
								     (void *)free);
}

static void *run(void *arg)
{
	void *keep[64];
	void *p;
	char *s;

	(void)arg;
	if (brkpad)
		sbrk(brkpad);
	if (pad) {
		p = malloc(pad);
		__asm__ volatile("" : : "r"(p) : "memory");
	}
	for (int i = 0; i < fill + 1; i++)
		keep[i] = malloc(1024);
	for (int i = 0; i < fill + 1; i++)
		free(keep[i]);
	p = malloc(1024);
	fprintf(stderr, "chunk %p counter %p sp %p malloc %p\n", p, (void *)counter, (void *)&p,
		(void *)malloc);
	free(p);
	s = alloca(stackpad + 1);
	s[0] = 0;
	__asm__ volatile("" : : "r"(s) : "memory");
	if (code_at)
		run_copied_loop();
	testcase((unsigned long long *)counter);
	return NULL;
}

static void on_stack(void)
{
	run(NULL);
}

static void task(void)
{
	pthread_t t;

	if (arena_max)
		mallopt(M_ARENA_MAX, arena_max);
	if (stack_at) {
		getcontext(&uc_task);
		uc_task.uc_stack.ss_sp = fixed(stack_at, 1 << 20, PROT_READ | PROT_WRITE);
		uc_task.uc_stack.ss_size = 1 << 20;
		makecontext(&uc_task, on_stack, 0);
		swapcontext(&uc_main, &uc_task);
	}
	if (thread_at || new_thread) {
		pthread_attr_t at;

		pthread_attr_init(&at);
		if (thread_at)
			pthread_attr_setstack(&at, fixed(thread_at, 1 << 20, PROT_READ | PROT_WRITE),
					      1 << 20);
		pthread_create(&t, &at, run, NULL);
		pause();
	}
	run(NULL);
}

int main(int argc, char **argv)
{
	unsigned long long prev = 0;
	char *m;
	int c;

	while ((c = getopt(argc, argv, "s:n:p:B:A:S:K:T:tM:X:")) != -1) {
		switch (c) {
		case 's': secs = atoi(optarg); break;
		case 'n': fill = atoi(optarg) > 62 ? 62 : atoi(optarg); break;
		case 'p': pad = atoi(optarg); break;
		case 'B': brkpad = strtol(optarg, NULL, 0); break;
		case 'A': counter_at = strtol(optarg, NULL, 0); break;
		case 'S': stackpad = atoi(optarg); break;
		case 'K': stack_at = strtol(optarg, NULL, 0); break;
		case 'T': thread_at = strtol(optarg, NULL, 0); break;
		case 't': new_thread = 1; break;
		case 'M': arena_max = atoi(optarg); break;
		case 'X': code_at = strtol(optarg, NULL, 0); break;
		default: return 2;
		}
	}
	m = mmap((void *)counter_at, 1 << 16, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS | (counter_at ? MAP_FIXED_NOREPLACE : 0), -1, 0);
	if (m == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	counter = (void *)m;
	pid_t child = fork();

	if (child == 0)
		task();
	for (int i = 0; i <= secs; i++) {
		sleep(1);
		unsigned long long v = *counter;

		if (i)
			printf("min:%llu max:%llu total:%llu\n", v - prev, v - prev, v - prev);
		fflush(stdout);
		prev = v;
	}
	kill(child, SIGKILL);
	return 0;
}
