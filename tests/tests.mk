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
