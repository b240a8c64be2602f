/*
 * tui/screen.c - the terminal: ncursesw for drawing and keys, readline
 * (callback interface) for the `:` and `/` prompts.  The only file that
 * includes curses or readline; the API is tui/screen.h.
 *
 * Readline never touches the terminal: its input comes from the bytes we
 * feed it (keys read by curses, turned back into the byte sequences
 * readline expects), its output goes to /dev/null, and its redisplay hook
 * only records that the prompt must be redrawn; screen_end_frame draws
 * rl_line_buffer on the bottom row with curses.
 *
 * State (one terminal per process): initialized between screen_init and
 * screen_fini; screen_fini is idempotent and is what restores the terminal
 * on every exit path of the TUI.
 *
 * The terminal is ours while the TUI runs: a stderr that is the terminal
 * is pointed at a memory file meanwhile (a line written there by anything
 * in the process, a view's background thread or a library, would land in
 * the middle of the drawing and stay there, curses not knowing of it:
 * tui-chunked's damaged-chunk line hidden under one, fresh-clone runs).
 * What arrives is shown on the message line; screen_fini writes all of it
 * to the real stderr, so nothing said is lost.
 */
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <wchar.h>

#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <readline/history.h>
#include <readline/readline.h>

#include "share/log.h"
#include "tui/screen.h"

/* colour pairs: 1..SC_NCOLORS-1 a foreground on the default background,
 * then the fault line (white on red) and a search hit (black on yellow) */
#define SCREEN_PAIR_FAULT SC_NCOLORS
#define SCREEN_PAIR_MATCH (SC_NCOLORS + 1)

static int screen_up;
static int screen_has_colors;
static int screen_mouse_x, screen_mouse_y;
static char screen_msg[512];
static int screen_msg_err;

/* readline glue */
static unsigned char rl_feed[64];
static int rl_feed_len, rl_feed_pos;
static int prompt_on, prompt_done;
static char *prompt_line;
static char prompt_text[64];
static FILE *rl_null;

/* stderr while the screen is up: the real one saved, the memory file's
 * bytes read up to err_seen */
static int err_saved = -1, err_mem = -1;
static off_t err_seen;

static void err_capture(void)
{
	if (err_mem >= 0 || !isatty(STDERR_FILENO))
		return;
	fflush(stderr);
	err_mem = memfd_create("propel-tui-stderr", MFD_CLOEXEC);
	if (err_mem < 0)
		return;
	err_saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (err_saved < 0 || dup2(err_mem, STDERR_FILENO) < 0) {
		if (err_saved >= 0)
			close(err_saved);
		close(err_mem);
		err_saved = err_mem = -1;
		return;
	}
	err_seen = 0;
}

/* the last line written to stderr since the last call, on the message
 * line as an error */
static void err_poll(void)
{
	char buf[4096], *nl, *end, *line;
	off_t size;
	ssize_t n;

	if (err_mem < 0)
		return;
	size = lseek(err_mem, 0, SEEK_END);
	if (size <= err_seen)
		return;
	if (size - err_seen > (off_t)sizeof(buf) - 1)
		err_seen = size - (off_t)sizeof(buf) + 1;
	n = pread(err_mem, buf, sizeof(buf) - 1, err_seen);
	if (n <= 0)
		return;
	err_seen += n;
	buf[n] = 0;
	end = buf + n;
	while (end > buf && (end[-1] == '\n' || end[-1] == '\r'))
		*--end = 0;
	if (end == buf)
		return;
	nl = strrchr(buf, '\n');
	line = nl ? nl + 1 : buf;
	/* the message line says no program name */
	if (!strncmp(line, propel_progname, strlen(propel_progname)) &&
	    !strncmp(line + strlen(propel_progname), ": ", 2))
		line += strlen(propel_progname) + 2;
	n = end - line < (ssize_t)sizeof(screen_msg) - 1
		    ? end - line : (ssize_t)sizeof(screen_msg) - 1;
	memcpy(screen_msg, line, (size_t)n);
	screen_msg[n] = 0;
	screen_msg_err = 1;
}

int screen_stderr_fd(void)
{
	return err_saved >= 0 ? err_saved : STDERR_FILENO;
}

void screen_stderr_back(int saved)
{
	dup2(err_mem >= 0 ? err_mem : saved, STDERR_FILENO);
}

/* stderr back to the terminal (over a redirect of fd 2 made meanwhile:
 * its owner puts it back with screen_stderr_back), and what was written
 * meanwhile on it */
static void err_release(void)
{
	char buf[8192];
	off_t off = 0;
	ssize_t n;

	if (err_mem < 0)
		return;
	fflush(stderr);
	dup2(err_saved, STDERR_FILENO);
	close(err_saved);
	while ((n = pread(err_mem, buf, sizeof(buf), off)) > 0) {
		if (write(STDERR_FILENO, buf, (size_t)n) != n)
			break;
		off += n;
	}
	close(err_mem);
	err_saved = err_mem = -1;
}

static int attr_to_curses(int attr)
{
	int a = 0, c = attr & SA_COLOR_MASK;

	if (attr & SA_BOLD)
		a |= A_BOLD;
	if (attr & SA_REVERSE)
		a |= A_REVERSE;
	if (attr & SA_UNDERLINE)
		a |= A_UNDERLINE;
	if (attr & SA_DIM)
		a |= A_DIM;
	if (attr & SA_HIGHLIGHT) {
		a |= A_BOLD;
		if (!screen_has_colors)
			a |= A_REVERSE;
		if (screen_has_colors)
			a |= (int)COLOR_PAIR(SCREEN_PAIR_FAULT);
		return a;
	}
	if (attr & SA_MATCH) {
		if (!screen_has_colors)
			return a | A_REVERSE | A_UNDERLINE;
		return (a & ~(int)A_REVERSE) | (int)COLOR_PAIR(SCREEN_PAIR_MATCH);
	}
	if (screen_has_colors && c > 0 && c < SC_NCOLORS)
		a |= COLOR_PAIR(c);
	return a;
}

/* curses attributes to attr_set: the colour pair goes in its own argument
 * (wattr_set takes the pair from there, not from the attribute bits) */
static void screen_attr_set(int attr)
{
	attr_t a = (attr_t)attr_to_curses(attr);

	attr_set(a & ~A_COLOR, (short)PAIR_NUMBER(a), NULL);
}

int screen_strwidth(const char *text)
{
	mbstate_t st;
	wchar_t wc;
	size_t n;
	int w = 0, cw;

	memset(&st, 0, sizeof(st));
	while (*text) {
		n = mbrtowc(&wc, text, MB_CUR_MAX, &st);
		if (n == (size_t)-1 || n == (size_t)-2) {
			memset(&st, 0, sizeof(st));
			n = 1;
			wc = L'?';
		}
		cw = wcwidth(wc);
		w += cw < 0 ? 1 : cw;
		text += n ? n : 1;
	}
	return w;
}

int screen_put(const struct screen_rect *r, int row, int col, int attr,
	       const char *text)
{
	mbstate_t st;
	int x, cw, written = 0, x0 = -1, nw = 0;
	wchar_t wc, run[512];
	size_t n;

	if (!screen_up || row < 0 || row >= r->h || col >= r->w || r->w <= 0)
		return 0;
	screen_attr_set(attr);
	/* printable ASCII (most of what is drawn): as it is */
	{
		const char *p = text;
		int skip = col < 0 ? -col : 0, room = r->w - (col < 0 ? 0 : col);

		while (*p > 31 && *p < 127)
			p++;
		if (!*p) {
			int len = (int)(p - text), n = len - skip;

			if (n > room)
				n = room;
			if (n > 0)
				mvaddnstr(r->y + row, r->x + (col < 0 ? 0 : col),
					  text + skip, n);
			attr_set(A_NORMAL, 0, NULL);
			/* the columns it advanced (clipped at the right) */
			return col + len > r->w ? r->w - col : len;
		}
	}
	memset(&st, 0, sizeof(st));
	x = col;
	/* the visible run decoded first, then drawn by one call */
	while (*text && x < r->w && nw < (int)(sizeof(run) / sizeof(run[0])) - 1) {
		n = mbrtowc(&wc, text, MB_CUR_MAX, &st);
		if (n == (size_t)-1 || n == (size_t)-2) {
			memset(&st, 0, sizeof(st));
			n = 1;
			wc = L'?';
		}
		text += n ? n : 1;
		if (wc < 32 || wc == 127)
			wc = L'?';
		cw = wcwidth(wc);
		if (cw < 0) {
			wc = L'?';
			cw = 1;
		}
		if (x + cw > r->w)
			break;
		if (x >= 0) {
			if (x0 < 0)
				x0 = x;
			run[nw++] = wc;
		}
		x += cw;
		written += cw;
	}
	if (nw) {
		run[nw] = 0;
		mvaddnwstr(r->y + row, r->x + x0, run, nw);
	}
	attr_set(A_NORMAL, 0, NULL);
	return written;
}

int screen_vprintf(const struct screen_rect *r, int row, int col, int attr,
		   const char *fmt, va_list ap)
{
	char buf[1024];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	return screen_put(r, row, col, attr, buf);
}

int screen_printf(const struct screen_rect *r, int row, int col, int attr,
		  const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = screen_vprintf(r, row, col, attr, fmt, ap);
	va_end(ap);
	return n;
}

void screen_clear_row(const struct screen_rect *r, int row, int col, int attr)
{
	int x;

	if (!screen_up || row < 0 || row >= r->h)
		return;
	screen_attr_set(attr);
	for (x = col < 0 ? 0 : col; x < r->w; x++)
		mvaddch(r->y + row, r->x + x, ' ');
	attr_set(A_NORMAL, 0, NULL);
}

void screen_clear(const struct screen_rect *r)
{
	int y;

	for (y = 0; y < r->h; y++)
		screen_clear_row(r, y, 0, SA_NORMAL);
}

void screen_hline(const struct screen_rect *r, int row, int col, int len,
		  int attr)
{
	int x;

	for (x = col; x < col + len; x++)
		screen_put(r, row, x, attr, "\u2500");
}

void screen_vline(const struct screen_rect *r, int row, int col, int len,
		  int attr)
{
	int y;

	for (y = row; y < row + len; y++)
		screen_put(r, y, col, attr, "\u2502");
}

void screen_box(const struct screen_rect *r, const char *title, int attr)
{
	if (r->w < 2 || r->h < 2)
		return;
	screen_hline(r, 0, 1, r->w - 2, attr);
	screen_hline(r, r->h - 1, 1, r->w - 2, attr);
	screen_vline(r, 1, 0, r->h - 2, attr);
	screen_vline(r, 1, r->w - 1, r->h - 2, attr);
	screen_put(r, 0, 0, attr, "\u250c");
	screen_put(r, 0, r->w - 1, attr, "\u2510");
	screen_put(r, r->h - 1, 0, attr, "\u2514");
	screen_put(r, r->h - 1, r->w - 1, attr, "\u2518");
	if (title && *title)
		screen_printf(r, 0, 2, attr | SA_BOLD, " %s ", title);
}

static const char *const blocks[9] = {
	" ", "\u2581", "\u2582", "\u2583", "\u2584",
	"\u2585", "\u2586", "\u2587", "\u2588",
};

void screen_vbar(const struct screen_rect *r, int col, int bottom, int eighths,
		 int attr)
{
	int row = bottom;

	while (eighths > 0 && row >= 0) {
		screen_put(r, row, col, attr, blocks[eighths >= 8 ? 8 : eighths]);
		eighths -= 8;
		row--;
	}
}

static double vmax(const double *v, int n, double max)
{
	int i;

	if (max > 0)
		return max;
	for (i = 0; i < n; i++)
		if (v[i] > max)
			max = v[i];
	return max > 0 ? max : 1;
}

void screen_graph(const struct screen_rect *r, const double *v, int n,
		  double max, int attr, int mark, int mark_attr)
{
	int first = n > r->w ? n - r->w : 0, i;

	max = vmax(v + first, n - first, max);
	for (i = first; i < n; i++) {
		int e = (int)(v[i] / max * r->h * 8 + 0.5);

		if (v[i] > 0 && e == 0)
			e = 1;
		screen_vbar(r, i - first, r->h - 1, e, i == mark ? mark_attr : attr);
		if (i == mark && e == 0)
			screen_put(r, r->h - 1, i - first, mark_attr, "\u2502");
	}
}

void screen_sparkline(const struct screen_rect *r, int row, int col,
		      const double *v, int n, double max, int attr)
{
	int i;

	max = vmax(v, n, max);
	for (i = 0; i < n; i++) {
		int e = (int)(v[i] / max * 8 + 0.5);

		screen_put(r, row, col + i, attr,
			   blocks[e < 0 ? 0 : e > 8 ? 8 : e]);
	}
}

void screen_message(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(screen_msg, sizeof(screen_msg), fmt, ap);
	va_end(ap);
	screen_msg_err = 0;
}

void screen_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(screen_msg, sizeof(screen_msg), fmt, ap);
	va_end(ap);
	screen_msg_err = 1;
}

const char *screen_message_text(void)
{
	return screen_msg;
}

/* ---- readline ---- */

static int rl_getc_cb(FILE *f)
{
	if (rl_feed_pos < rl_feed_len)
		return rl_feed[rl_feed_pos++];
	return EOF;
}

static int rl_avail_cb(void)
{
	return rl_feed_pos < rl_feed_len;
}

static void rl_redisplay_cb(void)
{
}

/* Tab: the completer (screen_prompt_completer) gives the words that may
 * follow the line before the word; several matches are listed on the
 * message line (readline's own listing would go to /dev/null) */
static char *(*screen_completer)(const char *before, const char *text,
				 int state);
static char screen_before[256];

static char *rl_gen_cb(const char *text, int state)
{
	return screen_completer ? screen_completer(screen_before, text, state)
				: NULL;
}

static char **rl_complete_cb(const char *text, int start, int end)
{
	(void)end;
	snprintf(screen_before, sizeof(screen_before), "%.*s", start,
		 rl_line_buffer ? rl_line_buffer : "");
	rl_attempted_completion_over = 1; /* never file names */
	return rl_completion_matches(text, rl_gen_cb);
}

static void rl_matches_cb(char **matches, int n, int maxlen)
{
	size_t len = 0;
	int i;

	(void)maxlen;
	len = snprintf(screen_msg, sizeof(screen_msg), "%d:", n);
	for (i = 1; i <= n && len < sizeof(screen_msg); i++)
		len += snprintf(screen_msg + len, sizeof(screen_msg) - len,
				" %s", matches[i]);
	screen_msg_err = 0;
}

void screen_prompt_completer(char *(*fn)(const char *before, const char *text,
					 int state))
{
	screen_completer = fn;
}

static void rl_line_cb(char *line)
{
	prompt_done = 1;
	prompt_line = line;
	if (line && *line)
		add_history(line);
	rl_callback_handler_remove();
}

void screen_prompt_begin(const char *prompt)
{
	snprintf(prompt_text, sizeof(prompt_text), "%s", prompt);
	prompt_on = 1;
	prompt_done = 0;
	prompt_line = NULL;
	rl_callback_handler_install(prompt_text, rl_line_cb);
	curs_set(1);
}

int screen_prompt_active(void)
{
	return prompt_on;
}

static void feed(const char *bytes, int n)
{
	rl_feed_len = n;
	rl_feed_pos = 0;
	memcpy(rl_feed, bytes, n);
	while (rl_feed_pos < rl_feed_len && !prompt_done) {
		int before = rl_feed_pos;

		rl_callback_read_char();
		if (rl_feed_pos == before)
			break;
	}
}

int screen_prompt_key(int key, char **line)
{
	char buf[8];
	int n = 0;

	*line = NULL;
	if (!prompt_on)
		return 1;
	if (key != SCREEN_KEY_TAB)
		screen_msg[0] = 0; /* a completion listing goes with the key */
	switch (key) {
	case SCREEN_KEY_ESC:
	case 'C' & 0x1f:
	case 'G' & 0x1f:
		rl_callback_handler_remove();
		prompt_on = 0;
		curs_set(0);
		return 1;
	case SCREEN_KEY_ENTER:
		buf[n++] = '\r';
		break;
	case SCREEN_KEY_BACKSPACE:
		buf[n++] = 0x7f;
		if (rl_end == 0) { /* backspace on an empty line cancels */
			rl_callback_handler_remove();
			prompt_on = 0;
			curs_set(0);
			return 1;
		}
		break;
	case SCREEN_KEY_LEFT: n = snprintf(buf, sizeof(buf), "\033[D"); break;
	case SCREEN_KEY_RIGHT: n = snprintf(buf, sizeof(buf), "\033[C"); break;
	case SCREEN_KEY_UP: n = snprintf(buf, sizeof(buf), "\033[A"); break;
	case SCREEN_KEY_DOWN: n = snprintf(buf, sizeof(buf), "\033[B"); break;
	case SCREEN_KEY_HOME: buf[n++] = 'A' & 0x1f; break;
	case SCREEN_KEY_END: buf[n++] = 'E' & 0x1f; break;
	case SCREEN_KEY_DELETE: buf[n++] = 'D' & 0x1f; break;
	case SCREEN_KEY_TAB: buf[n++] = '\t'; break;
	default:
		if (key >= SCREEN_KEY_BASE)
			return 0;
		if (key == ('D' & 0x1f) && rl_end == 0) {
			rl_callback_handler_remove();
			prompt_on = 0;
			curs_set(0);
			return 1;
		}
		{
			mbstate_t st;

			memset(&st, 0, sizeof(st));
			n = (int)wcrtomb(buf, (wchar_t)key, &st);
			if (n <= 0)
				return 0;
		}
	}
	feed(buf, n);
	if (prompt_done) {
		prompt_on = 0;
		curs_set(0);
		*line = prompt_line;
		return 1;
	}
	return 0;
}

/* ---- terminal ---- */

int screen_init(char **cause)
{
	int i;
	static const short colors[SC_NCOLORS] = {
		-1, COLOR_RED, COLOR_GREEN, COLOR_YELLOW, COLOR_BLUE,
		COLOR_MAGENTA, COLOR_CYAN, COLOR_WHITE, COLOR_BLACK,
	};

	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
		return propel_cause(cause, -ENOTTY,
				    "not a terminal (the TUI needs a tty on "
				    "stdin and stdout; use `propel replay` for "
				    "text)");
	setlocale(LC_ALL, "");
	if (!getenv("ESCDELAY"))
		set_escdelay(25);
	if (!newterm(NULL, stdout, stdin))
		return propel_cause(cause, -ENOTTY, "cannot use terminal \"%s\"",
				    getenv("TERM") ? getenv("TERM") : "");
	screen_up = 1;
	raw();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	curs_set(0);
	/* NO_COLOR (no-color.org): set and not empty = monochrome */
	if (has_colors() && !(getenv("NO_COLOR") && *getenv("NO_COLOR"))) {
		start_color();
		use_default_colors();
		screen_has_colors = 1;
		for (i = 1; i < SC_NCOLORS; i++)
			init_pair(i, i == SC_GRAY && COLORS > 8 ? 8 : colors[i], -1);
		init_pair(SCREEN_PAIR_FAULT, COLOR_WHITE, COLOR_RED);
		init_pair(SCREEN_PAIR_MATCH, COLOR_BLACK, COLOR_YELLOW);
	}
	/* the wheel and clicks (tmux and xterm report them) */
	mousemask(BUTTON1_PRESSED | BUTTON1_CLICKED | BUTTON4_PRESSED |
			  BUTTON5_PRESSED,
		  NULL);
	mouseinterval(0);
	/* readline: fed by us, silent */
	rl_null = fopen("/dev/null", "w");
	rl_instream = NULL;
	rl_outstream = rl_null;
	rl_getc_function = rl_getc_cb;
	rl_redisplay_function = rl_redisplay_cb;
	rl_input_available_hook = rl_avail_cb;
	rl_prep_term_function = NULL;
	rl_deprep_term_function = NULL;
	rl_catch_signals = 0;
	rl_catch_sigwinch = 0;
	rl_change_environment = 0;
	rl_attempted_completion_function = rl_complete_cb;
	rl_completion_display_matches_hook = rl_matches_cb;
	rl_completion_query_items = 1000;
	rl_bind_key('\t', rl_complete);
	rl_variable_bind("show-all-if-ambiguous", "on");
	err_capture();
	return 0;
}

void screen_fini(void)
{
	if (!screen_up)
		return;
	if (prompt_on)
		rl_callback_handler_remove();
	prompt_on = 0;
	curs_set(1);
	endwin();
	screen_up = 0;
	err_release();
	if (rl_null) {
		rl_outstream = NULL;
		fclose(rl_null);
		rl_null = NULL;
	}
}

void screen_size(int *cols, int *rows)
{
	*cols = screen_up ? COLS : 80;
	*rows = screen_up ? LINES : 24;
}

void screen_begin_frame(void)
{
	erase();
}

void screen_status(const char *text)
{
	struct screen_rect r = { 0, LINES - 2, COLS, 1 };

	screen_clear_row(&r, 0, 0, SA_REVERSE);
	screen_put(&r, 0, 0, SA_REVERSE | SA_BOLD, text);
}

void screen_end_frame(void)
{
	struct screen_rect r = { 0, LINES - 1, COLS, 1 };

	err_poll();
	screen_clear_row(&r, 0, 0, SA_NORMAL);
	if (prompt_on) {
		char buf[600];
		int w;

		snprintf(buf, sizeof(buf), "%s%.*s", prompt_text, rl_point,
			 rl_line_buffer ? rl_line_buffer : "");
		w = screen_strwidth(buf);
		screen_printf(&r, 0, 0, SA_NORMAL, "%s%s", prompt_text,
			      rl_line_buffer ? rl_line_buffer : "");
		if (screen_msg[0]) { /* Tab's matches, above the prompt */
			struct screen_rect m = { 0, LINES - 2, COLS, 1 };

			screen_clear_row(&m, 0, 0, SA_NORMAL);
			screen_put(&m, 0, 0, SC_CYAN, screen_msg);
		}
		move(LINES - 1, w < COLS ? w : COLS - 1);
	} else if (screen_msg[0]) {
		screen_put(&r, 0, 0, screen_msg_err ? SC_RED | SA_BOLD : SA_NORMAL,
			   screen_msg);
	}
	refresh();
}

/* a mouse report: the wheel as a key, a click as SCREEN_KEY_CLICK; the
 * cell of either kept for screen_mouse() */
static int screen_mouse_event(void)
{
	MEVENT me;

	if (getmouse(&me) != OK)
		return SCREEN_KEY_NONE;
	screen_mouse_x = me.x;
	screen_mouse_y = me.y;
	if (me.bstate & BUTTON4_PRESSED)
		return SCREEN_KEY_WHEEL_UP;
	if (me.bstate & BUTTON5_PRESSED)
		return SCREEN_KEY_WHEEL_DOWN;
	if (me.bstate & (BUTTON1_PRESSED | BUTTON1_CLICKED))
		return SCREEN_KEY_CLICK;
	return SCREEN_KEY_NONE;
}

void screen_mouse(int *x, int *y)
{
	*x = screen_mouse_x;
	*y = screen_mouse_y;
}

int screen_getkey(int timeout_ms)
{
	wint_t wc;
	int rc;

	timeout(timeout_ms);
	rc = get_wch(&wc);
	if (rc == ERR) {
		struct pollfd p = { STDIN_FILENO, POLLIN, 0 };

		/* a hung-up tty: poll says so at once (POLLHUP), or the
		 * descriptor is no longer a terminal */
		if ((poll(&p, 1, 0) == 1 &&
		     (p.revents & (POLLHUP | POLLERR | POLLNVAL))) ||
		    !isatty(STDIN_FILENO))
			return SCREEN_KEY_HANGUP;
		return SCREEN_KEY_NONE;
	}
	if (!prompt_on)
		screen_msg[0] = 0;
	if (rc == KEY_CODE_YES) {
		switch (wc) {
		case KEY_UP: return SCREEN_KEY_UP;
		case KEY_DOWN: return SCREEN_KEY_DOWN;
		case KEY_LEFT: return SCREEN_KEY_LEFT;
		case KEY_RIGHT: return SCREEN_KEY_RIGHT;
		case KEY_PPAGE: return SCREEN_KEY_PGUP;
		case KEY_NPAGE: return SCREEN_KEY_PGDN;
		case KEY_HOME: return SCREEN_KEY_HOME;
		case KEY_END: return SCREEN_KEY_END;
		case KEY_ENTER: return SCREEN_KEY_ENTER;
		case KEY_BACKSPACE: return SCREEN_KEY_BACKSPACE;
		case KEY_BTAB: return SCREEN_KEY_BTAB;
		case KEY_DC: return SCREEN_KEY_DELETE;
		case KEY_RESIZE: return SCREEN_KEY_RESIZE;
		case KEY_MOUSE: return screen_mouse_event();
		default:
			if (wc >= KEY_F(1) && wc <= KEY_F(12))
				return SCREEN_KEY_F0 + (wc - KEY_F0);
			return SCREEN_KEY_NONE;
		}
	}
	switch (wc) {
	case '\r':
	case '\n': return SCREEN_KEY_ENTER;
	case '\t': return SCREEN_KEY_TAB;
	case 27: return SCREEN_KEY_ESC;
	case 127:
	case 8: return SCREEN_KEY_BACKSPACE;
	}
	return (int)wc;
}
