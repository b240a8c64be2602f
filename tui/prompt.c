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
#include "tui/tui.h"

/* ---- the prompt's commands (a TUI is open) ---- */

static int cmd_bt(struct tui *t, int argc, char **argv, char **cause)
{
	int64_t fr[64];
	int n = cursor_backtrace(t->c, fr, 64), i, len;
	int th = cursor_thread(t->c);
	char buf[512];

	len = snprintf(buf, sizeof(buf), "bt: %d frame%s:", n, n == 1 ? "" : "s");
	for (i = 0; i < n && i < 64 && len < (int)sizeof(buf); i++)
		len += snprintf(buf + len, sizeof(buf) - len, " #%d %s", i,
				recon_func_name(t->r,
						recon_get(t->r, th, fr[i]).func));
	screen_message("%s", buf);
	return 0;
}

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

static int cmd_break(struct tui *t, int argc, char **argv, char **cause)
{
	int err;

	if (argc < 2)
		return propel_cause(cause, -EINVAL, "usage: break FUNC");
	err = cursor_break_add(t->c, argv[1], cause);
	if (!err)
		screen_message("breakpoint at %s (%d set); `continue` stops there",
			       argv[1], cursor_break_count(t->c));
	return err;
}

static int cmd_delete(struct tui *t, int argc, char **argv, char **cause)
{
	cursor_break_clear(t->c);
	screen_message("breakpoints deleted");
	return 0;
}

static int cmd_goto(struct tui *t, int argc, char **argv, char **cause)
{
	char *end;
	long long v;

	if (argc < 2)
		return propel_cause(cause, -EINVAL,
				    "usage: goto EVENT-ID | goto @TIME-NS");
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

	if (argc < 2)
		return propel_cause(cause, -EINVAL, "usage: view NAME");
	i = tui_find_view(t, argv[1]);
	if (i < 0)
		return propel_cause(cause, -ENOENT, "no view \"%s\"", argv[1]);
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

static const struct propel_cmd cmd_bt_entry = {
	"bt", "backtrace", "", "the frames the cursor is in",
	NULL, cmd_bt, CMD_SESSION,
};
static const struct propel_cmd cmd_thread_entry = {
	"thread", "t", "[N]", "list the threads, or move the cursor to thread N",
	NULL, cmd_thread, CMD_SESSION,
};
static const struct propel_cmd cmd_break_entry = {
	"break", "b", "FUNC", "`continue` stops at FUNC's entry",
	NULL, cmd_break, CMD_SESSION,
};
static const struct propel_cmd cmd_delete_entry = {
	"delete", "d", "", "delete all breakpoints",
	NULL, cmd_delete, CMD_SESSION,
};
static const struct propel_cmd cmd_goto_entry = {
	"goto", "g", "EVENT-ID | @TIME-NS", "move the cursor to an event or a time",
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
		tui_do_move(t, m);
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
		tui_do_move(t, m);
		return;
	}
	for (i = -1; !used && i < t->nviews; i++) {
		struct view *v = i < 0 ? &t->views[t->slot[t->focus]] : &t->views[i];

		if (!v->ops->command)
			continue;
		err = v->ops->command(v, argc, argv, &cause);
		used = err != 0;
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
