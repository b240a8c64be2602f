# tests/fuzz/: fuzz targets, one tests/fuzz/fuzz-<name>.c each (defining
# LLVMFuzzerTestOneInput), and their seed corpora tests/fuzz/corpus/<name>/.
#
#   make fuzz [FUZZ_SECONDS=600] [FUZZ=ring,wire]
#       builds every target (or those named) with clang
#       -fsanitize=fuzzer,address,undefined into build/fuzz/ (a make of
#       its own there: every object built again with clang) and runs each
#       for FUZZ_SECONDS, one at a time at nice 10, printing per target
#       the runs, the new coverage and the crashes (tests/fuzz/run.sh).
#   make (test) builds $(O)/tests/fuzz/replay-<name>: the same target with
#       gcc beside tests/fuzz/replay-main.c, which tests/e2e/fuzz-corpus.sh
#       runs on every file of the corpus.
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz-*.c)
FUZZ_NAMES := $(FUZZ_SRCS:tests/fuzz/fuzz-%.c=%)
FUZZ_O ?= build/fuzz
FUZZ_SECONDS ?= 600
FUZZ_CC ?= clang
FUZZ_SAN := -fsanitize=fuzzer-no-link,address,undefined \
	-fno-sanitize-recover=undefined -fno-omit-frame-pointer
comma := ,
FUZZ_RUN := $(if $(FUZZ),$(subst $(comma), ,$(FUZZ)),$(FUZZ_NAMES))

EXTRA_CFLAGS_tests += $(call pc_cflags,libzstd)

# the corpus replay drivers (gcc, the normal build)
$(O)/tests/fuzz/replay-%: $(O)/tests/fuzz/fuzz-%.o $(O)/tests/fuzz/replay-main.o \
		$(UNIT_LIB_OBJS)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(SAN) -o $@ $^ $(PROPEL_LIBS)

ALL_TARGETS += $(FUZZ_NAMES:%=$(O)/tests/fuzz/replay-%)
.SECONDARY: $(FUZZ_NAMES:%=$(O)/tests/fuzz/fuzz-%.o) $(O)/tests/fuzz/replay-main.o

# the libFuzzer binaries (only in the make that `make fuzz` starts)
ifeq ($(FUZZ_BUILD),1)
$(O)/fuzz-%: $(O)/tests/fuzz/fuzz-%.o $(UNIT_LIB_OBJS)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) -fsanitize=fuzzer,address,undefined -o $@ $^ $(PROPEL_LIBS)
endif

fuzz-build:
	@tests/install-deps.sh fuzz
	$(Q)$(MAKE) --no-print-directory O=$(FUZZ_O) CC=$(FUZZ_CC) \
		SAN="$(FUZZ_SAN)" FUZZ_BUILD=1 $(FUZZ_RUN:%=$(FUZZ_O)/fuzz-%)

fuzz: fuzz-build
	@FUZZ_O=$(FUZZ_O) FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh $(FUZZ_RUN)

.PHONY: fuzz fuzz-build
