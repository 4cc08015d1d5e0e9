/* Reference for kbench's null-syscall fidelity check: a bare C loop of
 * syscall(SYS_getppid), timed with CLOCK_MONOTONIC around the loop only.
 * Usage: null_syscall SECONDS -> prints ns per call of one timed loop whose
 * iteration count was calibrated to last about SECONDS. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double loop(unsigned long n)
{
	double t0 = now();
	for (unsigned long i = 0; i < n; i++)
		syscall(SYS_getppid);
	return now() - t0;
}

int main(int argc, char **argv)
{
	double target = (argc > 1 ? atof(argv[1]) : 0.2) * 1e9;
	unsigned long n = 1000;
	double t = loop(n);
	while (t < target / 16) {
		n *= 2;
		t = loop(n);
	}
	n = (unsigned long)(n * target / t);
	loop(n); /* warm-up, like kbench's warm-up round */
	printf("%.3f\n", loop(n) / n);
	return 0;
}
