/*
 * tui/cmd-vitals.c - `propel vitals`: placeholder until its issue lands.
 */
#include "share/log.h"
#include "tui/cmd.h"

static int cmd_vitals_exec(int argc, char **argv)
{
	propel_report("vitals", 0, "not implemented yet");
	return 1;
}

const struct propel_cmd cmd_vitals_entry = {
	.name = "vitals",
	.usage = "",
	.summary = "not implemented yet",
	.exec = cmd_vitals_exec,
};
