/*
 * tui/cmd-record.c - `propel record`: placeholder until its issue lands.
 */
#include "share/log.h"
#include "tui/cmd.h"

static int cmd_record_exec(int argc, char **argv)
{
	propel_report("record", 0, "not implemented yet");
	return 1;
}

const struct propel_cmd cmd_record_entry = {
	.name = "record",
	.usage = "",
	.summary = "not implemented yet",
	.exec = cmd_record_exec,
};
