/*
 * engine/map-line.h - the M, F and S lines of a map file (share/ring.h),
 * parsed the one way for their two readers: ingest (engine/ingest-map.c,
 * which stores them) and the warm-up that makes the same symbol lookups
 * while the program runs (engine/ingest-warm.c).  Each returns 0, or
 * -EINVAL for a line that is not whole or whose id is beyond
 * MAP_LINE_MAX_ID (a corrupt file); the strings point into the line.
 */
#ifndef PROPEL_ENGINE_MAP_LINE_H
#define PROPEL_ENGINE_MAP_LINE_H

#include <errno.h>
#include <stdio.h>

#define MAP_LINE_MAX_ID (1u << 24) /* larger ids in a map file: corrupt */

/* F flags (share/ring.h) */
#define MAP_F_PLT 1u     /* a PLT entry: the name is the imported symbol */
#define MAP_F_VALUES 28u /* its records are followed by ARGs (4, 8, 16) */
#define MAP_F_ARGS 16u   /* ... the six argument registers (--args) */

struct map_mod {
	unsigned id;
	unsigned long long bias;
	const char *path;
};

struct map_func {
	unsigned id, modid, flags;
	unsigned long long addr;
	const char *name; /* as the agent gave it: "" or "-" when it had none */
};

struct map_site {
	unsigned id;
	unsigned long long addr;
	int funcid; /* -1: none */
};

static inline int map_line_mod(const char *line, struct map_mod *m)
{
	int off = 0;

	if (sscanf(line, "M %u %llx %n", &m->id, &m->bias, &off) < 2 || !off ||
	    !line[off])
		return -EINVAL;
	m->path = line + off;
	return 0;
}

static inline int map_line_func(const char *line, struct map_func *f)
{
	int off = 0;

	if (sscanf(line, "F %u %llx %u %u %n", &f->id, &f->addr, &f->modid,
		   &f->flags, &off) < 4 ||
	    !off || f->id >= MAP_LINE_MAX_ID)
		return -EINVAL;
	f->name = line + off;
	return 0;
}

static inline int map_line_site(const char *line, struct map_site *s)
{
	if (sscanf(line, "S %u %llx %d", &s->id, &s->addr, &s->funcid) < 3 ||
	    s->id >= MAP_LINE_MAX_ID)
		return -EINVAL;
	return 0;
}

#endif
