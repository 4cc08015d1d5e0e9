/* A loop of N dependent floating-point steps: its time is proportional to
 * N, so N * 1.05 is a program made 5% slower. */
#include <stdlib.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	volatile double x = 1.0;

	for (long i = 0; i < n; i++)
		x = x * 1.0000001 + 1e-9;
	return x < 0;
}
