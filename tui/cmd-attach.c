/*
 * tui/cmd-attach.c - `propel attach`: placeholder until its issue lands.
 */
#include "share/log.h"
#include "tui/cmd.h"

static int cmd_attach_exec(int argc, char **argv)
{
	propel_report("attach", 0, "not implemented yet");
	return 1;
}

const struct propel_cmd cmd_attach_entry = {
	.name = "attach",
	.usage = "",
	.summary = "not implemented yet",
	.exec = cmd_attach_exec,
};
