#!/usr/bin/env bash
# tests/real/redis-debug.sh [CACHE] - a Debian redis-server binary together
# with its exact debug info, obtained without Debian's debug archive (which
# this machine cannot reach).  Prints the path of the binary on stdout (exit
# 0: CACHE/redis-server-VER/root/usr/bin/redis-server, Debian's symlink to
# redis-check-rdb, which runs as the server by that name), or why not on
# stderr (exit 1: the caller falls back to the installed redis-server).
#
# Why: Debian's redis-server is stripped; its static functions (9-16 of the
# 125-250 a redis-benchmark load runs: connSocketRead, connSocketWrite,
# connSocketEventHandler, aeProcessEvents.part.0, addReply.part.0, ...) are
# absent from .dynsym and show as redis-check-rdb+0xOFFSET.
# redis-tools-dbgsym is not reachable here, but Debian builds redis
# reproducibly: tests/real/debug-rebuild.sh rebuilds the source package in
# /build/reproducible-path/redis-VER, checks that redis-check-rdb is
# byte-identical to Debian's, and installs the debug file (and the dwz file
# it refers to) under /usr/lib/debug.  Result cached in CACHE (default
# /var/cache/propel-tests): 2-3 min the first time, no time after.
#
# The binary records neither its build path nor its OpenSSL version (the
# build path does not matter: -ffile-prefix-map removes it everywhere).  Its
# debug info refers to headers of libc6-dev, libssl-dev, libsystemd-dev,
# libjemalloc-dev and gcc; line numbers there reach the build id (code and
# data are the same either way).  Of those, the archive holds differing
# versions of libc6-dev (the system's, the newest, is right; deb12u7's gives
# another build id) and libssl-dev: 5:7.0.15-1~deb12u10 is byte-identical
# only against 3.0.22's headers, not 3.0.17's or 3.0.19/3.0.20's (types.h
# gained lines).  So the libssl-dev versions in the archive are tried newest
# first (a buildd builds against the newest of its day).
exec "$(dirname "$0")/debug-rebuild.sh" --headers libssl-dev redis-server,redis-tools usr/bin/redis-server "$@"
