/*
 * tui/tui-where.c - where an event is in the source (tui_locate, for the
 * source pane, the status line, `bt` and `list`): the file and line the
 * session holds (a signal: the line of its pc, symbolized at ingest; an
 * entry or exit: the call site; else the function's declaration), and the
 * file on this machine, looked for as gdb does:
 *   1. an absolute name as it is;
 *   2. a relative name (a build that compiled `../src/a.c`, or one with
 *      -ffile-prefix-map) under the compilation directories
 *      (DW_AT_comp_dir) of the binary that holds the function (its
 *      module, engine/session.h session_func_where) and of the process's
 *      executable -- read once per binary (engine/symbols.h);
 *   3. under the directory of the session file (a session copied beside
 *      its sources);
 *   4. under the source path: $PROPEL_SOURCE_PATH, `.`, then each
 *      `:directory DIR`, as the name and as its base name.
 * The answers are kept (by file, process and source path: a `:directory`
 * asks again), as the status line and the source pane ask every frame.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/reconstruct.h"
#include "engine/session.h"
#include "engine/symbols.h"
#include "tui/tui-core.h"
#include "tui/tui.h"

#define WHERE_CACHE 16

/* binaries' compilation directories, by path (one TUI per process) */
static struct where_bin {
	char *path;
	char **dirs;
	size_t n;
} where_bins[WHERE_CACHE];
static int where_nbins;

static const struct where_bin *where_bin(const char *path)
{
	struct where_bin *b;
	int k;

	for (k = 0; k < where_nbins; k++)
		if (!strcmp(where_bins[k].path, path))
			return &where_bins[k];
	if (where_nbins == WHERE_CACHE) { /* full: forget the oldest */
		b = &where_bins[0];
		free(b->path);
		for (size_t j = 0; j < b->n; j++)
			free(b->dirs[j]);
		free(b->dirs);
		memmove(where_bins, where_bins + 1,
			(WHERE_CACHE - 1) * sizeof(*where_bins));
		where_nbins--;
	}
	b = &where_bins[where_nbins];
	memset(b, 0, sizeof(*b));
	if (!(b->path = strdup(path)))
		return NULL;
	if (symbols_comp_dirs(path, &b->dirs, &b->n))
		b->n = 0;
	where_nbins++;
	return b;
}

static char *where_try(const char *dir, const char *file)
{
	char buf[4096];
	struct stat st;

	snprintf(buf, sizeof(buf), "%s/%s", dir, file);
	return stat(buf, &st) == 0 && S_ISREG(st.st_mode) ? strdup(buf) : NULL;
}

/* under the comp_dirs of binary path */
static char *where_comp_dir(const char *path, const char *file)
{
	const struct where_bin *b;
	char *found = NULL;
	size_t k;

	if (!path || !*path || !(b = where_bin(path)))
		return NULL;
	for (k = 0; k < b->n && !found; k++)
		found = where_try(b->dirs[k], file);
	return found;
}

/* the last answers, by (file, process, source path): the status line and
 * the source pane ask at every frame */
#define WHERE_MEMO 16
static struct where_memo {
	char *file, *srcpath, *found;
	int pid;
} where_memo[WHERE_MEMO];
static int where_memo_next;

static char *where_lookup(struct tui *t, int th, int64_t idx, const char *file);

static char *where_find(struct tui *t, int th, int64_t idx, const char *file)
{
	struct where_memo *m;
	int pid = t->r->threads[th].pid, k;

	if (!file || !*file)
		return NULL;
	for (k = 0; k < WHERE_MEMO; k++) {
		m = &where_memo[k];
		if (m->file && m->pid == pid && !strcmp(m->file, file) &&
		    !strcmp(m->srcpath, t->srcpath))
			return m->found ? strdup(m->found) : NULL;
	}
	m = &where_memo[where_memo_next++ % WHERE_MEMO];
	free(m->file);
	free(m->srcpath);
	free(m->found);
	m->pid = pid;
	m->found = where_lookup(t, th, idx, file);
	m->file = strdup(file);
	m->srcpath = strdup(t->srcpath);
	if (!m->file || !m->srcpath) {
		free(m->file);
		free(m->srcpath);
		m->file = m->srcpath = NULL;
	}
	return m->found ? strdup(m->found) : NULL;
}

static char *where_lookup(struct tui *t, int th, int64_t idx, const char *file)
{
	char *dirs, *d, *save, *found = NULL, *bin = NULL, *name = NULL;
	const char *base, *sp;
	struct stat st;
	int64_t addr, f;

	if (!file || !*file)
		return NULL;
	if (file[0] == '/')
		return stat(file, &st) == 0 ? strdup(file) : NULL;
	/* 2. the comp_dirs of the function's binary, then the executable */
	f = recon_frame(t->r, th, idx);
	if (f >= 0 &&
	    !session_func_where(t->s, recon_get(t->r, th, f).func, &bin, &name,
				&addr))
		found = where_comp_dir(bin, file);
	free(bin);
	free(name);
	if (!found) {
		const struct session_proc *p = session_proc_find(
			t->procs, t->nprocs, t->r->threads[th].pid);

		if (p && p->exe)
			found = where_comp_dir(p->exe, file);
	}
	if (found)
		return found;
	/* 3. beside the session */
	if ((sp = session_path(t->s)) && strrchr(sp, '/')) {
		char dir[4096];

		snprintf(dir, sizeof(dir), "%.*s", (int)(strrchr(sp, '/') - sp),
			 sp);
		if ((found = where_try(*dir ? dir : "/", file)))
			return found;
	}
	/* 4. the source path */
	base = strrchr(file, '/');
	base = base ? base + 1 : file;
	if (!(dirs = strdup(t->srcpath)))
		return NULL;
	for (d = strtok_r(dirs, ":", &save); d && !found;
	     d = strtok_r(NULL, ":", &save))
		if (!(found = where_try(d, file)))
			found = where_try(d, base);
	free(dirs);
	return found;
}

int tui_locate(struct view *v, int th, int64_t idx, char **file, int *line,
	       char **path)
{
	struct tui *t = v->tui;
	const struct recon_ev ev = recon_get(t->r, th, idx), *e = &ev;
	struct recon_row row;
	int err;

	*path = NULL;
	*file = NULL;
	*line = 0;
	/* a signal: the line of its pc, symbolized at ingest with the load
	 * bias of the module that holds it (engine/ingest.c) */
	if (e->kind == SK_SIGNAL && !recon_row(t->r, e->id, &row) &&
	    !session_callsite(t->s, row.site, file, line)) {
		*path = where_find(t, th, idx, *file);
		return 0;
	}
	err = recon_event_site(t->r, th, idx, file, line);
	if (err)
		return err;
	*path = where_find(t, th, idx, *file);
	return 0;
}
