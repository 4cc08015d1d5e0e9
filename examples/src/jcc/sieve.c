/* Sieve of Eratosthenes, repeated: a tight loop with a data-dependent
 * branch per element. */
#include <stdio.h>
#include <string.h>

#define N 2000000

static unsigned char composite[N + 1];

int main(void)
{
	unsigned long total = 0;

	for (int round = 0; round < 8; round++) {
		memset(composite, 0, sizeof(composite));
		for (long i = 2; i * i <= N; i++)
			if (!composite[i])
				for (long j = i * i; j <= N; j += i)
					composite[j] = 1;
		for (long i = 2; i <= N; i++)
			if (!composite[i])
				total += i & 0xff;
	}
	printf("sieve %lu\n", total);
	return 0;
}
