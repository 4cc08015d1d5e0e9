/* Collatz sequence lengths: a loop whose branch follows the parity. */
#include <stdio.h>

int main(void)
{
	unsigned long best = 0, arg = 0;

	for (unsigned long n = 1; n < 600000; n++) {
		unsigned long x = n, steps = 0;
		while (x != 1) {
			if (x & 1)
				x = 3 * x + 1;
			else
				x >>= 1;
			steps++;
		}
		if (steps > best) {
			best = steps;
			arg = n;
		}
	}
	printf("collatz %lu %lu\n", arg, best);
	return 0;
}
