/*
 * tui/cmd-top.c - `propel top` (and `propel` alone, on a terminal): the
 * live console, the TUI core (tui/tui.c) in its live mode on this node's
 * processes (tui/view-procs.c); `a`/`A` attach from there (tui/live.c).
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
		"  a attaches to the selected process (A: with --follow):\n"
		"  its flows as they complete, ranked by suspect score, and\n"
		"  the events so far; the session goes to a new file here,\n"
		"  propel-PID-DATE.db, messages to propel-PID-DATE.log.  x\n"
		"  stops (agents detached, session stored) and opens it on\n"
		"  the most suspicious flow; q (or a hang-up) detaches and\n"
		"  keeps it.  ? help, q quits.  Processes propel may not trace\n"
		"  (a kernel thread, another user's without the rights, propel\n"
		"  itself and its ancestors) are dimmed with the reason.  The status\n"
		"  line says which figures are missing: the kernel's per-\n"
		"  process view (off-CPU, syscalls/s) needs BPF, and is not\n"
		"  shown here yet.",
	.exec = cmd_top_exec,
};
