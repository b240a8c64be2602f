/*
 * tui/propel.c - main() of the propel binary: find the command in the one
 * table (cmd_table[], tui/prompt.c) and run it.  `propel DB` (an existing
 * file) opens the TUI on it; `propel` alone on a terminal opens the live
 * console (`propel top`), and off a terminal prints the usage as before.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "share/log.h"
#include "tui/cmd.h"

int main(int argc, char **argv)
{
	const struct propel_cmd *c;

	if (argc < 2) {
		if (isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)) {
			char *targv[] = { "top", NULL };

			return cmd_top_entry.exec(1, targv);
		}
		cmd_print_usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		cmd_print_usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("propel 0.1\n");
		return 0;
	}
	c = cmd_find(argv[1]);
	if (c && strcmp(argv[1], c->name) == 0 && c->exec) {
		if (cmd_wants_help(argc - 1, argv + 1)) {
			cmd_usage(c);
			return 0;
		}
		return c->exec(argc - 1, argv + 1);
	}
	if (access(argv[1], F_OK) == 0) {
		char *targv[] = { "tui", argv[1], NULL };

		return cmd_tui_entry.exec(2, targv);
	}
	if (c && strcmp(argv[1], c->name) == 0) {
		propel_reportf(argv[1],
			       "a command of the TUI's `:` prompt (propel tui "
			       "DB, then :%s)", c->name);
		return 2;
	}
	propel_report(argv[1], 0, "unknown command (see propel --help)");
	return 2;
}
