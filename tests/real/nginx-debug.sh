#!/usr/bin/env bash
# tests/real/nginx-debug.sh [CACHE] - a Debian nginx binary together with its
# exact debug info, obtained without Debian's debug archive (which this
# machine cannot reach).  Prints the path of the binary on stdout (exit 0), or
# why not on stderr (exit 1: the caller falls back to the installed nginx,
# whose static functions then have no names).
#
# Why: Debian's nginx is stripped and the request path's functions
# (ngx_http_process_request_line, ngx_http_static_handler, ...) are static,
# absent from .dynsym: only debug info names them.  nginx-dbgsym lives in the
# debian-debug archive and on debuginfod.debian.net, neither reachable here.
# But Debian builds nginx reproducibly: rebuilding its source package in the
# recorded build path (/build/reproducible-path/nginx-VER, from `nginx -V`)
# with the OpenSSL headers of the version the binary says it was built with
# ("built with OpenSSL 3.0.20") gives a byte-identical binary.
# tests/real/debug-rebuild.sh does that (for the newest version whose source
# package can be fetched), checks byte identity, installs the debug file into
# /usr/lib/debug/.build-id and keeps the result in CACHE (default
# /var/cache/propel-tests): 1-3 min the first time, no time after.
exec "$(dirname "$0")/debug-rebuild.sh" --headers 'libssl-dev=^built with OpenSSL ([0-9.]+) ' \
	nginx usr/sbin/nginx "$@"
