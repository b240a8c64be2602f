/*
 * tui/screen.h - the drawing API the views use.  tui/screen.c is the only
 * file that includes curses and readline; everything a view draws goes
 * through these calls, so views never see a WINDOW or a chtype.
 *
 * Coordinates: a view draws into a struct screen_rect handed to it by the
 * TUI core (tui/tui.c).  row and col are relative to the rectangle's
 * top-left corner; everything is clipped to the rectangle, so a view may
 * write past its right edge without harm.  Text is UTF-8; widths are
 * counted in terminal columns (wide characters take two).
 *
 * Attributes: one int = a color (enum screen_color, low byte) OR'd with
 * flags (SA_BOLD ...).  SA_NORMAL is the default colors.  Colours are
 * ncurses colour pairs (one per colour on the default background, plus the
 * fault's and the search hit's); they degrade to bold/reverse on a
 * terminal without colours or when NO_COLOR is set (no-color.org).
 *
 * Keys: handle_key() gets an int = a Unicode code point for a printable
 * key, or one of SCREEN_KEY_* below (all >= SCREEN_KEY_BASE).  Ctrl-X
 * arrives as the control code (e.g. 'L' & 0x1f).
 *
 * Lifetime (called by the TUI core only): screen_init -> (screen_begin_frame,
 * views draw, screen_end_frame, screen_getkey)* -> screen_fini.  screen_fini
 * restores the terminal and is safe to call twice.
 */
#ifndef PROPEL_TUI_SCREEN_H
#define PROPEL_TUI_SCREEN_H

#include <stdarg.h>

struct screen_rect {
	int x, y; /* top-left, in terminal columns/rows */
	int w, h; /* size; a rectangle with w or h <= 0 draws nothing */
};

enum screen_color {
	SC_DEFAULT = 0,
	SC_RED,
	SC_GREEN,
	SC_YELLOW,
	SC_BLUE,
	SC_MAGENTA,
	SC_CYAN,
	SC_WHITE,
	SC_GRAY,
	SC_NCOLORS
};

/* flags, OR'd with one color */
#define SA_NORMAL 0
#define SA_BOLD 0x100
#define SA_REVERSE 0x200  /* selection / cursor line */
#define SA_UNDERLINE 0x400
#define SA_DIM 0x800
#define SA_HIGHLIGHT 0x1000 /* the faulting line: bold white on red */
#define SA_MATCH 0x2000 /* a search hit: black on yellow (monochrome:
			 * reverse and underlined) */
#define SA_COLOR_MASK 0xff

enum screen_key {
	SCREEN_KEY_BASE = 0x110000, /* past the last Unicode code point */
	SCREEN_KEY_UP,
	SCREEN_KEY_DOWN,
	SCREEN_KEY_LEFT,
	SCREEN_KEY_RIGHT,
	SCREEN_KEY_PGUP,
	SCREEN_KEY_PGDN,
	SCREEN_KEY_HOME,
	SCREEN_KEY_END,
	SCREEN_KEY_ENTER,
	SCREEN_KEY_BACKSPACE,
	SCREEN_KEY_TAB,
	SCREEN_KEY_BTAB, /* shift-tab */
	SCREEN_KEY_ESC,
	SCREEN_KEY_RESIZE,
	SCREEN_KEY_DELETE,
	SCREEN_KEY_HANGUP, /* the terminal is gone (a dropped ssh): quit */
	SCREEN_KEY_WHEEL_UP,
	SCREEN_KEY_WHEEL_DOWN,
	SCREEN_KEY_CLICK, /* button 1: its cell from screen_mouse() */
	SCREEN_KEY_F0, /* F1 = SCREEN_KEY_F0 + 1, ... F12 */
	SCREEN_KEY_NONE = SCREEN_KEY_F0 + 64, /* timeout, nothing pressed */
};

/* ---- drawing (views) ---- */

/* Write UTF-8 text at (row, col) of r, clipped to r.  Returns the number
 * of columns written.  A newline or control character is shown as '?'. */
int screen_put(const struct screen_rect *r, int row, int col, int attr,
	       const char *text);
int screen_printf(const struct screen_rect *r, int row, int col, int attr,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
int screen_vprintf(const struct screen_rect *r, int row, int col, int attr,
		   const char *fmt, va_list ap);

/* Clear the whole rectangle / one row of it (to the right of col) with
 * attr's background (SA_REVERSE paints a selection bar). */
void screen_clear(const struct screen_rect *r);
void screen_clear_row(const struct screen_rect *r, int row, int col, int attr);

/* Lines for frames and graphs: horizontal/vertical runs of box-drawing
 * characters, and a border around r with a title in the top edge. */
void screen_hline(const struct screen_rect *r, int row, int col, int len,
		  int attr);
void screen_vline(const struct screen_rect *r, int row, int col, int len,
		  int attr);
void screen_box(const struct screen_rect *r, const char *title, int attr);

/* One vertical bar at column col whose bottom is row `bottom` and whose
 * height is `eighths` / 8 rows (block elements U+2581..U+2588), clipped. */
void screen_vbar(const struct screen_rect *r, int col, int bottom,
		 int eighths, int attr);
/* A bar graph filling r: n values, one column each (the last n that fit
 * when n > r->w), scaled so that `max` fills the height (max <= 0: the
 * largest value).  Column `mark` (index into v, or -1) is drawn with
 * mark_attr: the cursor's time. */
void screen_graph(const struct screen_rect *r, const double *v, int n,
		  double max, int attr, int mark, int mark_attr);
/* One-row sparkline of n values at (row, col), width n (clipped). */
void screen_sparkline(const struct screen_rect *r, int row, int col,
		      const double *v, int n, double max, int attr);

/* Display width in columns of a UTF-8 string. */
int screen_strwidth(const char *text);

/* The message line (bottom row): a one-line note or error, shown until the
 * next key.  Views use it to say "no match", "no samples here", ... */
void screen_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void screen_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- terminal (TUI core only) ---- */

/* Take the terminal: fails with *cause when stdin/stdout is not a tty. */
int screen_init(char **cause);
void screen_fini(void);
/*
 * While the screen is up, a stderr that was the terminal goes to a memory
 * file (shown on the message line, written out by screen_fini).  For a
 * redirect of fd 2 of its own (tui/live.c's log): screen_stderr_fd() is
 * the terminal's stderr to save, screen_stderr_back(saved) puts fd 2 back
 * where it belongs now (the memory file while the screen is up, else
 * saved).
 */
int screen_stderr_fd(void);
void screen_stderr_back(int saved);
void screen_size(int *cols, int *rows);
void screen_begin_frame(void);
void screen_end_frame(void);
/* Wait for a key up to timeout_ms (-1: forever).  SCREEN_KEY_NONE on
 * timeout; SCREEN_KEY_HANGUP once the terminal has hung up (every read
 * then fails at once: a loop that waited for a key would spin). */
int screen_getkey(int timeout_ms);
/* The terminal cell (column, row) of the last click or wheel turn. */
void screen_mouse(int *x, int *y);
/* The status line: `text` on the row above the message line, reversed. */
void screen_status(const char *text);
/* The current message, if any ("" when none); cleared by screen_getkey. */
const char *screen_message_text(void);

/*
 * The readline prompt on the message line (readline's callback interface,
 * inside the curses loop).  screen_prompt_begin shows `prompt`; each key
 * goes to screen_prompt_key until it returns 1 (line done: *line is a
 * malloc'd string, or NULL when cancelled with Esc/Ctrl-C/Ctrl-D).
 * One history, shared by the prompts.
 */
void screen_prompt_begin(const char *prompt);
int screen_prompt_key(int key, char **line);
/* Tab in a prompt: fn(before, text, state) is readline's generator (state
 * 0 first, then 1, 2, ...: each call one malloc'd word starting with text,
 * NULL when done); before = the line up to the word.  Several matches are
 * listed on the message line. */
void screen_prompt_completer(char *(*fn)(const char *before, const char *text,
					 int state));
/* True while a prompt is open (draws it at the bottom row). */
int screen_prompt_active(void);

#endif
