/* Binary searches over a sorted table: unpredictable compare-and-jump. */
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 16)

static int table[N];

static int find(int key)
{
	int lo = 0, hi = N - 1;

	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;
		if (table[mid] == key)
			return mid;
		if (table[mid] < key)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

int main(void)
{
	unsigned int x = 12345;
	long hits = 0;

	for (int i = 0; i < N; i++)
		table[i] = i * 3;
	for (int i = 0; i < 1000000; i++) {
		x = x * 1103515245u + 12345u;
		if (find((int)(x >> 8) % (3 * N)) >= 0)
			hits++;
	}
	printf("bsearch %ld\n", hits);
	return 0;
}
