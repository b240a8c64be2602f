# shellcheck shell=bash
# tests/real/servers.sh - the real servers that tests/e2e/real-software.sh,
# tests/e2e/follow-real.sh and tests/bench-real.sh attach to or follow into:
# Debian's nginx (one worker), redis-server and sshd, each on 127.0.0.1 at a
# free high port, with its own config, data and logs in a directory the
# caller owns, and the load generators that drive them (wrk,
# redis-benchmark).  Source it after tests/lib.sh.
#
#   nginx_start DIR      sets NGINX_PORT NGINX_MASTER NGINX_WORKER; serves
#                        DIR/www: index.html (4 KiB, the wrk target) and
#                        blob.bin (1 MiB of random bytes, for integrity)
#   nginx_run DIR        nginx on DIR/nginx.conf of the caller's, waited for
#   nginx_stop           QUIT, then KILL after 5 s
#   redis_start DIR      sets REDIS_PORT REDIS_PID (no persistence)
#   redis_stop
#   sshd_setup DIR       sets SSHD_PORT; writes DIR (mode 700): an sshd
#                        config for /usr/sbin/sshd -f DIR/sshd.conf (its own
#                        ecdsa host key, DIR/sshd.pid, internal-sftp, root
#                        by key only), DIR/ssh_config for ssh -F and sftp -F
#                        (the key DIR/id, libcrypto's ecdh-sha2-nistp256 and
#                        aes128-gcm: ssh's own curve25519 is 24M traced
#                        calls), DIR/data (300,000 random bytes) and
#                        DIR/batch (an sftp batch that gets it as DIR/got)
#   real_cleanup         stops both and every load generator still running
#   wrk_run SECS OUT     wrk on index.html for SECS s; OUT gets its report
#                        and the propel-wrk line (tests/real/wrk-report.lua)
#   wrk_field OUT KEY    a field of that line (requests, rps, connect, ...)
#   wrk_errors OUT       non-2xx responses + socket errors (empty: no line)
#   redis_info KEY       a field of INFO (total_commands_processed, ...)
#   redis_bench_start OUT  redis-benchmark in a loop (SET, GET, INCR, LPUSH,
#                        RPOP, HSET, MSET, 2,000 requests each: the mix is the
#                        same in any window of a second or more) until
#                        redis_bench_stop; it exits at the first error
#   redis_bench_errors OUT lines of OUT that report an error
#   REAL_LOAD_NICE       the nice of the background loads (redis_bench_start,
#                        wrk_bg_start; default 0).  A check of stability
#                        under load (the soaks, attach/detach cycles) sets
#                        19: the load takes every cycle the machine has
#                        spare, and none from propel or from the suites
#                        beside it (at 0 the soaks' load generators and
#                        servers took 3/4 of their CPU).  A throughput
#                        figure is measured at 0.
#   now_ns               wall clock, ns
#
# NGINX_BIN and REDIS_BIN name the servers' binaries (default /usr/sbin/nginx,
# /usr/bin/redis-server); the callers set them before nginx_start and
# redis_start to the Debian binaries tests/real/nginx-debug.sh and
# tests/real/redis-debug.sh print, whose debug info is installed.
#
# Every server and load generator is started by this file and stopped by
# real_cleanup (call it from the caller's EXIT trap), never by name.
: "${NGINX_BIN:=/usr/sbin/nginx}"
: "${REDIS_BIN:=/usr/bin/redis-server}"
REAL_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NGINX_MASTER="" NGINX_WORKER="" NGINX_PORT="" NGINX_DIR=""
REDIS_PID="" REDIS_PORT=""
REDIS_BENCH_PID=
WRK_BG_PID=

now_ns() { date +%s%N; }

# real_port: a TCP port on 127.0.0.1 that is free now (free_port of
# tests/lib.sh: below the ephemeral range, where the load generators'
# connections cannot take it before the server binds it)
real_port() { free_port 1; }

# real_wait_port PORT: wait (at most 10 s) until 127.0.0.1:PORT accepts.
real_wait_port() {
	python3 - "$1" <<'EOF'
import socket, sys, time
end = time.monotonic() + 10
while time.monotonic() < end:
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.5).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.05)
sys.exit(1)
EOF
}

# nginx_conf_head DIR: the start of a test nginx's configuration, one
# worker, its pid file, error log and temporary paths under DIR (DIR/tmp
# made by the caller), up to the open "http {" with the lines every test
# server has; the caller writes the rest of http and closes it
nginx_conf_head() {
	cat <<EOF
worker_processes 1;
daemon on;
master_process on;
pid $1/nginx.pid;
error_log $1/error.log notice;
$(is_root && echo "user root root;")
events { worker_connections 1024; }
http {
	client_body_temp_path $1/tmp/body;
	proxy_temp_path $1/tmp/proxy;
	fastcgi_temp_path $1/tmp/fastcgi;
	uwsgi_temp_path $1/tmp/uwsgi;
	scgi_temp_path $1/tmp/scgi;
	keepalive_requests 1000000;
EOF
}

nginx_start() {
	local d=$1 i
	NGINX_DIR=$d
	mkdir -p "$d/www" "$d/tmp"
	chmod 755 "$d" "$d/www"
	head -c 4096 /dev/zero | tr '\0' 'p' >"$d/www/index.html"
	head -c 1048576 /dev/urandom >"$d/www/blob.bin"
	chmod 644 "$d/www/"*
	NGINX_PORT=$(real_port)
	{
		nginx_conf_head "$d"
		cat <<EOF
	access_log off;
	server {
		listen 127.0.0.1:$NGINX_PORT;
		root $d/www;
		location = /status { stub_status; }
	}
}
EOF
	} >"$d/nginx.conf"
	nginx_run "$d"
}

# nginx_run DIR: nginx on DIR/nginx.conf (pid DIR/nginx.pid, log
# DIR/error.log, listening on NGINX_PORT), waited for: sets NGINX_MASTER,
# NGINX_WORKER (tests/e2e/three-tier.sh writes a config of its own)
nginx_run() {
	local d=$1 i
	NGINX_DIR=$d
	"$NGINX_BIN" -p "$d" -c "$d/nginx.conf" -e "$d/error.log" >"$d/start.log" 2>&1 || {
		echo "nginx_start: $(tail -n 2 "$d/start.log" "$d/error.log" 2>/dev/null)" >&2
		return 1
	}
	for ((i = 0; i < 100; i++)); do
		NGINX_MASTER=$(cat "$d/nginx.pid" 2>/dev/null)
		[ -n "$NGINX_MASTER" ] && NGINX_WORKER=$(pgrep -P "$NGINX_MASTER" | head -1)
		[ -n "$NGINX_WORKER" ] && break
		sleep 0.05
	done
	[ -n "$NGINX_WORKER" ] && real_wait_port "$NGINX_PORT" || {
		echo "nginx_start: no worker on port $NGINX_PORT: $(tail -n 2 "$d/error.log")" >&2
		return 1
	}
}

nginx_stop() {
	local i
	[ -n "$NGINX_MASTER" ] || return 0
	kill -QUIT "$NGINX_MASTER" 2>/dev/null
	for ((i = 0; i < 100; i++)); do
		running "$NGINX_MASTER" || break
		sleep 0.05
	done
	kill -9 "$NGINX_MASTER" ${NGINX_WORKER:+"$NGINX_WORKER"} 2>/dev/null
	NGINX_MASTER="" NGINX_WORKER=""
}

# nginx_get PATH OUT: fetch http://127.0.0.1:$NGINX_PORT/PATH into OUT
# (status must be 200).
nginx_get() {
	python3 - "http://127.0.0.1:$NGINX_PORT/$1" "$2" <<'EOF'
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=10) as r:
    if r.status != 200:
        sys.exit(1)
    open(sys.argv[2], "wb").write(r.read())
EOF
}

# nginx_signals: lines of the error log that tell of a worker's death.
nginx_signals() {
	grep -E 'exited on signal|exited with code|worker process [0-9]+ exited' "$NGINX_DIR/error.log" 2>/dev/null
}

# A port free when chosen may be taken before redis binds it (by a suite
# beside this one: fcr2's three-tier found 32512 in use): then another
# port, up to 3 (the race of choosing a port, not a product's failure).
redis_start() {
	local d=$1 i try
	mkdir -p "$d"
	for try in 1 2 3; do
		REDIS_PORT=$(real_port)
		: >"$d/redis.log"
		"$REDIS_BIN" --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
			--dir "$d" --daemonize no --logfile "$d/redis.log" --protected-mode yes \
			--io-threads 1 </dev/null >/dev/null 2>&1 &
		REDIS_PID=$!
		for ((i = 0; i < 200; i++)); do
			[ "$(redis-cli -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ] && return 0
			kill -0 "$REDIS_PID" 2>/dev/null || break
			sleep 0.05
		done
		grep -q "Address already in use" "$d/redis.log" || break
		wait "$REDIS_PID" 2>/dev/null
		echo "redis_start: port $REDIS_PORT taken meanwhile, another" >&2
	done
	echo "redis_start: not answering on $REDIS_PORT: $(tail -n 2 "$d/redis.log")" >&2
	return 1
}

redis_stop() {
	[ -n "$REDIS_PID" ] || return 0
	kill "$REDIS_PID" 2>/dev/null
	for ((i = 0; i < 100; i++)); do
		running "$REDIS_PID" || break
		sleep 0.05
	done
	kill -9 "$REDIS_PID" 2>/dev/null
	wait "$REDIS_PID" 2>/dev/null
	REDIS_PID=
}

redis_info() {
	redis-cli -p "$REDIS_PORT" info all 2>/dev/null | tr -d '\r' | awk -F: -v k="$1" '$1 == k { print $2; exit }'
}

# redis_bench_start OUT: load until redis_bench_stop.  -n bounds each pass
# of the loop; timeout bounds the whole (10 min).  redis-benchmark 7 exits
# at the first error reply or connection error (and says so in OUT).
redis_bench_start() {
	timeout -k 5 600 nice -n "${REAL_LOAD_NICE:-0}" redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -c 16 -n 2000 -r 10000 \
		-q -l -t set,get,incr,lpush,rpop,hset,mset >"$1" 2>&1 &
	REDIS_BENCH_PID=$!
}

# redis_bench_stop: stop the load; status 1 if it had already ended (it
# ends by itself only on a connection error).
redis_bench_stop() {
	local alive=0
	[ -n "$REDIS_BENCH_PID" ] || return 1
	kill -0 "$REDIS_BENCH_PID" 2>/dev/null && alive=1
	kill "$REDIS_BENCH_PID" 2>/dev/null
	wait "$REDIS_BENCH_PID" 2>/dev/null
	REDIS_BENCH_PID=
	[ $alive -eq 1 ]
}

redis_bench_errors() {
	tr '\r' '\n' <"$1" | grep -iE 'error|reset|refused|broken|timeout|closed'
}

# wrk_run SECS OUT [PATH]: 1 thread, 16 connections, keep-alive.
wrk_run() {
	timeout -k 5 $(($1 + 30)) wrk -t1 -c16 -d"$1"s --timeout 2s -s "$REAL_DIR/wrk-report.lua" \
		"http://127.0.0.1:$NGINX_PORT/${3:-index.html}" >"$2" 2>&1
}

# wrk_bg_start OUT SECS: wrk in the background for at most SECS s;
# wrk_bg_stop stops it early (SIGINT: wrk still prints its report).
wrk_bg_start() {
	timeout -k 5 $(($2 + 30)) nice -n "${REAL_LOAD_NICE:-0}" wrk -t1 -c16 -d"$2"s --timeout 2s -s "$REAL_DIR/wrk-report.lua" \
		"http://127.0.0.1:$NGINX_PORT/index.html" >"$1" 2>&1 &
	WRK_BG_PID=$!
}

wrk_bg_stop() {
	local i
	[ -n "$WRK_BG_PID" ] || return 0
	kill -INT "$WRK_BG_PID" 2>/dev/null # timeout passes it on to wrk
	for ((i = 0; i < 100; i++)); do
		kill -0 "$WRK_BG_PID" 2>/dev/null || break
		sleep 0.05
	done
	kill "$WRK_BG_PID" 2>/dev/null
	wait "$WRK_BG_PID" 2>/dev/null
	WRK_BG_PID=
}

wrk_field() {
	sed -n 's/^propel-wrk .*\b'"$2"'=\([0-9.]*\).*/\1/p' "$1" | tail -1
}

wrk_errors() {
	awk '/^propel-wrk / { n = 0; for (i = 2; i <= NF; i++) { split($i, kv, "=");
		if (kv[1] ~ /^(connect|read|write|status|timeout)$/) n += kv[2] } print n }' "$1" | tail -1
}

sshd_setup() {
	local d=$1
	mkdir -p "$d" /run/sshd
	chmod 700 "$d"
	ssh-keygen -q -t ecdsa -b 256 -N '' -f "$d/hostkey" </dev/null >/dev/null
	ssh-keygen -q -t ecdsa -b 256 -N '' -f "$d/id" </dev/null >/dev/null
	cp "$d/id.pub" "$d/authorized_keys"
	head -c 300000 /dev/urandom >"$d/data"
	SSHD_PORT=$(real_port)
	cat >"$d/sshd.conf" <<EOT
ListenAddress 127.0.0.1:$SSHD_PORT
HostKey $d/hostkey
AuthorizedKeysFile $d/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile $d/sshd.pid
UseDNS no
Subsystem sftp internal-sftp
EOT
	cat >"$d/ssh_config" <<EOT
Host *
	User root
	Port $SSHD_PORT
	IdentityFile $d/id
	IdentitiesOnly yes
	UserKnownHostsFile /dev/null
	StrictHostKeyChecking no
	LogLevel ERROR
	KexAlgorithms ecdh-sha2-nistp256
	HostKeyAlgorithms ecdsa-sha2-nistp256
	Ciphers aes128-gcm@openssh.com
EOT
	echo "get $d/data $d/got" >"$d/batch"
}

real_cleanup() {
	wrk_bg_stop
	[ -n "$REDIS_BENCH_PID" ] && { kill "$REDIS_BENCH_PID" 2>/dev/null; wait "$REDIS_BENCH_PID" 2>/dev/null; }
	REDIS_BENCH_PID=
	nginx_stop
	redis_stop
}
