/*
 * tui/view-vitals.c - placeholder entry of `propel vitals tui` until the
 * view lands (replaced below in the same work).
 */
#include "share/log.h"
#include "tui/cmd-vitals.h"

int cmd_vitals_tui(int argc, char **argv)
{
	propel_report("vitals tui", 0, "not implemented yet");
	return 1;
}
