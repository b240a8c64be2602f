/*
 * share/json.h - writing JSON text: the one string escaper every JSON
 * writer uses (replay's jsonl, the exporters, vitals and report).
 */
#ifndef PROPEL_SHARE_JSON_H
#define PROPEL_SHARE_JSON_H

#include <stdio.h>

/* s as a JSON string, quotes included ("" for NULL); control characters
 * as \uXXXX, bytes >= 0x80 as they are (UTF-8 passes through). */
void json_str(FILE *out, const char *s);

#endif
