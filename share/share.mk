# share/: contracts and small common code, libc only.
SHARE_SRCS += $(wildcard share/*.c)
