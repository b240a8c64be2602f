/*
 * tui/view-source.c - the source pane, synchronized with the cursor
 * (TraceBack §4.3): the file of the cursor event's location (tui_locate:
 * DWARF line of a fault, the call site of an entry/exit, the function's
 * declaration otherwise) with that line marked, found through the source
 * path as gdb looks (tui/tui-where.c: comp_dir, the session's directory,
 * `:directory DIR`, $PROPEL_SOURCE_PATH), tabs expanded to 8 columns.  Where the file is not on
 * this machine it says so, and shows the disassembly when the binary is
 * there (tui_disasm).  Keeps the last file it read (one file in memory).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/session.h"
#include "tui/screen.h"
#include "tui/tui-core.h"
#include "tui/view.h"

struct source_view {
	char *path;  /* file in lines[] */
	char **lines;
	int nlines;
	int scroll;  /* extra scroll from the centred position (keys) */
	int64_t last_t, last_i;
};

static void source_drop(struct source_view *sv)
{
	int i;

	for (i = 0; i < sv->nlines; i++)
		free(sv->lines[i]);
	free(sv->lines);
	free(sv->path);
	sv->lines = NULL;
	sv->path = NULL;
	sv->nlines = 0;
}

static int source_read(struct source_view *sv, const char *path)
{
	FILE *f;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int alloc = 0;

	if (sv->path && strcmp(sv->path, path) == 0)
		return 0;
	source_drop(sv);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while ((n = getline(&line, &cap, f)) >= 0) {
		if (sv->nlines == alloc) {
			char **nl;

			alloc = alloc ? alloc * 2 : 256;
			nl = realloc(sv->lines, alloc * sizeof(*nl));
			if (!nl)
				break;
			sv->lines = nl;
		}
		if (n && line[n - 1] == '\n')
			line[n - 1] = 0;
		sv->lines[sv->nlines++] = tui_expand_tabs(line);
	}
	free(line);
	fclose(f);
	sv->path = strdup(path);
	return 0;
}

static int source_open(struct view *v, char **cause)
{
	v->priv = calloc(1, sizeof(struct source_view));
	return v->priv ? 0 : -ENOMEM;
}

static void source_free(struct view *v)
{
	source_drop(v->priv);
	free(v->priv);
}

static void draw_disasm(struct view *v, const struct screen_rect *r, int t,
			int64_t i, int row)
{
	char **lines = NULL, *cause = NULL;
	int cur = 0, n, k, first;

	n = tui_disasm(v, t, i, &lines, &cur, &cause);
	if (n <= 0) {
		screen_put(r, row, 1, SA_DIM, cause ? cause : "no disassembly");
		free(cause);
		return;
	}
	first = cur - (r->h - row) / 3;
	if (first < 0)
		first = 0;
	for (k = first; k < n && row < r->h; k++, row++)
		screen_put(r, row, 1, k == cur ? SA_REVERSE : SA_NORMAL, lines[k]);
	for (k = 0; k < n; k++)
		free(lines[k]);
	free(lines);
}

static void source_draw(struct view *v, const struct screen_rect *r, int focused)
{
	struct source_view *sv = v->priv;
	struct cursor *c = tui_cursor(v);
	int t = cursor_thread(c), line = 0, first, row, k, err;
	int64_t i = cursor_index(c);
	const struct recon_ev *e = cursor_event(c);
	char *file = NULL, *path = NULL;

	if (t != sv->last_t || i != sv->last_i)
		sv->scroll = 0;
	sv->last_t = t;
	sv->last_i = i;
	if (tui_locate(v, t, i, &file, &line, &path)) {
		screen_put(r, 0, 1, SA_DIM, "no source location for this event");
		draw_disasm(v, r, t, i, 1);
		goto out;
	}
	if (!path || (err = source_read(sv, path))) {
		screen_printf(r, 0, 1, SC_YELLOW,
			      "source not found: %s:%d  (add a directory with "
			      ":directory DIR)", file, line);
		draw_disasm(v, r, t, i, 1);
		goto out;
	}
	first = line - r->h / 2 + sv->scroll;
	if (first > sv->nlines - r->h)
		first = sv->nlines - r->h;
	if (first < 1)
		first = 1;
	sv->scroll = first - (line - r->h / 2); /* Home/End: no overshoot */
	for (row = 0, k = first; row < r->h && k <= sv->nlines; row++, k++) {
		int attr = SA_NORMAL;

		if (k == line)
			attr = e->kind == SK_SIGNAL ? SA_HIGHLIGHT : SA_REVERSE;
		if (k == line)
			screen_clear_row(r, row, 0, attr);
		screen_printf(r, row, 0, k == line ? attr : SC_GRAY, "%5d%s", k,
			      k == line ? ">" : " ");
		screen_put(r, row, 6, attr, sv->lines[k - 1] ? sv->lines[k - 1] : "");
	}
out:
	free(file);
	free(path);
}

static int source_key(struct view *v, int key)
{
	struct source_view *sv = v->priv;

	switch (key) {
	case SCREEN_KEY_HOME: sv->scroll = -100000; return 1;
	case SCREEN_KEY_END: sv->scroll = 100000; return 1;
	case SCREEN_KEY_UP: sv->scroll--; return 1;
	case SCREEN_KEY_DOWN: sv->scroll++; return 1;
	case SCREEN_KEY_PGUP: sv->scroll -= 10; return 1;
	case SCREEN_KEY_PGDN: sv->scroll += 10; return 1;
	}
	return 0;
}

const struct view_ops view_source_ops = {
	.name = "source",
	.title = "source",
	.help = "Up/Down/PgUp/PgDn scroll; follows the cursor",
	.open = source_open,
	.free = source_free,
	.draw = source_draw,
	.key = source_key,
};
