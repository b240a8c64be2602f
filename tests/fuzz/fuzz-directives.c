/*
 * tests/fuzz/fuzz-directives.c - the mapping directive parser
 * (engine/directives.c): every line of the input is a --directive SPEC;
 * the ones that parse are turned into the agents' values string and
 * checked against each other as the analysis does.
 */
#include "engine/directives.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct directives ds;
	char *text, *line, *save = NULL;
	char *cause = NULL;

	memset(&ds, 0, sizeof(ds));
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		directives_add(&ds, line, &cause);
		free(cause);
		cause = NULL;
	}
	directives_values(&ds, &cause);
	free(cause);
	for (size_t i = 0; i < ds.n; i++)
		(void)directives_recorded(&ds, &ds.d[i]);
	directives_release(&ds);
	free(text);
	return 0;
}
