#include <ctype.h>
#include "minibuild.h"

size_t count_words(const char *text, struct hashmap *hm)
{
	struct strbuf w;
	size_t total = 0;

	sb_init(&w);
	for (const char *p = text;; p++) {
		if (*p && isalpha((unsigned char)*p)) {
			sb_putc(&w, (char)tolower((unsigned char)*p));
			continue;
		}
		if (w.len) {
			hm_get(hm, w.data)->count++;
			total++;
			w.len = 0;
			w.data[0] = '\0';
		}
		if (!*p)
			break;
	}
	sb_free(&w);
	return total;
}
