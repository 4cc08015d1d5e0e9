#include <stdlib.h>
#include <string.h>
#include "minibuild.h"

static int by_count(const void *a, const void *b)
{
	const struct entry *x = *(struct entry *const *)a;
	const struct entry *y = *(struct entry *const *)b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return strcmp(x->word, y->word);
}

struct entry **sorted_entries(struct hashmap *hm)
{
	struct entry **v = malloc((hm->size + 1) * sizeof(*v));
	size_t n = 0;

	if (!v)
		abort();
	for (size_t i = 0; i < hm->nbuckets; i++)
		for (struct entry *e = hm->buckets[i]; e; e = e->next)
			v[n++] = e;
	qsort(v, n, sizeof(*v), by_count);
	v[n] = NULL;
	return v;
}
