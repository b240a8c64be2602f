/*
 * engine/ingest-map.c - the map files of a session directory (format in
 * share/ring.h): each becomes a process image -- its processes row, its
 * modules with their load bias, its functions and call sites named and
 * placed once (engine/symbols.h) -- that engine/ingest.c's ring walk
 * reads by id.  Shares engine/ingest-int.h with ingest.c.
 */
#include "engine/ingest-int.h"
#include "engine/map-line.h"
#include "engine/untraced.h"
#include "engine/variance-store.h"

#define PR_DOMAIN "ingest"

struct ingest_proc *ingest_proc_new(struct ingest *in, const char *key)
{
	struct ingest_proc *p, **np;

	np = realloc(in->procs, (in->nprocs + 1) * sizeof(*np));
	if (!np)
		return NULL;
	in->procs = np;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->key = strdup(key);
	p->pid = (uint32_t)strtoul(key, NULL, 10);
	in->procs[in->nprocs++] = p;
	return p;
}

void ingest_proc_free(struct ingest_proc *p)
{
	size_t i;

	for (i = 0; i < p->nmods; i++)
		free(p->mods[i].path);
	free(p->mods);
	free(p->func_row);
	free(p->func_mod);
	free(p->valued);
	free(p->site_row);
	free(p->site_func);
	free(p->pcsites);
	chan_table_release(&p->chans);
	free(p->key);
	free(p);
}

struct ingest_proc *ingest_proc_find(struct ingest *in, const char *key)
{
	size_t i;

	for (i = 0; i < in->nprocs; i++)
		if (strcmp(in->procs[i]->key, key) == 0)
			return in->procs[i];
	return NULL;
}

int ingest_proc_insert(struct ingest *in, struct ingest_proc *p,
			      const char *nonce, const char *exe)
{
	sqlite3_stmt *st = in->ins_proc;

	sqlite3_bind_int64(st, 1, p->pid);
	sqlite3_bind_int64(st, 2, p->ppid);
	ingest_bind_text(st, 3, nonce);
	ingest_bind_text(st, 4, exe);
	sqlite3_bind_text(st, 5, in->host, -1, SQLITE_STATIC);
	if (ingest_step(st))
		return -EIO;
	p->row = sqlite3_last_insert_rowid(in->db);
	in->st->processes++;
	return 0;
}

static int ingest_mod_of(struct ingest_proc *p, uint32_t modid)
{
	size_t i;

	for (i = 0; i < p->nmods; i++)
		if (p->mods[i].id == modid)
			return (int)i;
	return -1;
}

/* m's symbols, the module opened at the first call: while the run goes
 * (in->live) only what the walk needs is looked up at once, and a
 * function named by the agent needs nothing of its module */
struct symbols_mod *ingest_mod_sm(struct ingest *in, struct ingest_mod *m)
{
	if (!m->opened) {
		m->opened = 1;
		m->sm = m->path ? symbols_module(in->sy, m->path, m->bias,
						 NULL) : NULL;
	}
	return m->sm;
}

/* The module of a call site of function funcid at addr: its caller's,
 * else the one that contains it; NULL when none. */
struct symbols_mod *ingest_site_sm(struct ingest *in, struct ingest_proc *p,
				   int funcid, uint64_t addr)
{
	struct symbols_mod *sm = NULL;

	if (funcid >= 0 && (uint32_t)funcid < p->nfunc &&
	    p->func_mod[funcid] >= 0)
		sm = ingest_mod_sm(in, &p->mods[p->func_mod[funcid]]);
	for (size_t i = 0; !sm && i < p->nmods; i++)
		if (symbols_contains(ingest_mod_sm(in, &p->mods[i]), addr))
			sm = p->mods[i].sm;
	return sm;
}

static int ingest_map_mod(struct ingest *in, struct ingest_proc *p,
			  const char *line)
{
	struct ingest_mod *nm;
	struct map_mod mm;

	if (map_line_mod(line, &mm))
		return -EINVAL;
	nm = realloc(p->mods, (p->nmods + 1) * sizeof(*nm));
	if (!nm)
		return -ENOMEM;
	p->mods = nm;
	nm = &p->mods[p->nmods++];
	nm->id = mm.id;
	nm->bias = mm.bias;
	nm->path = strdup(mm.path);
	nm->sm = NULL;
	nm->opened = 0;
	if (!in->live) /* else at its first use (ingest_mod_sm) */
		ingest_mod_sm(in, nm);
	return 0;
}

/* --args: what DWARF says of the function's arguments and return value
 * (symbols_params), for replay and the TUI to read its registers by. */
static int ingest_map_params(struct ingest *in, int64_t func,
			     struct symbols_mod *sm, uint64_t addr)
{
	sqlite3_stmt *st = in->ins_params;
	char *sig = NULL;
	int err;

	if (!st || symbols_params(sm, addr, &sig))
		return 0; /* none known: replay shows the registers */
	sqlite3_bind_int64(st, 1, func);
	sqlite3_bind_text(st, 2, sig, -1, SQLITE_TRANSIENT);
	err = ingest_step(st);
	free(sig);
	return err;
}

static int ingest_map_func(struct ingest *in, struct ingest_proc *p,
			   const char *line)
{
	struct map_func mf;
	unsigned funcid, flags;
	unsigned long long addr;
	const char *given, *file = NULL;
	char *name = NULL;
	int mi, ln = 0, err;
	struct ingest_mod *m = NULL;
	sqlite3_stmt *st = in->ins_func;

	if (map_line_func(line, &mf))
		return -EINVAL;
	funcid = mf.id;
	flags = mf.flags;
	addr = mf.addr;
	given = mf.name;
	if (funcid >= p->nfunc) {
		uint32_t n = p->nfunc, n2 = p->nfunc;

		if (ingest_grow((void **)&p->func_row, &n, funcid, sizeof(int64_t), 0) ||
		    ingest_grow((void **)&p->func_mod, &n2, funcid, sizeof(int32_t), 0xff))
			return -ENOMEM;
		p->nfunc = n;
	}
	mi = ingest_mod_of(p, mf.modid);
	if (mi >= 0)
		m = &p->mods[mi];
	/* The one place a function is named: replay, the TUI and every
	 * exporter read this row (never "?": see engine/symbols.h). */
	if (*given && strcmp(given, "-") != 0)
		name = symbols_demangle(given);
	else if (m && ingest_mod_sm(in, m))
		name = symbols_name(m->sm, addr, NULL);
	else
		name = symbols_fallback_name(m ? m->path : NULL,
					     m ? m->bias : 0, addr);
	if (!name)
		return -ENOMEM;
	if (m && !(flags & MAP_F_PLT) && !in->live && ingest_mod_sm(in, m))
		symbols_decl(m->sm, addr, &file, &ln);
	sqlite3_bind_int64(st, 1, p->row);
	sqlite3_bind_int64(st, 2, (int64_t)addr);
	sqlite3_bind_text(st, 3, name, -1, SQLITE_TRANSIENT);
	ingest_bind_text(st, 4, m ? m->path : NULL);
	ingest_bind_text(st, 5, file);
	if (file)
		sqlite3_bind_int(st, 6, ln);
	else
		sqlite3_bind_null(st, 6);
	sqlite3_bind_int(st, 7, (int)flags);
	err = ingest_step(st);
	free(name);
	if (err)
		return err;
	p->func_row[funcid] = sqlite3_last_insert_rowid(in->db);
	p->func_mod[funcid] = mi;
	if (m && !(flags & MAP_F_PLT) && in->live &&
	    (err = ingest_defer(in, p->func_row[funcid], p, (int)funcid,
				addr, 0)))
		return err;
	if (flags & MAP_F_VALUES) {
		if (ingest_grow((void **)&p->valued, &p->nvalcap, funcid, 1, 0))
			return -ENOMEM;
		p->valued[funcid] = (uint8_t)(flags & MAP_F_VALUES);
		p->nvalued++;
		if ((flags & MAP_F_ARGS) && m && ingest_mod_sm(in, m) &&
		    (err = ingest_map_params(in, p->func_row[funcid], m->sm,
					     addr)))
			return err;
	}
	in->st->functions++;
	return 0;
}

static int ingest_map_site(struct ingest *in, struct ingest_proc *p,
			   const char *line)
{
	struct map_site ms;
	unsigned siteid;
	unsigned long long addr;
	int funcid, ln = 0, err;
	struct symbols_mod *sm = NULL;
	const char *file = NULL;
	sqlite3_stmt *st = in->ins_site;

	if (map_line_site(line, &ms))
		return -EINVAL;
	siteid = ms.id;
	addr = ms.addr;
	funcid = ms.funcid;
	if (siteid >= p->nsite) {
		uint32_t n = p->nsite, n2 = p->nsite;

		if (ingest_grow((void **)&p->site_row, &n, siteid, sizeof(int64_t), 0) ||
		    ingest_grow((void **)&p->site_func, &n2, siteid, sizeof(int32_t),
			 0xff))
			return -ENOMEM;
		p->nsite = n;
	}
	if (!in->live)
		sm = ingest_site_sm(in, p, funcid, addr);
	if (sm)
		symbols_srcline(sm, addr, &file, &ln);
	sqlite3_bind_int64(st, 1, p->row);
	sqlite3_bind_int64(st, 2, (int64_t)addr);
	ingest_bind_text(st, 3, file);
	if (file)
		sqlite3_bind_int(st, 4, ln);
	else
		sqlite3_bind_null(st, 4);
	err = ingest_step(st);
	if (err)
		return err;
	p->site_row[siteid] = sqlite3_last_insert_rowid(in->db);
	p->site_func[siteid] = funcid;
	if (in->live &&
	    (err = ingest_defer(in, p->site_row[siteid], p, funcid, addr, 1)))
		return err;
	in->st->callsites++;
	return 0;
}

/* name is "<pid>.<nonce>.map" */
int ingest_map(struct ingest *in, const char *dir, const char *name,
		      char **cause)
{
	char path[4096], key[256], nonce[128] = "", *line = NULL, *exe = NULL;
	size_t cap = 0, kl = strlen(name) - 4;
	struct ingest_proc *p;
	ssize_t len;
	FILE *f;
	int err = 0, have_p = 0;

	if (kl >= sizeof(key))
		return 0;
	memcpy(key, name, kl);
	key[kl] = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "re");
	if (!f) {
		in->st->bad_map_lines++;
		return 0;
	}
	/* read before while the run went (engine/ingest-live.c): on from
	 * where that stopped */
	p = ingest_proc_find(in, key);
	if (!p)
		p = ingest_proc_new(in, key);
	if (!p) {
		fclose(f);
		return -ENOMEM;
	}
	have_p = p->map_have_p;
	if (p->map_off && fseek(f, p->map_off, SEEK_SET) < 0) {
		fclose(f);
		return 0;
	}
	if (strchr(key, '.'))
		snprintf(nonce, sizeof(nonce), "%s", strchr(key, '.') + 1);
	/* The P line comes first; the row is inserted as soon as it is read
	 * (or before the first other line, if it is missing). */
	while ((len = getline(&line, &cap, f)) > 0) {
		/* the agent appends a line with one write: one without its
		 * newline yet is read at the next call */
		if (in->live && line[len - 1] != '\n')
			break;
		p->map_off += len;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		if (line[0] == 'P' && !have_p) {
			unsigned pid, ppid;
			int off = 0;
			char nb[128];

			if (sscanf(line, "P %u %u %127s %n", &pid, &ppid, nb,
				   &off) >= 3) {
				p->pid = pid;
				p->ppid = ppid;
				snprintf(nonce, sizeof(nonce), "%s", nb);
				free(exe);
				exe = off ? strdup(line + off) : NULL;
			} else {
				in->st->bad_map_lines++;
			}
			have_p = 1;
			err = ingest_proc_insert(in, p, nonce, exe);
			if (err)
				break;
			continue;
		}
		if (!have_p) {
			have_p = 1;
			err = ingest_proc_insert(in, p, nonce, NULL);
			if (err)
				break;
		}
		switch (line[0]) {
		case 'M':
			err = ingest_map_mod(in, p, line);
			break;
		case 'F':
			err = ingest_map_func(in, p, line);
			break;
		case 'S':
			err = ingest_map_site(in, p, line);
			break;
		case 'E':
			if (sscanf(line, "E %" SCNd64, &p->e_status) == 1)
				p->has_e = 1;
			else
				err = -EINVAL;
			break;
		case 'W': /* the agent's own warning */
			in->st->agent_warnings++;
			if (!in->st->agent_warning[0])
				snprintf(in->st->agent_warning,
					 sizeof(in->st->agent_warning),
					 "pid %d: %s", (int)p->pid, line + 2);
			break;
		case 'C': /* a channel (engine/chan.h) */
			err = chan_table_line(&p->chans, line);
			break;
		case 'B': { /* the cost budget left a function untraced */
			unsigned fid;

			err = sscanf(line, "B %u", &fid) == 1 ? 0 : -EINVAL;
			if (!err)
				err = untraced_line(in->db, p->row,
						    fid < p->nfunc ? p->func_row[fid] : 0,
						    line);
			break;
		}
		case 'U': { /* a caller whose calls of it are left out */
			unsigned a, b;

			err = sscanf(line, "U %u %u", &a, &b) == 2 ? 0 : -EINVAL;
			if (!err && a < p->nfunc && b < p->nfunc)
				err = untraced_call(in->db, p->row, p->func_row[a],
						    p->func_row[b]);
			break;
		}
		case 'A': /* attach --adaptive traced or pruned a function */
			err = variance_store_line(in->db, p->row, p->func_row,
						  p->nfunc, line);
			break;
		case 'X': /* detached: sites restored */
			p->detached = 1;
			break;
		case 'P':
		case 0:
			break;
		default:
			err = -EINVAL;	/* a newer agent's line: skip it */
			break;
		}
		if (err == -EINVAL) {
			in->st->bad_map_lines++;
			err = 0;
		}
		if (err)
			break;
	}
	if (!err && !have_p && !in->live) {
		err = ingest_proc_insert(in, p, nonce, NULL);
		have_p = !err;
	}
	p->map_have_p = have_p;
	free(line);
	free(exe);
	fclose(f);
	if (err == -EIO)
		return ingest_sql_err(in, cause);
	return err;
}

/*
 * While the run goes (in->live) a function's declaration and a call
 * site's line -- the lookups that read a module's debug information, the
 * costly ones -- are left for later: the row is made at once (its id is
 * what the walk needs), and ingest_defer_run fills them in when the live
 * thread has nothing else to do, and at the end what is left, so that
 * the rows are those ingest_map makes in one go.
 */
int ingest_defer(struct ingest *in, int64_t row, struct ingest_proc *p,
		 int funcid, uint64_t addr, int site)
{
	if (in->ndefer == in->capdefer) {
		size_t nc = in->capdefer ? 2 * in->capdefer : 256;
		struct ingest_defer *nd = realloc(in->defer, nc * sizeof(*nd));

		if (!nd)
			return -ENOMEM;
		in->defer = nd;
		in->capdefer = nc;
	}
	in->defer[in->ndefer++] =
		(struct ingest_defer){ row, p, funcid, addr, site };
	return 0;
}

/* Up to max of the lookups left (ingest_defer); 0 or -EIO. */
int ingest_defer_run(struct ingest *in, size_t max)
{
	static const char *const sql[] = {
		"UPDATE functions SET file=?1, line=?2 WHERE id=?3",
		"UPDATE callsites SET file=?1, line=?2 WHERE id=?3",
	};
	int err = 0;

	for (; !err && max && in->defer_done < in->ndefer; max--) {
		const struct ingest_defer *d = &in->defer[in->defer_done++];
		sqlite3_stmt **st = &in->upd_defer[d->site];
		const char *file = NULL;
		int ln = 0;

		struct symbols_mod *sm;

		if (d->site) {
			sm = ingest_site_sm(in, d->p, d->funcid, d->addr);
			if (sm)
				symbols_srcline(sm, d->addr, &file, &ln);
		} else if (d->p->func_mod[d->funcid] >= 0 &&
			   (sm = ingest_mod_sm(in, &d->p->mods[
				   d->p->func_mod[d->funcid]]))) {
			symbols_decl(sm, d->addr, &file, &ln);
		}
		if (!file)
			continue;
		if (!*st && sqlite3_prepare_v2(in->db, sql[d->site], -1, st,
					       NULL) != SQLITE_OK)
			return -EIO;
		sqlite3_bind_text(*st, 1, file, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(*st, 2, ln);
		sqlite3_bind_int64(*st, 3, d->row);
		err = ingest_step(*st);
	}
	return err;
}
