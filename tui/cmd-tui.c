/*
 * tui/cmd-tui.c - `propel tui [DB]` (and `propel DB`): read the options and
 * open the TUI core (tui/tui.c) on the session.
 */
#include <string.h>

#include "engine/session.h"
#include "share/log.h"
#include "tui/cmd.h"
#include "tui/tui.h"

static int cmd_tui_exec(int argc, char **argv)
{
	const char *path = PROPEL_SESSION_DEFAULT;
	int i, opt_end = 0;

	for (i = 1; i < argc; i++) {
		if (!opt_end && strcmp(argv[i], "--") == 0)
			opt_end = 1;
		else if (!opt_end && strcmp(argv[i], "--attach") == 0) {
			propel_report("tui", 0,
				      "--attach: record with `propel attach -o "
				      "DB PID`, then open DB");
			return 2;
		} else if (!opt_end && argv[i][0] == '-' && argv[i][1]) {
			propel_report("tui", 0, "unknown option (see --help)");
			return 2;
		} else
			path = argv[i];
	}
	return tui_session_main(path);
}

const struct propel_cmd cmd_tui_entry = {
	.name = "tui",
	.usage = "[DB]   (also: propel DB)",
	.summary = "browse a session: step back and forth through the trace "
		   "(source, call tree, threads)",
	.exec = cmd_tui_exec,
};
