/*
 * engine/capture.h - what `propel record` and `propel attach` share: the
 * session directory in /dev/shm where agents write, finding the agent
 * library, and turning the directory into a session file at the end.
 */
#ifndef PROPEL_ENGINE_CAPTURE_H
#define PROPEL_ENGINE_CAPTURE_H

#include <stddef.h>

struct capture {
	char dir[512];      /* /dev/shm/propel/<id> */
	char agent[4096];   /* path of libpropel-agent.so */
	char *db;           /* final session path */
	char *tmp;          /* written here, renamed to db at the end */
};

/*
 * Check that db can be written (creates db's temporary file), find the
 * agent, and create the session directory.  0 or -errno with *cause.
 */
int capture_begin(struct capture *c, const char *db, char **cause);

/*
 * Ingest the directory into the session, write meta, rename it over db,
 * remove the directory.  Prints ingest warnings on stderr (one line).
 * Returns 0 or -errno with *cause; the directory is kept on failure so
 * nothing is lost (its path is in the cause).
 */
int capture_end(struct capture *c, int argc, char *const *argv, char **cause);

/* Remove the directory and temporary file without ingesting. */
void capture_abort(struct capture *c);

#endif
