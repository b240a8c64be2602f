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

/* record|attach --start FUNC (tui/cmd-report.c): keep it in the session
 * DB when there is one; ret, or 1 with a line on stderr if it could not. */
int cmd_report_keep_start(const char *verb, const char *db, const char *func,
			  int ret);

/* record|attach --directive SPEC | --directives FILE (engine/directives.h,
 * in tui/cmd-report.c): add to ds (0), or say it in one line (2); once
 * the options are read, the values the agents record (0, or 2); at the
 * end keep them in the session DB and release ds (ret, or 1). */
/* record|attach --timing=exact|sampled (in tui/cmd-report.c): 1 exact, 0
 * sampled, -1 said in one line */
int cmd_report_timing_opt(const char *verb, const char *arg);
/* record|attach --vitals[=all]: 0, or -1 said in one line */
int cmd_report_vitals_opt(const char *verb, const char *arg);
struct directives;
int cmd_report_directive_opt(const char *verb, int file, const char *arg,
			     struct directives *ds);
int cmd_report_directives_ready(const char *verb, struct directives *ds);
int cmd_report_keep_directives(const char *verb, const char *db,
			       struct directives *ds, int ret);

#endif
