/*
 * tui/propel.c - main() of the propel binary: find the command in the table
 * and run it.  `propel DB` (an existing file) opens the TUI on it.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "share/log.h"
#include "tui/cmd.h"

static const struct propel_cmd *const cmd_table[] = {
	&cmd_record_entry, &cmd_attach_entry, &cmd_replay_entry,
	&cmd_tui_entry,    &cmd_vitals_entry, &cmd_recover_entry,
	&cmd_detach_entry, &cmd_report_entry, &cmd_export_entry,
};
#define NCMDS (sizeof(cmd_table) / sizeof(cmd_table[0]))

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

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: propel <command> [options]   (propel <command> --help)\n"
		   "       propel DB                  open a session in the TUI\n\n"
		   "commands:\n");
	for (i = 0; i < NCMDS; i++)
		fprintf(f, "  %-8s %s\n", cmd_table[i]->name,
			cmd_table[i]->summary);
	fprintf(f, "\nThe default session file is ./propel.db.\n");
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("propel 0.1\n");
		return 0;
	}
	for (i = 0; i < NCMDS; i++) {
		if (strcmp(argv[1], cmd_table[i]->name) == 0) {
			if (cmd_wants_help(argc - 1, argv + 1)) {
				cmd_usage(cmd_table[i]);
				return 0;
			}
			return cmd_table[i]->exec(argc - 1, argv + 1);
		}
	}
	if (access(argv[1], F_OK) == 0) {
		char *targv[] = { "tui", argv[1], NULL };

		return cmd_tui_entry.exec(2, targv);
	}
	propel_report(argv[1], 0, "unknown command (see propel --help)");
	return 2;
}
