/*
 * tui/cmd-tui.c - `propel tui`: placeholder until its issue lands.
 */
#include "share/log.h"
#include "tui/cmd.h"

static int cmd_tui_exec(int argc, char **argv)
{
	propel_report("tui", 0, "not implemented yet");
	return 1;
}

const struct propel_cmd cmd_tui_entry = {
	.name = "tui",
	.usage = "",
	.summary = "not implemented yet",
	.exec = cmd_tui_exec,
};
