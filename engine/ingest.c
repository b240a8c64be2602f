/*
 * engine/ingest.c - ring and map files into the session store (see
 * engine/ingest.h; formats in share/ring.h and share/record.h).
 *
 * Order of work in ingest_dir() (engine/ingest-dir.c; record begins it
 * while the run goes, engine/ingest-live.h):
 *   1. list the directory; every *.map becomes a process image
 *      (ingest_map, engine/ingest-map.c: processes row, functions and
 *      callsites symbolized once -- into a symbols cache that record may
 *      have warmed while the program ran, ingest_dir_symbols and
 *      engine/ingest-warm.h);
 *   2. every *.ring is mapped and checked (ingest_ring_open); damaged ones are
 *      counted and skipped; a ring with no map gets a bare process row; a
 *      big one (a drained spool) is mapped ahead of the walk by a thread
 *      (engine/ingest-fault.h), not all at once here;
 *   3. the TSC rate is fixed once for the session (ingest_calibrate);
 *   4. each ring is read twice (propel_ring_walk): pass 1 finds the lowest
 *      relative depth and the exits whose entries were overwritten, pass 2
 *      inserts the events with their final depth, after the rebuilt entries
 *      (a signal's pc becomes a callsites row, ingest_signal_site); a
 *      drained ring, or one on its first lap, is read once, both passes
 *      in one walk, and again only when its depth went below its start
 *      (ingest_spec_undo);
 *   5. process rows get their times, exit status and crash signal; meta gets
 *      tsc_hz and crashed.
 * Events go through one engine/chunk.h writer: compressed chunks of up to
 * CHUNK_EVENTS events per thread, numbered in the order stored.
 * All of it is one transaction: a store error rolls everything back.
 *
 * Names and lines are worked out here, once, with each module's load bias
 * from its M line: a function is named by its F line, else by its symbol
 * (engine/symbols.h: symtab, debug file, debuginfod, MiniDebugInfo,
 * dynsym), else "module+0xOFFSET" (never "?"); a signal's site is the line
 * of its pc.  Replay, the TUI and the exporters only read the rows.
 *
 * Depth (TraceBack 4.1, mined back to front): with d = entries - exits seen
 * so far, an exit that takes d below its lowest value so far closes a frame
 * whose entry was overwritten.  Those exits, in order, are the lost frames
 * from the innermost out; the outermost frame still visible was called from
 * a call site whose function, when it is a traced one, is one more open
 * frame (its entry is gone too).  Pass 2 emits an entry for each (arg0 = 1,
 * at the time of the thread's oldest record) so that every frame of the
 * thread is balanced and depth 0 is the outermost traced frame.
 *
 * A function whose F line has flag 4 or 8 (a mapping directive names it,
 * share/agent-abi.h) has one ARG after its ENTRY or EXIT records: the
 * value, stored as the event's arg2.  Flag 16 (--args): six more after
 * the ENTRY, the argument registers, stored by the entry's id in
 * table argchunks (engine/argchunk.h: compressed, a row per thousands) (rax at the exit is its arg2, flag 8); what DWARF says of
 * the arguments goes to table params (ingest-map.c).
 *
 * The hot loop (pass 2) appends to the chunk writer's buffer and does no
 * allocation and no query per event; plain call records go the short way
 * (ingest_call), and the writer's thread compresses a full chunk while
 * the next is encoded (engine/chunk.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "engine/chan.h"
#include "engine/chunk.h"
#include "engine/ingest.h"
#include "engine/ingest-int.h"
#include "engine/match.h"
#include "engine/session.h"
#include "engine/symbols.h"
#include "share/clock.h"
#include "share/log.h"
#include "share/record.h"
#include "share/ring.h"

#define PR_DOMAIN "ingest"

/* ---- small helpers ---- */

int ingest_sql_err(struct ingest *in, char **cause)
{
	return propel_cause(cause, -EIO, "%s: %s", session_path(in->s),
			    sqlite3_errmsg(in->db));
}

int ingest_step(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : -EIO;
}

void ingest_bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

int ingest_grow(void **arr, uint32_t *n, uint32_t want, size_t elem, int fill)
{
	uint32_t nn = *n ? *n : 64;
	void *p;

	if (want < *n)
		return 0;
	while (nn <= want)
		nn *= 2;
	p = realloc(*arr, (size_t)nn * elem);
	if (!p)
		return -ENOMEM;
	memset((char *)p + (size_t)*n * elem, fill, (size_t)(nn - *n) * elem);
	*arr = p;
	*n = nn;
	return 0;
}



/* Times are held within +-2^61 ns (73 years): a damaged ring's TSC or
 * calibration cannot overflow them, nor the differences the chunks keep. */
#define INGEST_NS_MAX ((int64_t)1 << 61)

static inline int64_t ingest_ns(const struct ingest_walk *w, uint64_t tsc)
{
	double x = (double)(int64_t)(tsc - w->in->anchor_tsc) *
		   w->in->ns_per_tick;
	int64_t base, ns;

	if (x != x)
		x = 0;
	else if (x > (double)INGEST_NS_MAX)
		x = (double)INGEST_NS_MAX;
	else if (x < -(double)INGEST_NS_MAX)
		x = -(double)INGEST_NS_MAX;
	/* llround's rounding (half away from zero), without a libm call on
	 * every event */
	if (__builtin_add_overflow(w->in->anchor_ns, w->in->offset_ns, &base) ||
	    __builtin_add_overflow(base, x >= 0 ? (int64_t)(x + 0.5)
						: -(int64_t)(0.5 - x), &ns))
		ns = x >= 0 ? INGEST_NS_MAX : -INGEST_NS_MAX;
	return ns > INGEST_NS_MAX ? INGEST_NS_MAX
	       : ns < -INGEST_NS_MAX ? -INGEST_NS_MAX : ns;
}

static int ingest_insert(struct ingest_walk *w, uint64_t tsc, int kind,
			 int64_t depth, int64_t func, int64_t site, int nargs,
			 int64_t a0, int64_t a1, int64_t a2)
{
	int64_t ns = ingest_ns(w, tsc);
	struct session_event ev = {
		.ts_ns = ns,
		.func = func > 0 ? func : 0,
		.site = site > 0 ? site : 0,
		.arg = { a0, a1, a2 },
		.depth = (int32_t)depth,
		.kind = (uint8_t)kind,
		.has = (uint8_t)(SE_DEPTH | ((1u << nargs) - 1)),
	};

	if ((w->last_id = chunk_writer_add(w->in->cw, &ev)) < 0)
		return -EIO;
	if (!w->nins++)
		w->first_ns = ns;
	w->last_ns = ns;
	return 0;
}

static inline int64_t ingest_func(const struct ingest_proc *p, uint32_t id)
{
	return id < p->nfunc ? p->func_row[id] : 0;
}

static inline int64_t ingest_site(const struct ingest_proc *p, uint32_t id)
{
	return id < p->nsite ? p->site_row[id] : 0;
}

/*
 * The source line of a signal's pc, as a callsites row (0 when unknown):
 * symbolized here, once, in the module that contains the pc and with that
 * module's load bias, so that every reader (the TUI's fault line) gets the
 * faulting line without symbols of its own.  Rows are shared by equal pcs
 * of a process; past INGEST_MAX_PCSITES distinct pcs (a program that lives
 * on signals) the rest get none.
 */
#define INGEST_MAX_PCSITES 4096

static int64_t ingest_signal_site(struct ingest *in, struct ingest_proc *p,
				  uint64_t pc)
{
	struct ingest_pcsite *np;
	sqlite3_stmt *st = in->ins_site;
	const char *file = NULL;
	int64_t row = 0;
	size_t i;
	int ln = 0;

	if (!pc)
		return 0;
	for (i = 0; i < p->npcsites; i++)
		if (p->pcsites[i].pc == pc)
			return p->pcsites[i].row;
	if (p->npcsites >= INGEST_MAX_PCSITES)
		return 0;
	for (i = 0; i < p->nmods && !file; i++)
		if (symbols_contains(ingest_mod_sm(in, &p->mods[i]), pc))
			symbols_srcline(p->mods[i].sm, pc, &file, &ln);
	if (file) {
		sqlite3_bind_int64(st, 1, p->row);
		sqlite3_bind_int64(st, 2, (int64_t)pc);
		sqlite3_bind_text(st, 3, file, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(st, 4, ln);
		if (ingest_step(st))
			return -EIO;
		row = sqlite3_last_insert_rowid(in->db);
		in->st->callsites++;
	}
	np = realloc(p->pcsites, (p->npcsites + 1) * sizeof(*np));
	if (!np)
		return row;
	p->pcsites = np;
	p->pcsites[p->npcsites++] = (struct ingest_pcsite){ pc, row };
	return row;
}

/*
 * A send or recv (inject/agent/comm.c): the event (arg0 = fd, arg1 =
 * bytes, arg2 = the stream offset when there is one) and its comm row,
 * with the channel named from the process's C lines.  A send is dated
 * at its call's entry, a recv at its return.
 */
#define INGEST_COMM_OFFSET 1u
#define INGEST_COMM_DGRAM 2u
#define INGEST_COMM_HELD 4u /* a fourth ARG: when the agent began holding */

static int ingest_comm(struct ingest_walk *w, unsigned type, uint64_t tsc,
		       uint32_t fd, uint32_t bytes, const uint64_t *arg,
		       int narg)
{
	const struct chan_info *ci;
	sqlite3_stmt *st = w->in->ins_comm;
	uint32_t fl = narg > 1 ? (uint32_t)(arg[1] >> 32) : 0;
	int send = type == PROPEL_REC_SEND;
	int err;

	if (send && narg > 2 && arg[2] && arg[2] <= tsc)
		tsc = arg[2];
	err = ingest_insert(w, tsc, type, w->depth, 0, 0,
			    (fl & INGEST_COMM_OFFSET) ? 3 : 2, fd, bytes,
			    (fl & INGEST_COMM_OFFSET) ? (int64_t)arg[0] : 0);
	if (err || !st)
		return err;
	ci = narg > 1 ? chan_table_get(&w->p->chans, (uint32_t)arg[1]) : NULL;
	sqlite3_bind_int64(st, 1, w->last_id);
	sqlite3_bind_int64(st, 2, w->r->h->pid);
	sqlite3_bind_int64(st, 3, w->r->h->tid);
	sqlite3_bind_int64(st, 4, ingest_ns(w, tsc));
	sqlite3_bind_int(st, 5, (int)type);
	sqlite3_bind_int64(st, 6, fd);
	sqlite3_bind_int64(st, 7, bytes);
	ingest_bind_text(st, 8, ci ? ci->chan : NULL);
	sqlite3_bind_int(st, 9, ci ? (send ? ci->send_dir : ci->recv_dir) : 0);
	ingest_bind_text(st, 10, ci ? ci->peer : NULL);
	if (fl & INGEST_COMM_OFFSET)
		sqlite3_bind_int64(st, 11, (int64_t)arg[0]);
	else
		sqlite3_bind_null(st, 11);
	if (fl & INGEST_COMM_DGRAM)
		sqlite3_bind_int64(st, 12, (int64_t)arg[0]);
	else
		sqlite3_bind_null(st, 12);
	err = ingest_step(st);
	/* the agent held the send for its propagation request: propel's
	 * time, not the program's (table holds, engine/session.c) */
	if (!err && send && (fl & INGEST_COMM_HELD) && narg > 3 && arg[3] &&
	    arg[3] < tsc && w->in->ins_hold) {
		int64_t a = ingest_ns(w, arg[3]);

		st = w->in->ins_hold;
		sqlite3_bind_int64(st, 1, w->last_id);
		sqlite3_bind_int64(st, 2, w->r->h->pid);
		sqlite3_bind_int64(st, 3, w->r->h->tid);
		sqlite3_bind_int64(st, 4, a);
		sqlite3_bind_int64(st, 5, ingest_ns(w, tsc) - a);
		err = ingest_step(st);
	}
	return err;
}

/* How many ARGs follow an ENTRY (EXIT) record of func: a directive's
 * value (F flag 4; 8 at the exit) and --args' six registers (16). */
static inline int ingest_valued(const struct ingest_proc *p, unsigned type,
				uint32_t func)
{
	unsigned f = func < p->nvalcap ? p->valued[func] : 0;

	if (type != PROPEL_REC_ENTRY)
		return (f & 8) ? 1 : 0;
	return ((f & 4) ? 1 : 0) + ((f & 16) ? 6 : 0);
}

/* --args: an entry's six argument registers, by its event's id. */
static int ingest_args(struct ingest_walk *w, const uint64_t *v)
{
	struct ingest *in = w->in;

	/* made at the first --args entry: most sessions have none */
	if (!in->args && argchunk_writer_new(in->db, &in->args))
		return -EIO;
	return argchunk_add(in->args, w->last_id, v);
}

/*
 * An entry at the ring's outermost level (pass 1 or 3): which traced
 * function made the call (its site's owner) is a frame open when the ring
 * began, and when it changes, the frame before returned unrecorded (a
 * frame open at an attach returns through its original address) into its
 * caller, the new owner: an nginx worker attached in epoll_wait shows
 * ngx_epoll_process_events, then ngx_process_events_and_timers, then
 * ngx_worker_process_cycle.  Pass 2 opens them all, outermost first, so
 * that a request's call path is the same in the first loop iteration as
 * in the later ones (one guessed frame made the first iterations' paths
 * differ from the later ones', and a diagnosis comparing a flow of each
 * took every frame above the request for a difference).
 */
static void ingest_chain_note(struct ingest_walk *w, uint32_t a, uint32_t b)
{
	const struct ingest_proc *p = w->p;
	int32_t owner;
	uint32_t k, n = w->nchain;

	if (b >= p->nsite || (owner = p->site_func[b]) < 0)
		return;
	/* a call site of a frame learned already */
	for (k = 0; k + 1 < n; k++)
		if (w->chain[k + 1].func == (uint32_t)owner &&
		    w->chain[k].func == a && w->chain[k].site == PROPEL_SITE_NONE)
			w->chain[k].site = b;
	if (n && w->chain[n - 1].func == (uint32_t)owner)
		return;
	for (k = 0; k < n; k++)
		if (w->chain[k].func == (uint32_t)owner)
			return; /* back in a frame left: not a caller */
	if (n == INGEST_CHAIN_MAX)
		return;
	if (n && w->chain[n - 1].func == a)
		w->chain[n - 1].site = b;
	w->chain[n].func = (uint32_t)owner;
	w->chain[n].site = PROPEL_SITE_NONE;
	w->nchain = n + 1;
}

/* Pass 2, an entry right under the open frames of chain[] (depth
 * w->nopen) made from a site of an outer one of them: the frames between
 * returned unrecorded, closed here (an exit each, arg0 = 2: made here,
 * as a rebuilt entry's arg0 is 1; replay says "rebuilt" of both). */
static int ingest_chain_pop(struct ingest_walk *w, uint64_t tsc, uint32_t b)
{
	const struct ingest_proc *p = w->p;
	int32_t owner;
	int64_t j;
	int err = 0;

	if (b >= p->nsite || (owner = p->site_func[b]) < 0 ||
	    w->open[w->nopen - 1] == (uint32_t)owner)
		return 0;
	for (j = (int64_t)w->nopen - 2; j >= 0; j--)
		if (w->open[j] == (uint32_t)owner)
			break;
	if (j < 0)
		return 0;
	while (!err && w->nopen > (uint32_t)j + 1) {
		w->nopen--;
		w->depth--;
		err = ingest_insert(w, tsc, SK_EXIT, w->depth,
				    ingest_func(p, w->open[w->nopen]), 0, 1, 2, 0,
				    0);
	}
	return err;
}

/* One decoded event (ARGs folded in). */
/* A LOST record's depth change: the agent's shadow depth moved by b over
 * the a records it dropped, one level per entry or exit at most.  More
 * is a damaged record (counted as unknown by pass 1): no change. */
static int32_t ingest_lost_depth(uint32_t a, uint32_t b)
{
	int64_t d = (int32_t)b;

	return d > (int64_t)a || -d > (int64_t)a ? 0 : (int32_t)d;
}

static int ingest_event(struct ingest_walk *w, unsigned type, uint64_t tsc,
			uint32_t a, uint32_t b, const uint64_t *arg, int narg)
{
	struct ingest_proc *p = w->p;

	if (w->pass != 2) { /* pass 1, or 3: both at once */
		if (!w->n++)
			w->first_tsc = tsc;
		w->last_tsc = tsc;
		w->last_type = type;
		w->last_a = a;
		if (type == PROPEL_REC_EXEC)
			w->exec_n = w->n;
		if (type == PROPEL_REC_ENTRY) {
			if (!w->saw_call)
				w->first_entry_site = b;
			w->saw_call = 1;
			if (!w->d)
				ingest_chain_note(w, a, b);
			w->d++;
		} else if (type == PROPEL_REC_EXIT) {
			w->saw_call = 1;
			if (--w->d < w->min) {
				struct ingest_lost *nl;

				w->min = w->d;
				if (w->nlost == w->caplost) {
					size_t nc = w->caplost ? 2 * w->caplost : 16;

					nl = realloc(w->lost, nc * sizeof(*nl));
					if (!nl)
						return w->err = -ENOMEM;
					w->lost = nl;
					w->caplost = nc;
				}
				w->lost[w->nlost].func = a;
				w->lost[w->nlost].site = b & ~PROPEL_EXIT_UNWOUND;
				w->nlost++;
			}
		} else if (type == PROPEL_REC_LOST) {
			/* a gap (share/ring.h): what it held is gone, the
			 * depth went on by b */
			w->in->st->lost_records += a;
			w->lost_sum += a;
			if (ingest_lost_depth(a, b) != (int32_t)b)
				w->in->st->unknown_records++;
			w->d += ingest_lost_depth(a, b);
			if (w->d < w->min)
				w->min = w->d;
		} else if (type == PROPEL_REC_SWITCH) {
			w->d += (int32_t)b;
			if (w->d < w->min)
				w->min = w->d;
		} else if (type == PROPEL_REC_PROCESS_EXIT) {
			p->has_exit_rec = 1;
			p->exit_rec_status = (int32_t)a;
		}
		if (w->pass == 1)
			return 0;
	}
	switch (type) {
	case PROPEL_REC_ENTRY: { /* arg2: a directive's value, when recorded */
		int dir = a < p->nvalcap && (p->valued[a] & 4) && narg > 0;
		int err = w->nopen && w->depth == w->nopen
				  ? ingest_chain_pop(w, tsc, b)
				  : 0;

		if (!err)
			err = ingest_insert(w, tsc, SK_ENTRY, w->depth++,
					ingest_func(p, a), ingest_site(p, b),
					dir ? 3 : 0, 0, 0,
					dir ? (int64_t)arg[0] : 0);

		if (!err && narg == dir + 6) /* --args' registers */
			err = ingest_args(w, arg + dir);
		return err;
	}
	case PROPEL_REC_EXIT:
		if (w->depth > 0)
			w->depth--;
		return ingest_insert(w, tsc, SK_EXIT, w->depth,
				     ingest_func(p, a),
				     ingest_site(p, b & ~PROPEL_EXIT_UNWOUND),
				     narg ? 3 : 1, !!(b & PROPEL_EXIT_UNWOUND),
				     0, narg ? (int64_t)arg[0] : 0);
	case PROPEL_REC_SIGNAL: {
		int64_t site = narg > 1 ? ingest_signal_site(w->in, p, arg[1])
					: 0;

		if (site < 0)
			return (int)site;
		return ingest_insert(w, tsc, SK_SIGNAL, w->depth, 0, site, 3, a,
				     narg > 0 ? (int64_t)arg[0] : 0,
				     narg > 1 ? (int64_t)arg[1] : 0);
	}
	case PROPEL_REC_SEND:
	case PROPEL_REC_RECV:
		return ingest_comm(w, type, tsc, a, b, arg, narg);
	case PROPEL_REC_FORK: /* arg1 = 1: made by vfork */
		return ingest_insert(w, tsc, type, w->depth, 0, 0, 2, a,
				     (b & PROPEL_FORK_VFORK) ? 1 : 0, 0);
	case PROPEL_REC_LOST:
		w->depth += ingest_lost_depth(a, b);
		if (w->depth < 0)
			w->depth = 0;
		return ingest_insert(w, tsc, type, w->depth, 0, 0, 1, a, 0, 0);
	case PROPEL_REC_SWITCH: /* no event: the frames now open are others */
		w->depth += (int32_t)b;
		if (w->depth < 0)
			w->depth = 0;
		return 0;
	case PROPEL_REC_THREAD_START:
		return ingest_insert(w, tsc, type, w->depth, 0, 0, 1, a, 0, 0);
	case PROPEL_REC_PROCESS_EXIT:
		return ingest_insert(w, tsc, type, w->depth, 0, 0, 1,
				     (int32_t)a, 0, 0);
	default: /* THREAD_EXIT, EXEC */
		return ingest_insert(w, tsc, type, w->depth, 0, 0, 0, 0, 0, 0);
	}
}

/*
 * A plain call record -- ENTRY, EXIT or CALL of a function without
 * values -- in pass 2 or 3: what ingest_event does for it (pass 1's count
 * and depth in pass 3, the events), without its switch and with one
 * date for a CALL's two events.  An exit below the lowest depth so far
 * (a lost frame) goes the long way.
 */
static inline __attribute__((always_inline)) int
ingest_call(struct ingest_walk *w, unsigned type, uint64_t tsc, uint32_t a,
	    uint32_t b)
{
	const struct ingest_proc *p = w->p;
	struct chunk_writer *cw = w->in->cw;
	struct session_event ev = { .has = SE_DEPTH };
	int64_t func, site;

	if (w->pass == 3) {
		if (type == PROPEL_REC_EXIT && w->d - 1 < w->min)
			return ingest_event(w, type, tsc, a, b, NULL, 0);
		if (!w->n)
			w->first_tsc = tsc;
		w->n += type == PROPEL_REC_CALL ? 2 : 1;
		w->last_tsc = tsc;
		w->last_type = type == PROPEL_REC_CALL ? PROPEL_REC_EXIT : type;
		w->last_a = a;
		if (type != PROPEL_REC_EXIT && !w->saw_call)
			w->first_entry_site = b;
		if (type != PROPEL_REC_EXIT && !w->d)
			ingest_chain_note(w, a, b);
		w->saw_call = 1;
		w->d += type == PROPEL_REC_ENTRY ? 1
			: type == PROPEL_REC_EXIT ? -1 : 0;
	}
	if (w->nopen && type != PROPEL_REC_EXIT && w->depth == w->nopen) {
		int err = ingest_chain_pop(w, tsc, b);

		if (err)
			return err;
	}
	func = ingest_func(p, a);
	ev.func = func > 0 ? func : 0;
	ev.ts_ns = ingest_ns(w, tsc);
	if (type != PROPEL_REC_EXIT) {
		site = ingest_site(p, b);
		ev.site = site > 0 ? site : 0;
		ev.depth = (int32_t)w->depth++;
		ev.kind = SK_ENTRY;
		if ((w->last_id = chunk_writer_add(cw, &ev)) < 0)
			return -EIO;
		if (!w->nins++)
			w->first_ns = ev.ts_ns;
	}
	if (type != PROPEL_REC_ENTRY) {
		if (w->depth > 0)
			w->depth--;
		site = ingest_site(p, b & ~PROPEL_EXIT_UNWOUND);
		ev.site = site > 0 ? site : 0;
		ev.depth = (int32_t)w->depth;
		ev.kind = SK_EXIT;
		ev.has = SE_DEPTH | SE_ARG0;
		ev.arg[0] = !!(b & PROPEL_EXIT_UNWOUND);
		if ((w->last_id = chunk_writer_add(cw, &ev)) < 0)
			return -EIO;
		if (!w->nins++)
			w->first_ns = ev.ts_ns;
	}
	w->last_ns = ev.ts_ns;
	return 0;
}

static int ingest_flush(struct ingest_walk *w)
{
	int err;

	if (!w->pend_type)
		return 0;
	err = ingest_event(w, w->pend_type, w->pend_tsc, w->pend_a, w->pend_b,
			   w->pend_arg, w->pend_n);
	w->pend_type = 0;
	return err;
}

static int ingest_rec1(const struct propel_rec *r, void *arg)
{
	struct ingest_walk *w = arg;
	unsigned type = propel_rec_type(r);
	int err;

	if (type == PROPEL_REC_ARG) {
		if (w->pend_type && w->pend_n < w->pend_want) {
			w->pend_arg[w->pend_n++] =
				(uint64_t)r->b << 32 | (uint64_t)r->a;
			/* a held send: one more (share/record.h) */
			if (w->pend_n == 2 && w->pend_type == PROPEL_REC_SEND &&
			    ((w->pend_arg[1] >> 32) & INGEST_COMM_HELD))
				w->pend_want = 4;
			if (w->pend_n == w->pend_want)
				return ingest_flush(w) ? 1 : 0;
		} else if (w->pass != 2 && !w->arg_orphan_ok) {
			w->in->st->unknown_records++;
		}
		return 0;
	}
	w->arg_orphan_ok = type == PROPEL_REC_LOST;
	if (w->pend_type && (err = ingest_flush(w)))
		return 1;
	if (w->p->nvalued &&
	    (type == PROPEL_REC_ENTRY || type == PROPEL_REC_EXIT) &&
	    ingest_valued(w->p, type, r->a)) {
		w->pend_type = type; /* then ARG(the value) */
		w->pend_tsc = propel_rec_tsc(r);
		w->pend_a = r->a;
		w->pend_b = r->b;
		w->pend_n = 0;
		w->pend_want = ingest_valued(w->p, type, r->a);
		return 0;
	}
	if (w->pass != 1 && (type == PROPEL_REC_ENTRY || type == PROPEL_REC_EXIT ||
			     type == PROPEL_REC_CALL))
		return ingest_call(w, type, propel_rec_tsc(r), r->a, r->b) ? 1
									   : 0;
	switch (type) {
	case PROPEL_REC_SIGNAL:
	case PROPEL_REC_SEND:
	case PROPEL_REC_RECV:
		w->pend_type = type;
		w->pend_tsc = propel_rec_tsc(r);
		w->pend_a = r->a;
		w->pend_b = r->b;
		w->pend_n = 0;
		w->pend_want = type == PROPEL_REC_SIGNAL ? 2 : 3;
		return 0;
	case PROPEL_REC_ENTRY:
	case PROPEL_REC_EXIT:
	case PROPEL_REC_THREAD_START:
	case PROPEL_REC_THREAD_EXIT:
	case PROPEL_REC_FORK:
	case PROPEL_REC_EXEC:
	case PROPEL_REC_PROCESS_EXIT:
	case PROPEL_REC_LOST:
	case PROPEL_REC_SWITCH:
		if (ingest_event(w, type, propel_rec_tsc(r), r->a, r->b, NULL,
				 0))
			return 1;
		return 0;
	case PROPEL_REC_CALL: /* a leaf's entry and exit in one record */
		if (ingest_event(w, PROPEL_REC_ENTRY, propel_rec_tsc(r), r->a,
				 r->b, NULL, 0) ||
		    ingest_event(w, PROPEL_REC_EXIT, propel_rec_tsc(r), r->a,
				 r->b, NULL, 0))
			return 1;
		return 0;
	default:
		if (w->pass != 2)
			w->in->st->unknown_records++;
		return 0;
	}
}

/* The waiting call records, dated from their stamp t0 (the record before
 * them) to t1 (the one after them), evenly; t1 = 0: as they are. */
static int ingest_est_flush(struct ingest_walk *w, uint64_t t1)
{
	int n = w->nest;
	uint64_t t0, span, q, r, qstep, rstep, m = (uint64_t)n + 1;

	w->nest = 0;
	if (!n)
		return 0;
	/* every record of the group has the stamp t0: record i is dated
	 * t0 + span * (i+1) / (n+1), stepped without a division per record
	 * (q, r: the quotient and remainder so far); a span so long that
	 * span * n overflows (a damaged stamp) is divided as it was */
	t0 = propel_rec_tsc(&w->est[0]);
	span = t1 > t0 ? t1 - t0 : 0;
	if (span && w->pass != 1)
		w->in->st->estimated += (uint64_t)n;
	qstep = span / m;
	rstep = span % m;
	q = r = 0;
	for (int i = 0; i < n; i++) {
		struct propel_rec c = w->est[i];

		if (span) {
			if (span <= (UINT64_MAX >> 9)) {
				q += qstep;
				r += rstep;
				if (r >= m) {
					q++;
					r -= m;
				}
			} else {
				q = span * (uint64_t)(i + 1) / m;
			}
			c.w0 = propel_rec_w0(t0 + q, propel_rec_type(&c));
		}
		if (ingest_rec1(&c, w))
			return 1;
	}
	return 0;
}

static int ingest_rec(const struct propel_rec *r, void *arg)
{
	struct ingest_walk *w = arg;
	unsigned type = propel_rec_type(r);
	uint64_t tsc = propel_rec_tsc(r);
	int est = w->have_prev && tsc == w->prev_tsc && !w->r->h->exact &&
		  (type == PROPEL_REC_ENTRY || type == PROPEL_REC_EXIT ||
		   type == PROPEL_REC_CALL);

	w->have_prev = 1;
	w->prev_tsc = tsc;
	if (est && w->nest < INGEST_EST_MAX) {
		w->est[w->nest++] = *r;
		return 0;
	}
	/* an ARG belongs to the record before it: no dating across it */
	if (w->nest &&
	    ingest_est_flush(w, type == PROPEL_REC_ARG || est ? 0 : tsc))
		return 1;
	return ingest_rec1(r, arg);
}

static void ingest_walk_start(struct ingest_walk *w)
{
	w->pend_type = 0;
	w->nest = 0;
	w->have_prev = 0;
	w->arg_orphan_ok = 1;
}

/* The spool's sub-buffers from..to-1 of a walk under way (the drain has
 * copied them whole): its state is kept for the next part. */
int ingest_walk_part(struct ingest_walk *w, uint64_t from, uint64_t to)
{
	const struct propel_ring_hdr *h = w->r->h;
	size_t sb = propel_ring_sub_bytes(h);
	const char *sp = (const char *)h +
			 propel_ring_size(h->sub_count, h->sub_recs);

	for (uint64_t k = from; k < to; k++) {
		const struct propel_rec *r =
			(const struct propel_rec *)(sp + k * sb);

		for (uint32_t i = 0; i < h->sub_recs; i++)
			if (r[i].w0 && ingest_rec(&r[i], w))
				return w->err ? w->err : -EIO;
	}
	w->skip = to;
	return 0;
}

/* The whole ring, or the rest of it after ingest_walk_part (w->skip). */
static int ingest_walk(struct ingest_walk *w)
{
	int ret;

	if (!w->skip)
		ingest_walk_start(w);
	ret = propel_ring_walk_from(w->r->h, w->r->size, w->skip, ingest_rec,
				    w);
	w->skip = 0; /* (pass 2, if any, reads it all) */
	if (ret == 0 && w->nest)
		ret = ingest_est_flush(w, 0);
	if (ret == 0)
		ret = ingest_flush(w) ? 1 : 0;
	return ret;
}

/*
 * One walk instead of two.  A drained ring (or one on its first lap)
 * nearly always holds its thread from its first frame: its depth never
 * goes below where it began, no frame's entry is lost, and no traced
 * caller was open -- pass 2 would shift by nothing and rebuild nothing.
 * So pass 2's events are stored during pass 1's walk (pass 3, from
 * depth 0) and kept when the walk confirms that; otherwise what the walk
 * stored is deleted (ingest_spec_undo: its chunks, comm, holds and
 * argchunks rows, the callsites rows its signals made) and pass 2 runs as
 * ever.
 * Either way the session is the same, row for row.
 */
static void ingest_spec_mark(struct ingest *in, struct ingest_proc *p,
			     struct ingest_spec *sp)
{
	sp->seq = chunk_writer_next(in->cw);
	sp->npcsites = p->npcsites;
	sp->callsites = in->st->callsites;
}

static int ingest_spec_undo(struct ingest *in, struct ingest_proc *p,
			    const struct ingest_spec *sp)
{
	static const char *const sql[] = {
		"DELETE FROM chunk_data WHERE id IN"
		" (SELECT id FROM chunks WHERE first_seq >= ?1)",
		"DELETE FROM chunks WHERE first_seq >= ?1",
		"DELETE FROM comm WHERE event >= ?1",
		"DELETE FROM holds WHERE event >= ?1",
		"DELETE FROM argchunks WHERE first >= ?1",
		"DELETE FROM callsites WHERE id = ?1",
	};
	sqlite3_stmt *st;
	int err = 0;

	for (size_t i = 0; !err && i < sizeof(sql) / sizeof(sql[0]); i++) {
		size_t k = i == 5 ? sp->npcsites : 0, n = i == 5 ? p->npcsites : 1;

		if (sqlite3_prepare_v2(in->db, sql[i], -1, &st, NULL) != SQLITE_OK)
			return -EIO;
		for (; !err && k < n; k++) {
			if (i == 5 && !p->pcsites[k].row)
				continue;
			sqlite3_bind_int64(st, 1, i == 5 ? p->pcsites[k].row
							  : sp->seq);
			err = ingest_step(st);
		}
		sqlite3_finalize(st);
	}
	p->npcsites = sp->npcsites;
	in->st->callsites = sp->callsites;
	chunk_writer_rewind(in->cw, sp->seq);
	argchunk_rewind(in->args, sp->seq);
	return err;
}

/* A walk in one (pass 3) begun: the writer on the thread, the undo's
 * mark set (ingest_thread; engine/ingest-live.c before the run ends).
 * 0 or -EIO. */
int ingest_thread_begin(struct ingest *in, struct ingest_ring *r,
			struct ingest_walk *w, struct ingest_spec *sp)
{
	memset(w, 0, sizeof(*w));
	w->in = in;
	w->r = r;
	w->p = r->proc;
	w->pass = 3;
	w->first_entry_site = PROPEL_SITE_NONE;
	ingest_walk_start(w);
	if (chunk_writer_thread(in->cw, r->h->pid, r->h->tid))
		return -EIO;
	ingest_spec_mark(in, r->proc, sp);
	return 0;
}

/* One ring into the session; lw, lsp: its walk so far (begun by
 * ingest_thread_begin, parts read by ingest_walk_part), or NULL. */
int ingest_thread(struct ingest *in, struct ingest_ring *r,
		  struct ingest_walk *lw, const struct ingest_spec *lsp,
		  char **cause)
{
	const struct propel_ring_hdr *h = r->h;
	struct ingest_walk w = { .in = in, .r = r, .p = r->proc, .pass = 1,
				 .first_entry_site = PROPEL_SITE_NONE };
	struct ingest_proc *p = r->proc;
	sqlite3_stmt *st = in->ins_thread;
	int64_t parent = 0, shift;
	uint32_t psite;
	char comm[17];
	int wrapped, err = 0;
	int one = h->keep_all || h->commits < h->sub_count;
	struct ingest_spec sp = { 0, 0, 0 };
	size_t i;

	if (lw) {
		w = *lw;
		w.r = r; /* (the rings may have moved since) */
		sp = *lsp;
		one = 1;
	} else if (one) {
		err = ingest_thread_begin(in, r, &w, &sp);
		if (err)
			goto out;
	}
	if (ingest_walk(&w)) {
		err = w.err ? w.err : one ? -EIO : -ENOMEM;
		goto out;
	}
	/* The outermost visible frame's caller, if traced, is open too. */
	/* the thread ends with the exec (its record, then the entry of the
	 * exec call): the image was replaced, even by one the agent cannot
	 * enter (a static program) */
	if (w.exec_n && (w.n == w.exec_n ||
			 (w.n == w.exec_n + 1 && w.last_type == PROPEL_REC_ENTRY)))
		p->execd = 1;
	psite = w.nlost ? w.lost[w.nlost - 1].site : w.first_entry_site;
	if (psite < p->nsite && p->site_func[psite] >= 0)
		parent = ingest_func(p, (uint32_t)p->site_func[psite]);
	/* the frames open at the ring's start, from the outermost calls'
	 * sites, when no exit took the depth below its start (lost frames:
	 * their exits name them, and the outermost one's site its caller);
	 * the first call may have none (a call in flight at the attach,
	 * adopted: a schedd attached in read) */
	if (w.nlost || w.min < 0 || !w.nchain ||
	    (parent && w.chain[0].func != (uint32_t)p->site_func[psite])) {
		w.nchain = 0;
		if (parent) {
			w.chain[0].func = (uint32_t)p->site_func[psite];
			w.chain[0].site = PROPEL_SITE_NONE;
			w.nchain = 1;
		}
	}
	shift = -w.min + w.nchain;

	if (one && (shift || w.nchain || w.nlost)) {
		pr_dbg("%s: depth from %" PRId64 ": walked again", r->path,
			 shift);
		err = ingest_spec_undo(in, p, &sp);
		if (err)
			goto out;
		one = 0;
		w.nins = 0;
		w.last_id = 0;
	} else if (!one && chunk_writer_thread(in->cw, h->pid, h->tid)) {
		err = -EIO;
		goto out;
	}
	w.pass = 2;
	w.depth = 0;
	w.nopen = 0;
	/* outermost first; each but the outermost at its call site */
	for (i = w.nchain; !err && !one && w.n && i-- > 0;) {
		err = ingest_insert(&w, w.first_tsc, SK_ENTRY, w.depth++,
				    ingest_func(p, w.chain[i].func),
				    ingest_site(p, w.chain[i].site), 1, 1, 0,
				    0);
		w.open[w.nopen++] = w.chain[i].func;
		in->st->rebuilt_frames++;
	}
	/* what the lost frames' exits close is below; only the chain's
	 * frames close unrecorded */
	if (w.nlost)
		w.nopen = 0;
	for (i = w.nlost; !err && i-- > 0;) {
		err = ingest_insert(&w, w.first_tsc, SK_ENTRY, w.depth++,
				    ingest_func(p, w.lost[i].func),
				    ingest_site(p, w.lost[i].site), 1, 1, 0, 0);
		in->st->rebuilt_frames++;
	}
	if (!err && w.depth != shift)
		w.depth = shift;
	if (!err && !one && ingest_walk(&w))
		err = -EIO;
	/* records dropped after the last gap the agent closed: at the end */
	if (h->flags & PROPEL_RING_F_NOSPACE)
		in->st->rings_nospace++;
	if (h->flags & PROPEL_RING_F_STOPPED) {
		int64_t stop = ingest_ns(&w, h->tsc_last);

		p->detached = 1; /* (its X line may be lost) */
		if (stop > p->stop_ns) /* ring_close stamped it then */
			p->stop_ns = stop;
	}
	if (!err && h->version >= 2 && h->dropped > w.lost_sum) {
		err = ingest_insert(&w, w.last_tsc, SK_LOST, w.depth, 0, 0, 1,
				    (int64_t)(h->dropped - w.lost_sum), 0, 0);
		in->st->lost_records += h->dropped - w.lost_sum;
	}
	if (!err && (chunk_writer_flush(in->cw) || argchunk_flush(in->args)))
		err = -EIO;
	if (err)
		goto out;

	wrapped = h->commits >= h->sub_count;
	memcpy(comm, h->comm, 16);
	comm[16] = 0;
	sqlite3_bind_int64(st, 1, p->row);
	sqlite3_bind_int64(st, 2, h->pid);
	sqlite3_bind_int64(st, 3, h->tid);
	sqlite3_bind_text(st, 4, comm, -1, SQLITE_TRANSIENT);
	if (w.nins) {
		sqlite3_bind_int64(st, 5, w.first_ns);
		sqlite3_bind_int64(st, 6, w.last_ns);
	} else {
		sqlite3_bind_null(st, 5);
		sqlite3_bind_null(st, 6);
	}
	sqlite3_bind_int64(st, 7, (int64_t)w.nins);
	sqlite3_bind_int(st, 8, wrapped);
	err = ingest_step(st);
	if (err)
		goto out;
	in->st->threads++;
	in->st->events += w.nins;
	in->st->wrapped += wrapped;
	if (w.nins) {
		if (!p->have_ns || w.first_ns < p->first_ns)
			p->first_ns = w.first_ns;
		if (!p->have_ns || w.last_ns > p->last_ns)
			p->last_ns = w.last_ns;
		p->have_ns = 1;
	}
	if (w.n && w.last_type == PROPEL_REC_SIGNAL && !p->crash_signo)
		p->crash_signo = (int)w.last_a;
out:
	free(w.lost);
	if (err == -EIO)
		return ingest_sql_err(in, cause);
	return err;
}


int ingest_warning(const struct ingest_stats *st, char *buf, size_t size)
{
	size_t n = 0;
	int any = 0;

#define W(cond, ...)                                                        \
	do {                                                                \
		if ((cond) && n < size) {                                   \
			n += snprintf(buf + n, size - n, "%s", any ? ", " : ""); \
			if (n < size)                                       \
				n += snprintf(buf + n, size - n, __VA_ARGS__); \
			any = 1;                                            \
		}                                                           \
	} while (0)

	if (size)
		buf[0] = 0;
	W(st->rings_truncated, "%" PRIu64 " truncated ring(s) skipped",
	  st->rings_truncated);
	W(st->rings_corrupt, "%" PRIu64 " corrupt ring(s) skipped",
	  st->rings_corrupt);
	W(st->rings_newer, "%" PRIu64 " ring(s) from a newer propel skipped",
	  st->rings_newer);
	W(st->unknown_records, "%" PRIu64 " unknown record(s) ignored",
	  st->unknown_records);
	W(st->killed, "%" PRIu64 " process(es) ended without a clean exit",
	  st->killed);
	W(st->orphan_rings, "%" PRIu64 " ring(s) without a map file",
	  st->orphan_rings);
	W(st->bad_map_lines, "%" PRIu64 " bad map line(s)", st->bad_map_lines);
	W(st->agent_warnings, "the agent reported: %s%s", st->agent_warning,
	  st->agent_warnings > 1 ? " (and more)" : "");
	W(st->lost_records && st->rings_nospace,
	  "%" PRIu64 " record(s) dropped: /dev/shm had no room for the "
	  "rest of %" PRIu64 " thread ring(s) (replay shows each gap as "
	  "\"lost\"; the program was not touched)",
	  st->lost_records, st->rings_nospace);
	W(st->lost_records && !st->rings_nospace,
	  "%" PRIu64 " record(s) dropped: the drain fell behind (replay "
	  "shows each gap as \"lost\"; a larger --buffer-size helps)",
	  st->lost_records);
#undef W
	return any;
}

int ingest_write_meta(struct session *s, int argc, char *const *argv)
{
	char *cmd = NULL, buf[64];
	size_t len = 0, cap = 0;
	struct utsname un;
	int i, err = 0;

	for (i = 0; i < argc; i++) {
		const char *a = argv[i], *c;
		int quote = !*a || strpbrk(a, " \t\n'\"\\$`*?[]{}()<>|&;!#~") != NULL;
		size_t need = strlen(a) * 4 + 4;

		if (len + need + 1 > cap) {
			char *n = realloc(cmd, cap = (len + need + 1) * 2);

			if (!n) {
				free(cmd);
				return -ENOMEM;
			}
			cmd = n;
		}
		if (i)
			cmd[len++] = ' ';
		if (quote)
			cmd[len++] = '\'';
		for (c = a; *c; c++) {
			if (*c == '\'' && quote) {
				memcpy(cmd + len, "'\\''", 4);
				len += 4;
			} else {
				cmd[len++] = *c;
			}
		}
		if (quote)
			cmd[len++] = '\'';
	}
	if (cmd)
		cmd[len] = 0;
	if (session_meta_set(s, "command", cmd ? cmd : ""))
		err = -EIO;
	free(cmd);
	if (!err && uname(&un) == 0 && session_meta_set(s, "host", un.nodename))
		err = -EIO;
	snprintf(buf, sizeof(buf), "%" PRIu64, propel_real_ns());
	if (!err && session_meta_set(s, "created_ns", buf))
		err = -EIO;
	return err;
}

int ingest_crashed(struct session *s, int *signo, int *pid)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(session_db(s),
			       "SELECT signal, pid FROM processes WHERE signal "
			       "IS NOT NULL ORDER BY end_ns, id LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		if (signo)
			*signo = sqlite3_column_int(st, 0);
		if (pid)
			*pid = sqlite3_column_int(st, 1);
		rc = 1;
	} else {
		rc = rc == SQLITE_DONE ? 0 : -EIO;
	}
	sqlite3_finalize(st);
	return rc;
}
