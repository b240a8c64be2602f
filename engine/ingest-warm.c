/*
 * engine/ingest-warm.c - see engine/ingest-warm.h.
 *
 * Each round lists the directory's *.map files and reads each from where
 * the last round stopped, whole lines only (the agent appends a line with
 * one write; a line without its newline yet is read next round).  The
 * lines are the ones ingest_map reads, and each lookup is the one it
 * makes for them: M opens the module (symbols_module), F names the
 * function when the agent did not (symbols_name) and finds its
 * declaration (symbols_decl) and, with --args, its parameters
 * (symbols_params), S finds the call site's line (symbols_srcline) in the
 * caller's module or the one containing it.  The results are dropped:
 * what is kept is the symbols cache's state (debug files read, indexes
 * built, names remembered).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "engine/ingest-warm.h"
#include "engine/map-line.h"
#include "engine/symbols.h"

#define WARM_NAP_NS (20 * 1000 * 1000) /* between rounds */

struct warm_mod {
	unsigned id;
	struct symbols_mod *sm;
};

/* one map file followed */
struct warm_map {
	char *name;
	long off;                /* bytes read so far (whole lines) */
	struct warm_mod *mods;
	size_t nmods;
	struct symbols_mod **fmod; /* function id -> its module */
	uint32_t nfunc;
};

struct ingest_warm {
	char dir[512];
	struct symbols *sy;
	struct warm_map *maps;
	size_t nmaps;
	pthread_t th;
	pid_t tid;	/* the thread's, for its priority at the stop */
	int running;
	volatile int stop;
	pthread_mutex_t mu;	/* the nap between rounds, cut by stop */
	pthread_cond_t cv;
};

struct ingest_warm *ingest_warm_new(const char *dir)
{
	struct ingest_warm *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	snprintf(w->dir, sizeof(w->dir), "%s", dir);
	w->sy = symbols_new();
	if (!w->sy) {
		free(w);
		return NULL;
	}
	return w;
}

static struct warm_map *warm_map_of(struct ingest_warm *w, const char *name)
{
	struct warm_map *nm;

	for (size_t i = 0; i < w->nmaps; i++)
		if (!strcmp(w->maps[i].name, name))
			return &w->maps[i];
	nm = realloc(w->maps, (w->nmaps + 1) * sizeof(*nm));
	if (!nm)
		return NULL;
	w->maps = nm;
	nm = &w->maps[w->nmaps];
	memset(nm, 0, sizeof(*nm));
	nm->name = strdup(name);
	if (!nm->name)
		return NULL;
	w->nmaps++;
	return nm;
}

static struct symbols_mod *warm_mod(const struct warm_map *m, unsigned id)
{
	for (size_t i = 0; i < m->nmods; i++)
		if (m->mods[i].id == id)
			return m->mods[i].sm;
	return NULL;
}

static void warm_line_mod(struct ingest_warm *w, struct warm_map *m,
			  const char *line)
{
	struct warm_mod *nm;
	struct map_mod mm;

	if (map_line_mod(line, &mm))
		return;
	nm = realloc(m->mods, (m->nmods + 1) * sizeof(*nm));
	if (!nm)
		return;
	m->mods = nm;
	nm[m->nmods].id = mm.id;
	nm[m->nmods].sm = symbols_module(w->sy, mm.path, mm.bias, NULL);
	m->nmods++;
}

static void warm_line_func(struct warm_map *m, const char *line)
{
	struct map_func f;
	struct symbols_mod *sm;
	const char *file;
	char *s = NULL;
	unsigned id;
	int ln;

	if (map_line_func(line, &f))
		return;
	id = f.id;
	sm = warm_mod(m, f.modid);
	if (id >= m->nfunc) {
		uint32_t n = id + 1 > 2 * m->nfunc ? id + 1 : 2 * m->nfunc;
		struct symbols_mod **f = realloc(m->fmod, n * sizeof(*f));

		if (!f)
			return;
		memset(f + m->nfunc, 0, (n - m->nfunc) * sizeof(*f));
		m->fmod = f;
		m->nfunc = n;
	}
	m->fmod[id] = sm;
	if (!sm)
		return;
	if (!*f.name || !strcmp(f.name, "-"))
		free(symbols_name(sm, f.addr, NULL));
	if (!(f.flags & MAP_F_PLT))
		symbols_decl(sm, f.addr, &file, &ln);
	if (f.flags & MAP_F_ARGS) {
		symbols_params(sm, f.addr, &s);
		free(s);
	}
}

static void warm_line_site(struct warm_map *m, const char *line)
{
	struct symbols_mod *sm = NULL;
	struct map_site ms;
	const char *file;
	int ln;

	if (map_line_site(line, &ms))
		return;
	if (ms.funcid >= 0 && (uint32_t)ms.funcid < m->nfunc)
		sm = m->fmod[ms.funcid];
	for (size_t i = 0; !sm && i < m->nmods; i++)
		if (symbols_contains(m->mods[i].sm, ms.addr))
			sm = m->mods[i].sm;
	if (sm)
		symbols_srcline(sm, ms.addr, &file, &ln);
}

/* The whole lines of one map file after m->off; how many. */
static int warm_read(struct ingest_warm *w, struct warm_map *m)
{
	char path[1024], *line = NULL;
	struct stat sb;
	size_t cap = 0;
	ssize_t len;
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", w->dir, m->name);
	if (stat(path, &sb) < 0 || sb.st_size <= m->off)
		return 0; /* nothing new (an attach's servers: most rounds) */
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fseek(f, m->off, SEEK_SET) == 0) {
		while (!w->stop && (len = getline(&line, &cap, f)) > 0 &&
		       line[len - 1] == '\n') {
			m->off += len;
			line[len - 1] = 0;
			n++;
			if (line[0] == 'M')
				warm_line_mod(w, m, line);
			else if (line[0] == 'F')
				warm_line_func(m, line);
			else if (line[0] == 'S')
				warm_line_site(m, line);
		}
	}
	free(line);
	fclose(f);
	return n;
}

int ingest_warm_round(struct ingest_warm *w)
{
	struct dirent *e;
	DIR *d = opendir(w->dir);
	int n = 0;

	if (!d)
		return 0;
	while (!w->stop && (e = readdir(d))) {
		size_t len = strlen(e->d_name);
		struct warm_map *m;

		if (len < 5 || strcmp(e->d_name + len - 4, ".map"))
			continue;
		m = warm_map_of(w, e->d_name);
		if (m)
			n += warm_read(w, m);
	}
	closedir(d);
	return n;
}

static void *warm_main(void *arg)
{
	struct ingest_warm *w = arg;

	/* behind the drain and the traced program */
	__atomic_store_n(&w->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	if (setpriority(PRIO_PROCESS, (id_t)w->tid, 10) < 0) {
		/* as it was */
	}
	while (!w->stop) {
		struct timespec until;

		ingest_warm_round(w);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += WARM_NAP_NS;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_mutex_lock(&w->mu);
		while (!w->stop &&
		       pthread_cond_timedwait(&w->cv, &w->mu, &until) == 0)
			;
		pthread_mutex_unlock(&w->mu);
	}
	return NULL;
}

int ingest_warm_start(const char *dir, struct ingest_warm **out)
{
	struct ingest_warm *w = ingest_warm_new(dir);
	int err;

	pthread_condattr_t ca;

	*out = NULL;
	if (!w)
		return -ENOMEM;
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	err = pthread_create(&w->th, NULL, warm_main, w);
	if (err) {
		symbols_free(ingest_warm_stop(w));
		return -err;
	}
	w->running = 1;
	*out = w;
	return 0;
}

struct symbols *ingest_warm_stop(struct ingest_warm *w)
{
	struct symbols *sy;

	if (!w)
		return NULL;
	if (w->running) {
		pid_t tid = __atomic_load_n(&w->tid, __ATOMIC_ACQUIRE);

		/* the run is over and propel waits for it: at propel's own
		 * priority from now (at nice +10 on a busy machine its last
		 * lookup -- a cold libc's debug sections, ~60 ms of CPU -- took
		 * seconds of wall time: 2.7 s for a record of 85 ms of CPU at
		 * a load of 15); lowering a nice value may be refused to a user
		 * without CAP_SYS_NICE: then it stays */
		if (tid > 0)
			setpriority(PRIO_PROCESS, (id_t)tid,
				    getpriority(PRIO_PROCESS, 0));
		pthread_mutex_lock(&w->mu);
		w->stop = 1;
		pthread_cond_signal(&w->cv);
		pthread_mutex_unlock(&w->mu);
		pthread_join(w->th, NULL);
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
	}
	for (size_t i = 0; i < w->nmaps; i++) {
		free(w->maps[i].name);
		free(w->maps[i].mods);
		free(w->maps[i].fmod);
	}
	free(w->maps);
	sy = w->sy;
	free(w);
	return sy;
}
