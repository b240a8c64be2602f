/*
 * engine/ingest-int.h - what engine/ingest.c (rings, events, the whole
 * directory) and engine/ingest-map.c (map files: processes, modules,
 * functions, call sites) share.  Private to those two files; everything
 * else goes through engine/ingest.h.
 */
#ifndef PROPEL_ENGINE_INGEST_INT_H
#define PROPEL_ENGINE_INGEST_INT_H

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

#include "engine/argchunk.h"
#include "engine/chan.h"
#include "engine/chunk.h"
#include "engine/ingest.h"
#include "engine/match.h"
#include "engine/session.h"
#include "engine/symbols.h"
#include "share/log.h"
#include "share/record.h"
#include "share/ring.h"

#define INGEST_MIN_CAL_NS 50000000ll	/* header pairs must span 50 ms */
#define INGEST_EST_MAX 256		/* call records between two stamps */

struct ingest_mod {
	uint32_t id;
	uint64_t bias;
	char *path;
	struct symbols_mod *sm;
	int opened; /* sm looked up (ingest_mod_sm) */
};

struct ingest_proc {
	char *key; /* "<pid>.<nonce>" as in the file names */
	int64_t row;
	uint32_t pid, ppid;
	struct ingest_mod *mods;
	size_t nmods;
	int64_t *func_row; /* by funcid; 0 = none */
	int32_t *func_mod; /* index in mods, -1 none */
	uint32_t nfunc;
	int64_t *site_row; /* by siteid; 0 = none */
	int32_t *site_func; /* funcid of the calling function, -1 none */
	uint32_t nsite;
	int has_e;
	int detached; /* an X line: the agent was switched off, the process lives on */
	int execd;    /* a later image of the same pid exists: this one exec'd */
	int64_t born_ns; /* creation of its oldest ring (CLOCK_MONOTONIC), 0 none */
	int64_t stop_ns; /* the agent switched off (a stopped ring's last
			  * stamp, the trace's clock), 0 none */
	int64_t e_status;
	int has_exit_rec;
	int64_t exit_rec_status;
	int have_ns;
	int64_t first_ns, last_ns;
	int crash_signo;
	struct chan_table chans; /* its C lines (engine/chan.h) */
	/* each function id's F flags 4, 8, 16 (share/ring.h): its ENTRY
	 * records carry a directive's value and/or --args' six registers,
	 * its EXIT records rax (ingest_valued); nvalued: ids with any */
	uint8_t *valued;
	uint32_t nvalcap;
	size_t nvalued;
	/* callsites rows made for signal pcs (ingest_signal_site) */
	struct ingest_pcsite {
		uint64_t pc;
		int64_t row;
	} *pcsites;
	size_t npcsites;
	/* its map file read up to map_off (whole lines; the P line seen:
	 * map_have_p), to be read on from there (engine/ingest-live.c) */
	long map_off;
	int map_have_p;
};

struct ingest_ring {
	char *path;
	struct ingest_proc *proc;
	const struct propel_ring_hdr *h;
	size_t size;
	size_t maplen; /* mapped: size, or more (ingest_ring_open's reserve) */
};

struct ingest {
	struct session *s;
	sqlite3 *db;
	struct ingest_stats *st;
	struct symbols *sy;
	sqlite3_stmt *ins_proc, *ins_func, *ins_site, *ins_thread, *ins_comm;
	sqlite3_stmt *ins_hold;
	sqlite3_stmt *ins_params;     /* --args: what DWARF declares */
	struct argchunk_writer *args; /* --args: the registers */
	struct chunk_writer *cw; /* events, compressed per thread */
	struct ingest_proc **procs;
	size_t nprocs;
	struct ingest_ring *rings;
	size_t nrings;
	double ns_per_tick;
	/* the host's one TSC -> CLOCK_MONOTONIC anchor (ingest_calibrate) */
	uint64_t anchor_tsc;
	int64_t anchor_ns;
	char host[65];
	int64_t offset_ns; /* added to the host's CLOCK_MONOTONIC (follow.c) */
	const char *dir; /* the session directory being read */
	int live; /* the run goes on: whole map lines only (ingest-live.c) */
	int began; /* the transaction is open */
	uint64_t t_start; /* propel_mono_ns() at ingest_dir_begin */
	/* lookups left for later while the run goes (ingest_defer) */
	struct ingest_defer {
		int64_t row;
		struct ingest_proc *p;
		int funcid; /* the function's, or the site's caller's */
		uint64_t addr;
		int site; /* 1: a callsites row's line, 0: a function's */
	} *defer;
	size_t ndefer, capdefer, defer_done;
	sqlite3_stmt *upd_defer[2];
};

#define INGEST_CHAIN_MAX 32

/* State of one ring walk. */
struct ingest_walk {
	struct ingest *in;
	struct ingest_ring *r;
	struct ingest_proc *p;
	int pass;
	/* a SIGNAL (two ARG records) or SEND/RECV (three) waiting */
	unsigned pend_type;
	uint64_t pend_tsc;
	uint32_t pend_a, pend_b;
	uint64_t pend_arg[7]; /* a directive's value and --args' six */
	int pend_n, pend_want;
	/* no event record since the walk's start or a LOST record: an ARG
	 * here belongs to an event whose own record was overwritten (the
	 * oldest kept sub-buffer of a flight ring) or dropped, not unknown */
	int arg_orphan_ok;
	int64_t last_id; /* of the event stored last (pass 2) */
	/* sampled time (share/agent-abi.h PROPEL_STAMP_EVERY): call records
	 * that carry the stamp of the record before them wait here until the
	 * next stamp, and are dated between the two by their position */
	struct propel_rec est[INGEST_EST_MAX];
	int nest;
	uint64_t prev_tsc; /* of the record before; have_prev: one was seen */
	int have_prev;
	/* pass 1 */
	int64_t d, min;
	uint64_t lost_sum; /* records the LOST records account for */
	uint64_t n;
	uint64_t first_tsc, last_tsc;
	unsigned last_type;
	uint32_t last_a;
	int saw_call;
	uint64_t exec_n; /* index (1-based) of the latest EXEC record, 0 none */
	uint32_t first_entry_site; /* PROPEL_SITE_NONE unless first call is an entry */
	struct ingest_lost {
		uint32_t func, site;
	} *lost;
	size_t nlost, caplost;
	/* the frames open when the ring began, innermost first, as the
	 * outermost calls' sites tell them (engine/ingest.c ingest_chain_note):
	 * chain[k].site is chain[k]'s call site in chain[k + 1] */
	struct ingest_lost chain[INGEST_CHAIN_MAX];
	uint32_t nchain;
	/* pass 2 */
	int64_t depth;
	uint32_t nopen; /* rebuilt frames of chain[] still open (depth 0..) */
	uint32_t open[INGEST_CHAIN_MAX]; /* their functions, outermost first */
	int64_t first_ns, last_ns;
	uint64_t nins;
	int err;
	uint64_t skip; /* spool sub-buffers read already (ingest_walk_part) */
};

/* What a walk in one stored, for its undo (engine/ingest.c). */
struct ingest_spec {
	int64_t seq;      /* the writer's next id before the walk */
	size_t npcsites;  /* the process's signal sites before it */
	uint64_t callsites;
};

/* engine/ingest.c */
int ingest_sql_err(struct ingest *in, char **cause);
int ingest_step(sqlite3_stmt *st);
void ingest_bind_text(sqlite3_stmt *st, int i, const char *s);
int ingest_grow(void **arr, uint32_t *n, uint32_t want, size_t elem, int fill);

/* engine/ingest.c: one ring's walk (see there) */
int ingest_thread_begin(struct ingest *in, struct ingest_ring *r,
			struct ingest_walk *w, struct ingest_spec *sp);
int ingest_walk_part(struct ingest_walk *w, uint64_t from, uint64_t to);
int ingest_thread(struct ingest *in, struct ingest_ring *r,
		  struct ingest_walk *lw, const struct ingest_spec *lsp,
		  char **cause);
/* engine/ingest-dir.c: the directory, and (ingest-live.c) the live one */
int ingest_dir_begin(struct ingest *in, char **cause);
int ingest_ring_open(struct ingest *in, const char *dir, const char *name,
		     size_t reserve, char **cause);
void ingest_calibrate(struct ingest *in);
int ingest_ring_cmp(const void *a, const void *b);
int ingest_dir_rest(struct ingest *in, char **names, size_t nnames,
		    struct ingest_walk *lw, const struct ingest_spec *lsp,
		    char **cause);
int ingest_dir_end(struct ingest *in, int err, char **cause);
int ingest_dir_names(const char *dir, char ***names, size_t *n);

/* engine/ingest-map.c: a map file becomes a process image (its row, and
 * its modules, functions and call sites symbolized once) */
struct ingest_proc *ingest_proc_new(struct ingest *in, const char *key);
void ingest_proc_free(struct ingest_proc *p);
struct ingest_proc *ingest_proc_find(struct ingest *in, const char *key);
int ingest_proc_insert(struct ingest *in, struct ingest_proc *p,
			      const char *nonce, const char *exe);
int ingest_map(struct ingest *in, const char *dir, const char *name,
		      char **cause);
int ingest_defer(struct ingest *in, int64_t row, struct ingest_proc *p,
		 int funcid, uint64_t addr, int site);
struct symbols_mod *ingest_mod_sm(struct ingest *in, struct ingest_mod *m);
struct symbols_mod *ingest_site_sm(struct ingest *in, struct ingest_proc *p,
				   int funcid, uint64_t addr);
int ingest_defer_run(struct ingest *in, size_t max);

#endif
