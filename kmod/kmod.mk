# kmod/: the eBPF vital-sign collector (filled in by the vitals work).
KMOD_SRCS +=
