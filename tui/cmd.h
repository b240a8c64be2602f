/*
 * tui/cmd.h - the command descriptor (tmux's cmd_entry).  Each command of
 * the propel binary lives in tui/cmd-<verb>.c and defines one const
 * struct propel_cmd; tui/propel.c lists them in one table.
 *
 * exec() gets argv with argv[0] = the verb, returns the process exit status,
 * and prints its own one-line error ("propel: what: why").
 */
#ifndef PROPEL_TUI_CMD_H
#define PROPEL_TUI_CMD_H

struct propel_cmd {
	const char *name;
	const char *usage;   /* after "propel <name> " */
	const char *summary; /* one line for `propel --help` */
	int (*exec)(int argc, char **argv);
};

extern const struct propel_cmd cmd_record_entry;
extern const struct propel_cmd cmd_attach_entry;
extern const struct propel_cmd cmd_replay_entry;
extern const struct propel_cmd cmd_tui_entry;
extern const struct propel_cmd cmd_vitals_entry;
extern const struct propel_cmd cmd_recover_entry;
extern const struct propel_cmd cmd_detach_entry;
extern const struct propel_cmd cmd_report_entry;
extern const struct propel_cmd cmd_export_entry;

/* Print "usage: propel <name> <usage>" and the summary to stdout. */
void cmd_usage(const struct propel_cmd *c);

/* True if argv has --help or -h before any "--". */
int cmd_wants_help(int argc, char **argv);

#endif
