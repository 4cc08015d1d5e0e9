#include <stdlib.h>
#include "minibuild.h"

void sb_init(struct strbuf *sb)
{
	sb->len = 0;
	sb->cap = 64;
	sb->data = malloc(sb->cap);
	if (!sb->data)
		abort();
	sb->data[0] = '\0';
}

void sb_putc(struct strbuf *sb, char c)
{
	if (sb->len + 2 > sb->cap) {
		sb->cap *= 2;
		sb->data = realloc(sb->data, sb->cap);
		if (!sb->data)
			abort();
	}
	sb->data[sb->len++] = c;
	sb->data[sb->len] = '\0';
}

void sb_free(struct strbuf *sb)
{
	free(sb->data);
	sb->data = NULL;
	sb->len = sb->cap = 0;
}
