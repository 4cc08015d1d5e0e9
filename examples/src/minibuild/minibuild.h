/* wordfreq: count word frequencies of stdin (or a built-in text) and print
 * the most frequent words. Small on purpose: it exists to be compiled. */
#ifndef MINIBUILD_H
#define MINIBUILD_H

#include <stddef.h>

struct strbuf {
	char *data;
	size_t len, cap;
};

void sb_init(struct strbuf *sb);
void sb_putc(struct strbuf *sb, char c);
void sb_free(struct strbuf *sb);

struct entry {
	char *word;
	unsigned long count;
	struct entry *next;
};

struct hashmap {
	struct entry **buckets;
	size_t nbuckets, size;
};

void hm_init(struct hashmap *hm, size_t nbuckets);
struct entry *hm_get(struct hashmap *hm, const char *word);
void hm_free(struct hashmap *hm);

size_t count_words(const char *text, struct hashmap *hm);
struct entry **sorted_entries(struct hashmap *hm);

#endif
