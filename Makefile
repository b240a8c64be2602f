# propel - one GNU Makefile; each folder adds its sources in <folder>/<folder>.mk.
#
#   make            build everything into build/
#   make demo       record the bundled batch system with a fault, open its suspects
#   make test       run every test; ends with "N passed, N failed, N skipped";
#                   T=PATTERN some only, J=N cores for the suites (default: the
#                   number of cores; tests/run.sh)
#   make bench      benchmarks, each beside the same figure for uftrace/perf
#   make fmt        clang-format the sources
#   make asan       build with ASan+UBSan into build-asan/, run the unit
#                   tests and the capture/replay/report suites there
#   make fuzz       build the fuzz targets (tests/fuzz/) with clang and run
#                   each FUZZ_SECONDS (600); FUZZ=ring,wire for some only
#   V=1 (verbose), DEVELOPER=1 (-Werror), ASAN=1 (sanitizers)

.DEFAULT_GOAL := all
SHELL := /bin/bash
# build on every core (a fresh clone's `make test` compiled one file at a
# time: 36 s of its run); a -jN on the command line wins
NPROC := $(shell nproc 2>/dev/null || echo 1)
MAKEFLAGS += -j$(NPROC)

O ?= build
CC ?= gcc
PKG_CONFIG ?= pkg-config
LIBS_PC := ncursesw libdw libelf capstone readline sqlite3 libbpf

# Install what the build needs, once (idempotent; sudo when not root).
DEPS_STAMP := $(O)/.deps-ok
$(DEPS_STAMP):
	@mkdir -p $(O)
	@tests/install-deps.sh build
	@touch $@

ifeq ($(V),1)
Q :=
else
Q := @
endif

CFLAGS_BASE := -D_GNU_SOURCE -std=gnu11 -O2 -g -Wall -Wextra -Wno-unused-parameter \
	-Wno-missing-field-initializers -fno-strict-aliasing -I. -MMD -MP
ifeq ($(DEVELOPER),1)
CFLAGS_BASE += -Werror
endif
# ASAN=1: propel, propeld, the unit tests with ASan+UBSan; the agent .so
# (it lives in foreign processes, where ASan's runtime cannot be loaded
# late) with UBSan only, but for its -mgeneral-regs-only files (AGENT_NOSAN
# in inject/inject.mk).  `make asan` builds so into build-asan/ and runs
# the suites ASAN_SUITES names there.
ifeq ($(ASAN),1)
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer
SAN_AGENT := -fsanitize=undefined -fno-omit-frame-pointer
endif

pc_cflags = $(shell $(PKG_CONFIG) --cflags $(1) 2>/dev/null)
pc_libs = $(shell $(PKG_CONFIG) --libs $(1) 2>/dev/null)

# Sources, filled in by the fragments.
SHARE_SRCS :=
ENGINE_SRCS :=
ANALYSIS_SRCS :=
INJECT_SRCS :=
KMOD_SRCS :=
TUI_SRCS :=
AGENT_SRCS :=
TEST_TARGETS :=
ALL_TARGETS :=

include share/share.mk
include inject/inject.mk
include kmod/kmod.mk
include engine/engine.mk
include analysis/analysis.mk
include tui/tui.mk
include tests/tests.mk
include tests/fuzz/fuzz.mk

all: $(DEPS_STAMP) $(ALL_TARGETS)

$(O)/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS_BASE) $(SAN) $(EXTRA_CFLAGS_$(firstword $(subst /, ,$<))) $(CFLAGS) -c -o $@ $<

$(O)/%.o: %.S | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  AS      $<")
	$(Q)$(CC) $(CFLAGS_BASE) $(CFLAGS) -c -o $@ $<

demo: all
	@O=$(O) tests/demo.sh

J ?= $(NPROC)
test: all
	@O=$(O) tests/run.sh -j $(J) $(T)

# any sanitizer report fails the suite that made it (ASan's, UBSan's
# halt_on_error; LeakSanitizer's at the process's exit)
ASAN_DIR ?= build-asan
ASAN_SUITES ?= unit/ e2e/capture e2e/replay e2e/report e2e/recover \
	e2e/drain e2e/export e2e/directives e2e/lifecycle e2e/golden \
	e2e/symbols e2e/comm e2e/fuzz-corpus
asan:
	$(Q)$(MAKE) --no-print-directory O=$(ASAN_DIR) ASAN=1 all
	@O=$(ASAN_DIR) tests/build-fixtures.sh
	@O=$(ASAN_DIR) \
	ASAN_OPTIONS=halt_on_error=1:abort_on_error=0:detect_leaks=1:exitcode=23 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	tests/run.sh $(ASAN_SUITES)

bench: all
	@O=$(O) tests/bench.sh

# deliberate bugs, one at a time, in a copy of the tree: each must make one
# of its declared suites fail (tests/mutants/run.sh; M= names some)
test-mutants: all
	@O=$(O) tests/mutants/run.sh $(M)

fmt:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(O)

.PHONY: all demo test asan bench test-mutants fmt clean

-include $(shell find $(O) -name '*.d' 2>/dev/null)
