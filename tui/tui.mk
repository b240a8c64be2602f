# tui/: the propel binary: command dispatch, commands (cmd-<verb>.c), views.
TUI_SRCS += $(wildcard tui/*.c)

PROPEL_SRCS = $(TUI_SRCS) $(ENGINE_SRCS) $(ANALYSIS_SRCS) $(INJECT_SRCS) \
	$(KMOD_SRCS) $(SHARE_SRCS)
PROPEL_OBJS = $(PROPEL_SRCS:%.c=$(O)/%.o)
PROPEL_LIBS = $(call pc_libs,$(LIBS_PC)) -lstdc++ -lpthread -lm

EXTRA_CFLAGS_tui = $(call pc_cflags,ncursesw readline)
EXTRA_CFLAGS_engine = $(call pc_cflags,libdw sqlite3)

$(O)/propel: $(PROPEL_OBJS)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(SAN) -o $@ $^ $(PROPEL_LIBS)

ALL_TARGETS += $(O)/propel
