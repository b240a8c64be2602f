/*
 * tui/cmd.h - the command descriptor (tmux's cmd_entry).  Every command of
 * propel, on the command line (`propel VERB ...`) and at the TUI's `:`
 * prompt (`:VERB ...`), is one const struct propel_cmd, listed once in
 * cmd_table[] (tui/prompt.c); tui/propel.c's main() and the prompt both
 * look commands up there (cmd_find).  A command of the command line lives
 * in tui/cmd-<verb>.c; the prompt's commands, which act on the open TUI,
 * live in tui/prompt.c (gdb's frame and data commands in
 * tui/prompt-frame.c).
 *
 * exec() runs it from the command line: argv with argv[0] = the verb,
 * returns the process exit status, and prints its own one-line error
 * ("propel: what: why").  tui_exec() runs it from the `:` prompt: 0, or
 * -errno with *cause (shown on the message line).  A command has one or
 * both; asked where it has none, it says where it runs instead.
 */
#ifndef PROPEL_TUI_CMD_H
#define PROPEL_TUI_CMD_H

#include <stdio.h>

struct tui;

#define CMD_SESSION 0x1 /* tui_exec needs a stored session (not live) */

struct propel_cmd {
	const char *name;
	const char *alias;   /* or NULL */
	const char *usage;   /* after "propel <name> " / ":<name> " */
	const char *summary; /* one line for `propel --help` */
	int (*exec)(int argc, char **argv);
	int (*tui_exec)(struct tui *t, int argc, char **argv, char **cause);
	unsigned flags;      /* CMD_* */
};

/* cmd_table[] (tui/prompt.c): every command, ncmds of them. */
extern const struct propel_cmd *const cmd_table[];
extern const unsigned cmd_table_size;

/* The command named name (or alias), or NULL. */
const struct propel_cmd *cmd_find(const char *name);

extern const struct propel_cmd cmd_record_entry;
extern const struct propel_cmd cmd_attach_entry;
extern const struct propel_cmd cmd_replay_entry;
extern const struct propel_cmd cmd_tui_entry;
extern const struct propel_cmd cmd_vitals_entry;
extern const struct propel_cmd cmd_recover_entry;
extern const struct propel_cmd cmd_detach_entry;
extern const struct propel_cmd cmd_report_entry;
extern const struct propel_cmd cmd_export_entry;
extern const struct propel_cmd cmd_top_entry;
/* the prompt's gdb frame and data commands (tui/prompt-frame.c) */
extern const struct propel_cmd cmd_bt_entry;
extern const struct propel_cmd cmd_up_entry;
extern const struct propel_cmd cmd_down_entry;
extern const struct propel_cmd cmd_frame_entry;
extern const struct propel_cmd cmd_list_entry;
extern const struct propel_cmd cmd_print_entry;

/* `propel --help`: the commands of the command line, then the prompt's
 * (tui/prompt.c). */
void cmd_print_usage(FILE *f);

/* Print "usage: propel <name> <usage>" and the summary to stdout. */
void cmd_usage(const struct propel_cmd *c);

/* True if argv has --help or -h before any "--". */
int cmd_wants_help(int argc, char **argv);

#endif
