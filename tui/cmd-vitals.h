/*
 * tui/cmd-vitals.h - what `propel vitals` (tui/cmd-vitals.c) shares with its
 * view (tui/view-vitals.c): turning a stored history into the epochs the
 * rules (analysis/vitals-rules.h) read, running them, and the `tui` verb.
 */
#ifndef PROPEL_TUI_CMD_VITALS_H
#define PROPEL_TUI_CMD_VITALS_H

#include <stddef.h>

#include "analysis/vitals-rules.h"
#include "engine/vitals-store.h"

/* Epochs for the rules from a loaded history; 0 or -ENOMEM. */
int cmd_vitals_rules_epochs(const struct vitals_hist *h,
			    struct vitals_rules_epoch **out);
/* Run the rules over a history; *f is malloc'd.  0 or -ENOMEM. */
int cmd_vitals_flags(const struct vitals_hist *h, struct vitals_rules_flag **f,
		     size_t *nf);
/* `propel vitals tui [--live] [DB]` (tui/view-vitals.c). */
int cmd_vitals_tui(int argc, char **argv);

#endif
