/*
 * tui/bg.c - a view's analysis on a thread of its own (see tui/bg.h).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/session.h"
#include "tui/bg.h"

static void *bg_run(void *arg)
{
	struct tui_bg *bg = arg;
	const char *delay = getenv("PROPEL_TEST_BG_DELAY_MS");
	char *cause = NULL;

	if (delay) /* tests/e2e/tui-flows.sh: a long analysis, made so */
		usleep((useconds_t)atoi(delay) * 1000);
	if (session_open(bg->path, SESSION_READ, &bg->own, &cause))
		bg->own = NULL;
	else /* the foreground's reader says what is wrong with the file */
		session_quiet(bg->own);
	bg->fn(bg->own, bg->own ? NULL : cause ? cause : "cannot open the "
							 "session", bg->arg);
	free(cause);
	__atomic_store_n(&bg->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

void bg_start(struct tui_bg *bg, struct session *s,
	      void (*fn)(struct session *s, const char *cause, void *arg),
	      void *arg)
{
	const char *path = s ? session_path(s) : NULL;

	if (bg->started)
		return;
	bg->started = 1;
	bg->fn = fn;
	bg->arg = arg;
	if (path && (bg->path = strdup(path)) &&
	    pthread_create(&bg->th, NULL, bg_run, bg) == 0) {
		bg->running = 1;
		return;
	}
	fn(s, s ? NULL : "no session", arg);
	bg->done = 1;
}

int bg_pending(struct tui_bg *bg)
{
	if (!bg->running)
		return 0;
	if (!__atomic_load_n(&bg->done, __ATOMIC_ACQUIRE))
		return 1;
	pthread_join(bg->th, NULL);
	bg->running = 0;
	return 0;
}

int bg_shown(struct tui_bg *bg)
{
	return bg->drew = bg_pending(bg);
}

int bg_busy(struct tui_bg *bg)
{
	return bg_pending(bg) || bg->drew;
}

void bg_wait(struct tui_bg *bg)
{
	if (!bg->running)
		return;
	pthread_join(bg->th, NULL);
	bg->running = 0;
}

int bg_release(struct tui_bg *bg)
{
	if (bg_pending(bg)) {
		pthread_detach(bg->th);
		return 1;
	}
	session_close(bg->own);
	bg->own = NULL;
	free(bg->path);
	bg->path = NULL;
	return 0;
}
