/*
 * tui/cmd-replay.c - `propel replay`: placeholder until its issue lands.
 */
#include "share/log.h"
#include "tui/cmd.h"

static int cmd_replay_exec(int argc, char **argv)
{
	propel_report("replay", 0, "not implemented yet");
	return 1;
}

const struct propel_cmd cmd_replay_entry = {
	.name = "replay",
	.usage = "",
	.summary = "not implemented yet",
	.exec = cmd_replay_exec,
};
