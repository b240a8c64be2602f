# kmod/: the eBPF vital-sign collector (kmod/vitals.bpf.c, loader kmod/vitals.c,
# /proc fallback kmod/vitals-proc.c) and the off-CPU tracer that runs beside
# a trace (kmod/offcpu.bpf.c, loader kmod/offcpu.c).
#
#   $(O)/kmod/vmlinux.h      bpftool btf dump of /sys/kernel/btf/vmlinux
#   $(O)/kmod/NAME.bpf.o     clang -target bpf -g -O2
#   $(O)/kmod/NAME.skel.h    bpftool gen skeleton (NAME_bpf)
#
# Where bpftool, clang or the kernel's BTF is missing at build time the
# skeleton is a stub defining NAME_SKEL_MISSING (upper case) (with the reason): propel
# still builds, and the collector runs on its /proc fallback and says why.
KMOD_SRCS += $(wildcard kmod/*.c)
KMOD_SRCS := $(filter-out %.bpf.c,$(KMOD_SRCS))

BPFTOOL ?= bpftool
BPF_CLANG ?= clang
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
KMOD_O := $(O)/kmod

EXTRA_CFLAGS_kmod = -I$(KMOD_O) $(call pc_cflags,libbpf)

$(KMOD_O)/vmlinux.h: | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  BTF     $@")
	$(Q)if command -v $(BPFTOOL) >/dev/null 2>&1 && [ -r $(VMLINUX_BTF) ]; then \
		$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@.tmp && mv $@.tmp $@; \
	else echo '/* no bpftool or no kernel BTF */' > $@; fi

$(KMOD_O)/%.bpf.o: kmod/%.bpf.c kmod/%.h share/kinds.h $(KMOD_O)/vmlinux.h | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "  BPF     $<")
	$(Q)if command -v $(BPF_CLANG) >/dev/null 2>&1 && grep -q 'struct task_struct {' $(KMOD_O)/vmlinux.h; then \
		$(BPF_CLANG) -target bpf -mcpu=v3 -g -O2 -D__TARGET_ARCH_x86 \
			-I$(KMOD_O) -Ikmod -I. $(call pc_cflags,libbpf) -c $< -o $@; \
	else : > $@; fi

$(KMOD_O)/%.skel.h: $(KMOD_O)/%.bpf.o
	$(if $(Q),@echo "  SKEL    $@")
	$(Q)if [ -s $< ] && command -v $(BPFTOOL) >/dev/null 2>&1; then \
		$(BPFTOOL) gen skeleton $< name $*_bpf > $@.tmp && mv $@.tmp $@; \
	else printf '#define %s_SKEL_MISSING "%s"\n' "$$(echo $* | tr a-z A-Z)" \
		"propel was built without bpftool/clang/kernel BTF" > $@; fi

.SECONDARY: $(KMOD_O)/vitals.bpf.o $(KMOD_O)/offcpu.bpf.o

$(O)/kmod/vitals.o: $(KMOD_O)/vitals.skel.h
$(O)/kmod/offcpu.o: $(KMOD_O)/offcpu.skel.h
