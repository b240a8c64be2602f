# tests/: unit tests (tests/unit/*.c, each a program), fixtures, end-to-end.
UNIT_SRCS := $(wildcard tests/unit/*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(O)/tests/unit/%)
UNIT_LIB_OBJS = $(filter-out $(O)/tui/propel.o,$(PROPEL_OBJS))

$(O)/tests/unit/%: $(O)/tests/unit/%.o $(UNIT_LIB_OBJS)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(SAN) -o $@ $^ $(PROPEL_LIBS)

EXTRA_CFLAGS_tests = $(call pc_cflags,ncursesw readline libdw sqlite3)

ALL_TARGETS += $(UNIT_BINS)
.SECONDARY: $(UNIT_BINS:%=%.o)

# The distributed scenario programs (tests/apps/dist-*.c, tests/apps/dist.h):
# plain -O2 -g builds, run untraced, recorded and attached by the tests and
# by tests/apps/dist-run.sh.
DIST_SRCS := $(wildcard tests/apps/dist-*.c)
DIST_BINS := $(DIST_SRCS:tests/apps/%.c=$(O)/apps/%)

$(O)/apps/dist-%: tests/apps/dist-%.c tests/apps/dist.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC      $@")
	$(Q)$(CC) -O2 -g -Wall -Wextra -D_GNU_SOURCE -I. -o $@ $<

ALL_TARGETS += $(DIST_BINS)

# The batch system (tests/apps/batch-*.c, tests/apps/batch.h), shaped like
# the Condor case of the self-propelled paper: started by
# tests/apps/batch-run.sh, recorded by tests/e2e/condor.sh and make demo.
BATCH_SRCS := $(wildcard tests/apps/batch-*.c)
BATCH_BINS := $(BATCH_SRCS:tests/apps/%.c=$(O)/apps/%)

$(O)/apps/batch-%: tests/apps/batch-%.c tests/apps/batch.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC      $@")
	$(Q)$(CC) -O2 -g -Wall -Wextra -D_GNU_SOURCE -I. -o $@ $<

ALL_TARGETS += $(BATCH_BINS)

# The three-tier stack's backend (tests/apps/tier-*.c): behind Debian's
# nginx, in front of redis-server; tests/e2e/three-tier.sh.
TIER_SRCS := $(wildcard tests/apps/tier-*.c)
TIER_BINS := $(TIER_SRCS:tests/apps/%.c=$(O)/apps/%)

$(O)/apps/tier-%: tests/apps/tier-%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC      $@")
	$(Q)$(CC) -O2 -g -Wall -Wextra -D_GNU_SOURCE -I. -o $@ $<

ALL_TARGETS += $(TIER_BINS)
