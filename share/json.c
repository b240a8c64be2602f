/*
 * share/json.c - see share/json.h.
 */
#include "share/json.h"

void json_str(FILE *out, const char *s)
{
	putc('"', out);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			putc('\\', out);
			putc(c, out);
		} else if (c < 0x20) {
			fprintf(out, "\\u%04x", c);
		} else {
			putc(c, out);
		}
	}
	putc('"', out);
}
