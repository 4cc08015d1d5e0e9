#include <stdlib.h>
#include <string.h>
#include "minibuild.h"

static unsigned long hash(const char *s)
{
	unsigned long h = 5381;
	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

void hm_init(struct hashmap *hm, size_t nbuckets)
{
	hm->nbuckets = nbuckets;
	hm->size = 0;
	hm->buckets = calloc(nbuckets, sizeof(*hm->buckets));
	if (!hm->buckets)
		abort();
}

struct entry *hm_get(struct hashmap *hm, const char *word)
{
	size_t b = hash(word) % hm->nbuckets;
	struct entry *e;

	for (e = hm->buckets[b]; e; e = e->next)
		if (strcmp(e->word, word) == 0)
			return e;
	e = malloc(sizeof(*e));
	if (!e)
		abort();
	e->word = strdup(word);
	e->count = 0;
	e->next = hm->buckets[b];
	hm->buckets[b] = e;
	hm->size++;
	return e;
}

void hm_free(struct hashmap *hm)
{
	for (size_t i = 0; i < hm->nbuckets; i++) {
		struct entry *e = hm->buckets[i];
		while (e) {
			struct entry *n = e->next;
			free(e->word);
			free(e);
			e = n;
		}
	}
	free(hm->buckets);
}
