# analysis/: pure functions over in-memory events.
ANALYSIS_SRCS += $(wildcard analysis/*.c)
