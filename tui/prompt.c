/*
 * tui/prompt.c - the one command table (tmux's cmd_table[]) and the TUI's
 * `:` prompt that runs from it.
 *
 * cmd_table[] lists every command of propel once, as a const struct
 * propel_cmd (tui/cmd.h): the command line's verbs (tui/cmd-<verb>.c,
 * run by tui/propel.c's main) and the prompt's commands, defined below,
 * which act on the open TUI (struct tui, tui/tui.h).  Both sides look a
 * name up with cmd_find; a command asked where it does not run says where
 * it does (`propel bt` -> ":bt inside the TUI"; `:record` -> "on the
 * command line").
 *
 * prompt_run() is what the core calls with a line typed after `:`: a
 * command of the table, a cursor move by gdb's name (`reverse-step`, and
 * its one-letter abbreviations when no command has that name), then the
 * views' own commands (view_ops.command: the focused view first).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cursor.h"
#include "engine/reconstruct.h"
#include "share/log.h"
#include "tui/cmd.h"
#include "tui/screen.h"
#include "tui/tui-core.h"
#include "tui/tui.h"

/* ---- the prompt's commands (a TUI is open) ---- */

static int cmd_thread(struct tui *t, int argc, char **argv, char **cause)
{
	int i;

	if (argc < 2) {
		char buf[512];
		int len = 0;

		for (i = 0; i < t->r->nthreads && len < (int)sizeof(buf); i++)
			len += snprintf(buf + len, sizeof(buf) - len, "%s%d %d:%d",
					i ? ", " : "", i + 1, t->r->threads[i].pid,
					t->r->threads[i].tid);
		screen_message("threads: %s", buf);
		return 0;
	}
	return cursor_switch_thread(t->c, strtol(argv[1], NULL, 0), cause);
}

/* the breakpoints as gdb numbers them (never reused); the cursor holds
 * them by function id (one name may be several functions: one per
 * process), rebuilt from this list on `delete N` */
static struct prompt_break {
	int num;
	char name[128];
} prompt_brk[64];
static int prompt_nbrk, prompt_brk_seq;

static int cmd_break(struct tui *t, int argc, char **argv, char **cause)
{
	int err, k;

	if (argc < 2)
		return propel_cause(cause, -EINVAL, "usage: break FUNC");
	for (k = 0; k < prompt_nbrk; k++)
		if (!strcmp(prompt_brk[k].name, argv[1])) {
			screen_message("breakpoint %d is already at %s",
				       prompt_brk[k].num, argv[1]);
			return 0;
		}
	if (prompt_nbrk == (int)(sizeof(prompt_brk) / sizeof(prompt_brk[0])))
		return propel_cause(cause, -ENOSPC,
				    "break: %d breakpoints already (delete N)",
				    prompt_nbrk);
	err = cursor_break_add(t->c, argv[1], cause);
	if (err)
		return err;
	prompt_brk[prompt_nbrk].num = ++prompt_brk_seq;
	snprintf(prompt_brk[prompt_nbrk].name, sizeof(prompt_brk[0].name), "%s",
		 argv[1]);
	prompt_nbrk++;
	screen_message("Breakpoint %d at %s (%d set); `continue` stops there",
		       prompt_brk_seq, argv[1], prompt_nbrk);
	return 0;
}

static int cmd_delete(struct tui *t, int argc, char **argv, char **cause)
{
	int k, j, num, found = 0;
	char *end;

	if (argc < 2) {
		cursor_break_clear(t->c);
		prompt_nbrk = 0;
		screen_message("breakpoints deleted");
		return 0;
	}
	num = (int)strtol(argv[1], &end, 10);
	if (*end)
		return propel_cause(cause, -EINVAL, "usage: delete [N]");
	cursor_break_clear(t->c);
	for (k = j = 0; k < prompt_nbrk; k++) {
		if (prompt_brk[k].num == num) {
			found = 1;
			continue;
		}
		prompt_brk[j++] = prompt_brk[k];
		cursor_break_add(t->c, prompt_brk[k].name, NULL);
	}
	prompt_nbrk = j;
	if (!found)
		return propel_cause(cause, -ENOENT,
				    "no breakpoint number %d (info breakpoints)",
				    num);
	screen_message("breakpoint %d deleted (%d left)", num, prompt_nbrk);
	return 0;
}

static int cmd_info(struct tui *t, int argc, char **argv, char **cause)
{
	char buf[512];
	int len = 0, k;

	if (argc >= 2 && !strncmp(argv[1], "breakpoints", strlen(argv[1]))) {
		if (!prompt_nbrk) {
			screen_message("No breakpoints.");
			return 0;
		}
		len = snprintf(buf, sizeof(buf), "Num  What");
		for (k = 0; k < prompt_nbrk && len < (int)sizeof(buf); k++)
			len += snprintf(buf + len, sizeof(buf) - len, "\n%-4d %s",
					prompt_brk[k].num, prompt_brk[k].name);
		free(t->popup);
		t->popup = strdup(buf);
		snprintf(t->popup_title, sizeof(t->popup_title), "breakpoints");
		screen_message("%d breakpoint%s", prompt_nbrk,
			       prompt_nbrk == 1 ? "" : "s");
		return 0;
	}
	if (argc >= 2 && !strncmp(argv[1], "threads", strlen(argv[1])))
		return cmd_thread(t, 1, argv, cause);
	return propel_cause(cause, -EINVAL,
			    "usage: info breakpoints | info threads");
}

static int cmd_goto(struct tui *t, int argc, char **argv, char **cause)
{
	char *end;
	long long v;

	if (argc < 2)
		return propel_cause(cause, -EINVAL,
				    "usage: goto +TIME (as the status line shows "
				    "it: +2.137 ms) | goto EVENT-ID | goto @TS-NS");
	/* a time as shown: "+2.137 ms", "2.137ms", "1.5 s" (from the
	 * session's first event) */
	if (argv[1][0] == '+' || argc > 2 || strpbrk(argv[1], "nums.")) {
		char text[128] = "";
		int64_t ns, half;
		int k;

		for (k = 1; k < argc; k++)
			snprintf(text + strlen(text), sizeof(text) - strlen(text),
				 "%s%s", k > 1 ? " " : "", argv[k]);
		if (tui_parse_time(text, &ns, &half))
			return propel_cause(cause, -EINVAL,
					    "bad time \"%s\" (usage: goto +TIME: "
					    "a number and ns, us, ms or s)",
					    text);
		/* the first event the status line would show at that
		 * time: it rounds to its last digit (an event at +1.2476 ms
		 * reads "+1.248 ms", and the last one at or before 1.248 ms
		 * was an earlier event, "+1.247 ms") */
		return cursor_goto_ts_range(t->c, t->r->first_ts + ns - half,
					    t->r->first_ts + ns + half + (half == 0),
					    cause);
	}
	if (argv[1][0] == '@') {
		v = strtoll(argv[1] + 1, &end, 0);
		if (*end)
			return propel_cause(cause, -EINVAL, "bad time %s", argv[1]);
		return cursor_goto_ts(t->c, v, cause);
	}
	v = strtoll(argv[1], &end, 0);
	if (*end)
		return propel_cause(cause, -EINVAL, "bad event id %s", argv[1]);
	return cursor_goto_event(t->c, v, cause);
}

static int cmd_directory(struct tui *t, int argc, char **argv, char **cause)
{
	size_t len = strlen(t->srcpath);

	if (argc < 2) {
		screen_message("source path: %s", t->srcpath);
		return 0;
	}
	snprintf(t->srcpath + len, sizeof(t->srcpath) - len, "%s%s",
		 len ? ":" : "", argv[1]);
	screen_message("source path: %s", t->srcpath);
	return 0;
}

static int cmd_view(struct tui *t, int argc, char **argv, char **cause)
{
	int i;

	if (argc < 2 || (i = tui_find_view(t, argv[1])) < 0) {
		char names[256];
		int len = 0;

		for (i = 0; i < t->nviews; i++)
			len += snprintf(names + len, sizeof(names) - len, "%s%s",
					i ? " " : "", t->views[i].ops->name);
		if (argc < 2) {
			screen_message("views: %s  (usage: view NAME)", names);
			return 0;
		}
		return propel_cause(cause, -ENOENT,
				    "no view \"%s\" (usage: view NAME: %s)",
				    argv[1], names);
	}
	return view_focus(&t->views[i], argv[1]);
}

/* also the key `a` of the trace (tui/tui.c) */
int cmd_interleave_exec(struct tui *t, int argc, char **argv, char **cause)
{
	t->interleave = !t->interleave;
	screen_message("trace: %s", t->interleave ? "all threads by time"
						   : "call tree of one thread");
	return 0;
}

static int cmd_help_tui(struct tui *t, int argc, char **argv, char **cause)
{
	t->help = 1;
	return 0;
}

static int cmd_help_cli(int argc, char **argv)
{
	cmd_print_usage(stdout);
	return 0;
}

static int cmd_quit(struct tui *t, int argc, char **argv, char **cause)
{
	t->quit = 1;
	return 0;
}

static const struct propel_cmd cmd_thread_entry = {
	"thread", "t", "[N]", "list the threads, or move the cursor to thread N",
	NULL, cmd_thread, CMD_SESSION,
};
static const struct propel_cmd cmd_break_entry = {
	"break", "b", "FUNC", "`continue` stops at FUNC's entry",
	NULL, cmd_break, CMD_SESSION,
};
static const struct propel_cmd cmd_delete_entry = {
	"delete", "d", "[N]", "delete breakpoint N (all without N)",
	NULL, cmd_delete, CMD_SESSION,
};
static const struct propel_cmd cmd_info_entry = {
	"info", "i", "breakpoints | threads", "list the breakpoints or threads",
	NULL, cmd_info, CMD_SESSION,
};
static const struct propel_cmd cmd_goto_entry = {
	"goto", "g", "+TIME | EVENT-ID | @TS-NS",
	"move the cursor to a time as shown (+2.137 ms) or an event",
	NULL, cmd_goto, CMD_SESSION,
};
static const struct propel_cmd cmd_directory_entry = {
	"directory", "dir", "[DIR]", "add DIR to the source path (or show it)",
	NULL, cmd_directory, CMD_SESSION,
};
static const struct propel_cmd cmd_view_entry = {
	"view", NULL, "NAME", "show the view NAME (trace, flows, vitals, ...)",
	NULL, cmd_view, 0,
};
static const struct propel_cmd cmd_interleave_entry = {
	"interleave", NULL, "", "trace: all threads by time (toggle)",
	NULL, cmd_interleave_exec, CMD_SESSION,
};
static const struct propel_cmd cmd_help_entry = {
	"help", "h", "", "the commands (propel help) or the keys (:help)",
	cmd_help_cli, cmd_help_tui, 0,
};
static const struct propel_cmd cmd_quit_entry = {
	"quit", "q", "", "leave the TUI",
	NULL, cmd_quit, 0,
};

/* ---- the table ---- */

const struct propel_cmd *const cmd_table[] = {
	/* the command line (tui/cmd-<verb>.c) */
	&cmd_record_entry,
	&cmd_attach_entry,
	&cmd_replay_entry,
	&cmd_tui_entry,
	&cmd_top_entry,
	&cmd_vitals_entry,
	&cmd_recover_entry,
	&cmd_detach_entry,
	&cmd_report_entry,
	&cmd_export_entry,
	/* the `:` prompt (above) */
	&cmd_bt_entry,
	&cmd_up_entry,
	&cmd_down_entry,
	&cmd_frame_entry,
	&cmd_list_entry,
	&cmd_print_entry,
	&cmd_info_entry,
	&cmd_thread_entry,
	&cmd_break_entry,
	&cmd_delete_entry,
	&cmd_goto_entry,
	&cmd_directory_entry,
	&cmd_view_entry,
	&cmd_interleave_entry,
	&cmd_help_entry,
	&cmd_quit_entry,
};
const unsigned cmd_table_size = sizeof(cmd_table) / sizeof(cmd_table[0]);

const struct propel_cmd *cmd_find(const char *name)
{
	unsigned i;

	for (i = 0; i < cmd_table_size; i++)
		if (strcmp(name, cmd_table[i]->name) == 0 ||
		    (cmd_table[i]->alias && strcmp(name, cmd_table[i]->alias) == 0))
			return cmd_table[i];
	return NULL;
}

void cmd_usage(const struct propel_cmd *c)
{
	printf("usage: propel %s %s\n\n%s\n", c->name, c->usage, c->summary);
}

int cmd_wants_help(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			return 0;
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return 1;
	}
	return 0;
}

void cmd_print_usage(FILE *f)
{
	unsigned i;
	int col = 0;

	fprintf(f, "usage: propel <command> [options]   (propel <command> --help)\n"
		   "       propel DB                  open a session in the TUI\n"
		   "       propel                     the live console (as `propel "
		   "top`)\n\n"
		   "commands:\n");
	for (i = 0; i < cmd_table_size; i++)
		if (cmd_table[i]->exec && cmd_table[i] != &cmd_help_entry)
			fprintf(f, "  %-8s %s\n", cmd_table[i]->name,
				cmd_table[i]->summary);
	fprintf(f, "\nInside the TUI, `:` also takes:");
	for (i = 0; i < cmd_table_size; i++)
		if (cmd_table[i]->tui_exec) {
			if (col++ % 8 == 0)
				fprintf(f, "\n ");
			fprintf(f, " %s", cmd_table[i]->name);
		}
	fprintf(f, "\n\nThe default session file is ./propel.db.\n");
}

/* ---- the `:` prompt ---- */

/* ---- Tab at the `:` prompt ---- */

static struct tui *prompt_tui;

static const char *const prompt_moves[] = {
	"step", "next", "finish", "continue", "reverse-step", "reverse-next",
	"reverse-finish", "reverse-continue",
};

/* the k-th word that may follow `before` (NULL past the last) */
static const char *prompt_word(struct tui *t, const char *first, int k)
{
	static const char *const info[] = { "breakpoints", "threads" };
	unsigned i, n = 0;

	if (!first) { /* the command: the table's, then the moves */
		for (i = 0; i < cmd_table_size; i++)
			if (cmd_table[i]->tui_exec && (t->c || !(cmd_table[i]->flags & CMD_SESSION)) &&
			    n++ == (unsigned)k)
				return cmd_table[i]->name;
		k -= n;
		if (t->c && k < (int)(sizeof(prompt_moves) / sizeof(prompt_moves[0])))
			return prompt_moves[k];
		return NULL;
	}
	if (!strcmp(first, "view"))
		return k < t->nviews ? t->views[k].ops->name : NULL;
	if (!strcmp(first, "info") || !strcmp(first, "i"))
		return k < 2 ? info[k] : NULL;
	if (t->r && (!strcmp(first, "break") || !strcmp(first, "b")))
		return k < (int)t->r->nfuncs ? recon_func_name(t->r, k) : NULL;
	return NULL;
}

static char *prompt_complete(const char *before, const char *text, int state)
{
	static int k;
	static char first[64];
	struct tui *t = prompt_tui;
	const char *w;
	size_t len = strlen(text);

	if (!t)
		return NULL;
	if (!state) {
		k = 0;
		first[0] = 0;
		sscanf(before, "%63s", first);
	}
	while ((w = prompt_word(t, first[0] ? first : NULL, k++)))
		if (!strncmp(w, text, len) && w[0] != '?' &&
		    strncmp(w, "0x", 2))
			return strdup(w);
	return NULL;
}

void prompt_attach(struct tui *t)
{
	prompt_tui = t;
	screen_prompt_completer(t ? prompt_complete : NULL);
}

/* a move by gdb's name, N times (`step 5`); the count on the message
 * line when it stopped early (end of trace, outermost frame) */
static void prompt_move(struct tui *t, int m, int argc, char **argv)
{
	char *end;
	long n = 1, k;

	if (argc > 1) {
		n = strtol(argv[1], &end, 10);
		if (*end || n < 1 || n > 1000000) {
			screen_error("usage: %s [N] (N a count from 1)",
				     cursor_move_name((enum cursor_move)m));
			return;
		}
	}
	for (k = 0; k < n; k++) {
		char *cause = NULL;
		int pid0 = t->r->threads[cursor_thread(t->c)].pid;

		if (cursor_move(t->c, (enum cursor_move)m, &cause)) {
			screen_error("%s: %s (after %ld of %ld)",
				     cursor_move_name((enum cursor_move)m),
				     cause ? cause : "cannot move", k, n);
			free(cause);
			break;
		}
		if (k == n - 1 || t->r->threads[cursor_thread(t->c)].pid != pid0) {
			/* the last, or a crossing (said at once) */
			tui_moved(t);
			tui_moved_from(t, pid0);
		}
	}
	if (k == n && n > 1 && !screen_message_text()[0])
		screen_message("%s %ld: %ld moves", cursor_move_name((enum cursor_move)m),
			       n, n);
}

void prompt_run(struct tui *t, char *line)
{
	const struct propel_cmd *c;
	char *argv[16], *save, *tok;
	char *cause = NULL;
	int argc = 0, m, i, err = 0, used = 0;

	for (tok = strtok_r(line, " \t", &save); tok && argc < 15;
	     tok = strtok_r(NULL, " \t", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	if (!argc)
		return;
	m = t->c ? cursor_move_parse(argv[0]) : -1;
	if (m >= 0 && strlen(argv[0]) > 1) {
		prompt_move(t, m, argc, argv);
		return;
	}
	c = cmd_find(argv[0]);
	if (c && c->tui_exec && (!(c->flags & CMD_SESSION) || t->c)) {
		err = c->tui_exec(t, argc, argv, &cause);
		if (!err && t->c)
			tui_moved(t);
		used = 1;
	}
	if (m >= 0 && !used) { /* one-letter gdb abbreviations: s, n, c */
		prompt_move(t, m, argc, argv);
		return;
	}
	for (i = -1; !used && i < t->nviews; i++) {
		struct view *v = i < 0 ? &t->views[t->slot[t->focus]] : &t->views[i];

		if (!v->ops->command)
			continue;
		err = v->ops->command(v, argc, argv, &cause);
		used = err != 0;
	}
	if (used && err == -EINVAL && c && cause && !strstr(cause, "usage")) {
		/* an error names the usage */
		char *u = NULL;

		propel_cause(&u, err, "%s (usage: %s %s)", cause, c->name,
			     c->usage);
		free(cause);
		cause = u;
	}
	if (!used && c && c->tui_exec)
		err = propel_cause(&cause, -EINVAL,
				   "%s: needs a stored session (propel tui DB)",
				   argv[0]);
	else if (!used && c)
		err = propel_cause(&cause, -EINVAL,
				   "%s: runs from the command line (propel %s "
				   "--help), not at the `:` prompt",
				   argv[0], c->name);
	else if (!used)
		err = propel_cause(&cause, -EINVAL,
				   "undefined command: \"%s\" (try :help)", argv[0]);
	if (err < 0)
		screen_error("%s", cause ? cause : strerror(-err));
	free(cause);
}
