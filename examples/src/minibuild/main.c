#include <stdio.h>
#include <stdlib.h>
#include "minibuild.h"

static const char sample[] =
	"the cost of a system call is the cost of entering and leaving the "
	"kernel and the cost of the work the kernel does in between";

int main(int argc, char **argv)
{
	struct hashmap hm;
	struct entry **v;
	int top = argc > 1 ? atoi(argv[1]) : 5;

	hm_init(&hm, 256);
	printf("%zu words\n", count_words(sample, &hm));
	v = sorted_entries(&hm);
	for (int i = 0; v[i] && i < top; i++)
		printf("%6lu %s\n", v[i]->count, v[i]->word);
	free(v);
	hm_free(&hm);
	return 0;
}
