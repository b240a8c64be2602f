# inject/: the ptrace hijack (host side, linked into propel and propeld) and
# the agent shared library (inject/agent/, libc + capstone only).
INJECT_SRCS += $(filter-out inject/propeld.c,$(wildcard inject/*.c))

# propeld: the per-host daemon (inject/propeld.c): inject/ and share/ only
# (the ring drain is share/drain.c, as the coordinator's).
PROPELD_OBJS = $(O)/inject/propeld.o \
	$(patsubst %.c,$(O)/%.o,$(filter-out inject/propeld.c,$(wildcard inject/*.c))) \
	$(patsubst %.c,$(O)/%.o,$(wildcard share/*.c))

$(O)/propeld: $(PROPELD_OBJS)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(SAN) -o $@ $^ $(call pc_libs,libdw libelf) -lpthread

ALL_TARGETS += $(O)/propeld

AGENT_SRCS := $(wildcard inject/agent/*.c) $(wildcard inject/agent/*.S)
AGENT_OBJS := $(patsubst %,$(O)/pic/%.o,$(AGENT_SRCS))
AGENT_SO := $(O)/libpropel-agent.so
AGENT_CFLAGS := -fPIC -fvisibility=hidden -fno-omit-frame-pointer \
	-fno-stack-protector $(call pc_cflags,capstone)

$(O)/pic/%.c.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  CC [so] $<")
	$(Q)$(CC) $(CFLAGS_BASE) $(if $(filter $(notdir $*),$(AGENT_NOSAN)),,$(SAN_AGENT)) \
		$(AGENT_CFLAGS) $(CFLAGS) $(AGENT_CFLAGS_$(notdir $*)) -c -o $@ $<

$(O)/pic/%.S.o: %.S | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  AS [so] $<")
	$(Q)$(CC) $(CFLAGS_BASE) $(AGENT_CFLAGS) -c -o $@ $<

$(AGENT_SO): $(AGENT_OBJS)
	$(if $(Q),@echo "  LD      $@")
	$(Q)$(CC) $(SAN_AGENT) -shared -Wl,-z,now -Wl,--no-undefined -o $@ $^ \
		$(call pc_libs,capstone) -ldl -lpthread

# These run between a trampoline and the save of the program's FP/vector
# state: no sanitizer there (a UBSan handler would clobber it).
AGENT_NOSAN := hot callback directive
AGENT_CFLAGS_hot := -mgeneral-regs-only
AGENT_CFLAGS_callback := -mgeneral-regs-only
AGENT_CFLAGS_directive := -mgeneral-regs-only

ALL_TARGETS += $(AGENT_SO)

# The layers (DESIGN.md, STYLE.md "Dependencies point one way"): no file
# under inject/ includes a header of engine/ or tui/ (propeld links
# inject/ and share/ only).  LAYERS_ROOT: the tree to check (the e2e
# suite tests/e2e/layers.sh points it at a bad one too).
LAYERS_ROOT ?= .
check-layers:
	@bad=$$(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](engine|tui)/' \
		--include='*.c' --include='*.h' --include='*.S' $(LAYERS_ROOT)/inject); \
	if [ -n "$$bad" ]; then \
		echo "check-layers: inject/ includes a header of engine/ or tui/:"; \
		echo "$$bad"; exit 1; \
	fi; echo "check-layers: inject/ includes share/ and inject/ only"

.PHONY: check-layers
