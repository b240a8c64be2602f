/*
 * tui/cmd-top.c - `propel top` (and `propel` alone, on a terminal): the
 * live console, the TUI core (tui/tui.c) in its live mode on this node's
 * processes (tui/view-procs.c).
 */
#include "share/log.h"
#include "tui/cmd.h"
#include "tui/tui.h"

static int cmd_top_exec(int argc, char **argv)
{
	if (argc > 1) {
		propel_reportf("top", "%s: takes no arguments (see --help)",
			       argv[1]);
		return 2;
	}
	return tui_live_main();
}

const struct propel_cmd cmd_top_entry = {
	.name = "top",
	.usage = "   (also: propel, with no arguments, on a terminal)",
	.summary =
		"the live console: this node's processes, like top\n"
		"  One line per process: PID, user, threads, CPU% (from /proc,\n"
		"  over the last second), command line; busiest first,\n"
		"  refreshed every second.  Up/Down select, / TEXT filters,\n"
		"  a attaches to the selected process (A: with --follow),\n"
		"  ? help, q quits.  Processes propel may not trace (a kernel\n"
		"  thread, another user's without the rights, propel itself\n"
		"  and its ancestors) are dimmed with the reason.  The status\n"
		"  line says which figures are missing: the kernel's per-\n"
		"  process view (off-CPU, syscalls/s) needs BPF, and is not\n"
		"  shown here yet.",
	.exec = cmd_top_exec,
};
