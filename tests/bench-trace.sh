#!/usr/bin/env bash
# tests/bench-trace.sh - the tracing benchmarks, each beside the same figure
# for a peer tool, measured in the same run on the same binary.
#
#   1. "ns per traced call": $O/fixtures/O2/bench-fib N (fib(N), default
#      N=30: 2,692,537 noinline calls; tests/fixtures/capture/bench-fib.c),
#      timed untraced, under `propel record`, and under `uftrace record -P .`
#      on the same unmodified binary (uftrace 0.13 patches it at run time with
#      capstone: no -pg, no -finstrument-functions, no --force needed; it
#      skips functions shorter than 5 bytes, fib is not one of them).
#      Median of BENCH_REPS runs (default 5); ns per call =
#      (median traced - median untraced) / calls.
#   1b. the same with every call's arguments and return value: propel's
#      --args against uftrace record -a.
#   2. "a real program": CPython (the pyenv python3.11, which has symbols,
#      or BENCH_PY) running tests/real/py-work.py, end to end including
#      storing the session, propel record against uftrace record patching
#      the interpreter and libpython; median of BENCH_PY_REPS (default 3).
#   3. "attach latency": ms from starting `propel attach PID` to the first
#      record in the session (a ring file /dev/shm/propel/*/PID.*.ring whose
#      first record slot is non-zero) on a generated binary with
#      BENCH_FUNCS (default 5000) functions that loops through all of them;
#      peers: bpftrace attaching a uprobe to one of those functions (ms to
#      its first hit) and gdb -p with a breakpoint (ms to the stop).
#
# Output: one line per figure, "name  propel  peer  ratio" (ratio =
# propel/peer; n/a while propel cannot run).  While `propel record`/`attach`
# are not implemented it says so on one line and still measures the peers.
# Needs uftrace, bpftrace and gdb (tests/install-deps.sh bench); a missing
# peer prints n/a for it.  Takes ~1 min.  Called by `make bench` via
# tests/bench.sh or directly: O=build-x tests/bench-trace.sh
# PROPEL_BENCH_SHORT=1 (tests/e2e/bench-short.sh): one run of each, fib(20),
# 500 functions, the same figures and peers, no goals.  When propel cannot
# record, replay or attach, or a figure of propel's is n/a, it prints
# "bench-trace: ..." and the script exits 1.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
O=${O:-build}
case $O in /*) out=$O ;; *) out=$top/$O ;; esac
PROPEL=${PROPEL:-$out/propel}
short=${PROPEL_BENCH_SHORT:-}
reps=${BENCH_REPS:-${short:+1}}
reps=${reps:-5}
fibn=${BENCH_FIB_N:-${short:+20}}
fibn=${fibn:-30}
nfuncs=${BENCH_FUNCS:-${short:+500}}
nfuncs=${nfuncs:-5000}
rc=0
# pcheck WHAT FIGURE: propel's figure n/a (or empty) is the script's failure
pcheck() {
	[ -n "$2" ] && [ "$2" != n/a ] && return
	echo "bench-trace: $1: no figure"
	rc=1
}
work=$(mktemp -d /dev/shm/propel-bench.XXXXXX)
bigpid=
cleanup() {
	[ -n "$bigpid" ] && kill -9 "$bigpid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

if ! tests/build-fixtures.sh >"$work/build.log" 2>&1; then
	cat "$work/build.log" >&2
	echo "bench-trace: could not build the fixtures" >&2
	exit 1
fi
fib=$out/fixtures/O2/bench-fib

# now_ns: monotonic-enough wall clock in ns.
now_ns() { date +%s%N; }

# median_ms CMD...: run CMD $reps times (output discarded), print the median
# wall time in ms (fractional).
median_ms() {
	local i t0 t1 times=()
	for ((i = 0; i < reps; i++)); do
		rm -rf "$work/run"
		mkdir -p "$work/run"
		t0=$(now_ns)
		"$@" >/dev/null 2>&1
		t1=$(now_ns)
		times+=($(((t1 - t0) / 1000)))
	done
	printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.3f\n", a[int((NR+1)/2)]/1000}'
}

# propel_status: empty when propel record works, else why not.
propel_why=
if [ ! -x "$PROPEL" ]; then
	propel_why="no $PROPEL (make O=$O first)"
else
	"$PROPEL" record -o "$work/probe.db" -- /bin/true >"$work/probe.out" 2>&1
	rc=$?
	if grep -qi 'not implemented' "$work/probe.out"; then
		propel_why="propel record is not implemented yet"
	elif [ $rc -ne 0 ]; then
		propel_why="propel record -- /bin/true exited $rc: $(head -1 "$work/probe.out")"
	fi
fi
[ -n "$propel_why" ] && { echo "propel: not available: $propel_why (propel columns are n/a)"; echo "bench-trace: $propel_why"; rc=1; }

calls=$("$fib" "$fibn" | awk '{print $NF}')
base=$(median_ms "$fib" "$fibn")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf "%.2f\n", a / b }'; }
percall() { awk -v t="$1" -v b="$base" -v c="$calls" 'BEGIN { printf "%.1f\n", (t - b) * 1e6 / c }'; }

p_ns=n/a
if [ -z "$propel_why" ]; then
	t=$(median_ms "$PROPEL" record -o "$work/run/fib.db" -- "$fib" "$fibn")
	p_ns=$(percall "$t")
fi
u_ns=n/a
if command -v uftrace >/dev/null; then
	t=$(median_ms uftrace record -d "$work/run/uftrace.data" -P . "$fib" "$fibn")
	u_ns=$(percall "$t")
fi

# the traced run alone: the program under the agent exactly as propel
# record starts it (LD_PRELOAD + session dir), without storing the session
r_ns=n/a
agent=$(dirname "$PROPEL")/libpropel-agent.so
if [ -z "$propel_why" ] && [ -f "$agent" ]; then
	sd=/dev/shm/propel/bench-$$
	t=$(median_ms env LD_PRELOAD="$agent" PROPEL_SESSION_DIR="$sd" \
		sh -c 'rm -rf "$PROPEL_SESSION_DIR"; mkdir -p "$PROPEL_SESSION_DIR"; exec "$0" "$@"' "$fib" "$fibn")
	rm -rf "$sd"
	r_ns=$(percall "$t")
fi

pcheck "the traced run of fib($fibn)" "$r_ns"
pcheck "propel record of fib($fibn)" "$p_ns"
printf '%-44s %12s %12s %8s\n' name propel peer ratio
printf '%-44s %12s %12s %8s\n' "ns/call fib($fibn) ${calls} calls, untraced ${base}ms" \
	"$r_ns" "$u_ns" "$(ratio "$r_ns" "$u_ns")"
echo "  propel: the traced run (agent recording into its rings), as propel record runs it"
printf '%-44s %12s %12s %8s\n' "ns/call incl. storing the session (sqlite)" \
	"$p_ns" "$u_ns" "$(ratio "$p_ns" "$u_ns")"
echo "  peer: uftrace record -P . (dynamic patching of the same unmodified -O2 binary)"

# --- --args: every call's arguments and return value (uftrace -a) ----------
# The same fib($fibn) with values: the traced run alone as propel record
# --args starts it (the values file "*@args" in the session dir) against
# uftrace record -a -P . (its arguments from the binary's DWARF too).
ra_ns=n/a
if [ -z "$propel_why" ] && [ -f "$agent" ]; then
	sd=/dev/shm/propel/bench-args-$$
	t=$(median_ms env LD_PRELOAD="$agent" PROPEL_SESSION_DIR="$sd" \
		sh -c 'rm -rf "$PROPEL_SESSION_DIR"; mkdir -p "$PROPEL_SESSION_DIR"; echo "*@args" >"$PROPEL_SESSION_DIR/values"; exec "$0" "$@"' "$fib" "$fibn")
	rm -rf "$sd"
	ra_ns=$(percall "$t")
fi
pa_ns=n/a
[ -z "$propel_why" ] &&
	pa_ns=$(percall "$(median_ms "$PROPEL" record --args -o "$work/run/fiba.db" -- "$fib" "$fibn")")
ua_ns=n/a
if command -v uftrace >/dev/null; then
	t=$(median_ms uftrace record -a -d "$work/run/uftrace-a.data" -P . "$fib" "$fibn")
	ua_ns=$(percall "$t")
fi
pcheck "the traced run of fib($fibn) with --args" "$ra_ns"
printf '%-44s %12s %12s %8s\n' "ns/call fib($fibn) with arguments (--args)" \
	"$ra_ns" "$ua_ns" "$(ratio "$ra_ns" "$ua_ns")"
printf '%-44s %12s %12s %8s\n' "ns/call --args incl. storing the session" \
	"$pa_ns" "$ua_ns" "$(ratio "$pa_ns" "$ua_ns")"
echo "  peer: uftrace record -a -P . (fib(n) and its return value from DWARF as well)"

# --- the session store: bytes per event and replay speed -------------------
# One more recording by each tool of the same fib($fibn): propel's session
# file size per event it holds (events = lines of replay --format=jsonl)
# against uftrace's data directory size per record (records = bytes of its
# *.dat files / 16, the size of a uftrace record without arguments); and
# events replayed per second, `propel replay --format=jsonl` against
# `uftrace replay`, each best of 3 (output to /dev/null).
best_s() {
	local i t0 t1 best=
	for i in 1 2 3; do
		t0=$(now_ns)
		"$@" >/dev/null 2>&1
		t1=$(now_ns)
		[ -z "$best" ] || [ $((t1 - t0)) -lt "$best" ] && best=$((t1 - t0))
	done
	awk -v n="$best" 'BEGIN { printf "%.6f\n", n / 1e9 }'
}
mkdir -p "$work/store"
p_bpe=n/a p_rps=n/a p_ev=0
if [ -z "$propel_why" ]; then
	"$PROPEL" record -o "$work/store/fib.db" -- "$fib" "$fibn" >/dev/null 2>&1
	p_ev=$("$PROPEL" replay --format=jsonl "$work/store/fib.db" 2>/dev/null | wc -l)
	if [ "$p_ev" -gt 0 ]; then
		p_bpe=$(awk -v b="$(stat -c %s "$work/store/fib.db")" -v n="$p_ev" 'BEGIN { printf "%.2f\n", b / n }')
		t=$(best_s "$PROPEL" replay --format=jsonl "$work/store/fib.db")
		p_rps=$(awk -v n="$p_ev" -v t="$t" 'BEGIN { printf "%.0f\n", n / t }')
	fi
fi
u_bpe=n/a u_rps=n/a u_ev=0
if command -v uftrace >/dev/null; then
	uftrace record -d "$work/store/uftrace.data" -P . "$fib" "$fibn" >/dev/null 2>&1
	u_dat=$(cat "$work/store/uftrace.data"/*.dat 2>/dev/null | wc -c)
	u_ev=$((u_dat / 16))
	if [ "$u_ev" -gt 0 ]; then
		u_bpe=$(awk -v b="$(du -sb "$work/store/uftrace.data" | cut -f1)" -v n="$u_ev" 'BEGIN { printf "%.2f\n", b / n }')
		t=$(best_s uftrace replay -d "$work/store/uftrace.data")
		u_rps=$(awk -v n="$u_ev" -v t="$t" 'BEGIN { printf "%.0f\n", n / t }')
	fi
fi
pcheck "propel replay of fib($fibn)'s session" "$p_rps"
printf '%-44s %12s %12s %8s\n' "session bytes/event fib($fibn)" \
	"$p_bpe" "$u_bpe" "$(ratio "$p_bpe" "$u_bpe")"
echo "  propel: session file / events ($p_ev); peer: uftrace data dir / records ($u_ev)"
printf '%-44s %12s %12s %8s\n' "replay events/s fib($fibn)" \
	"$p_rps" "$u_rps" "$(ratio "$p_rps" "$u_rps")"
echo "  propel replay --format=jsonl against uftrace replay, best of 3"

# --- a real program: CPython running tests/real/py-work.py ------------------
# End to end, as a user runs each tool: `propel record -o DB` (the run plus
# storing the session in sqlite) against `uftrace record -d DIR` patching
# every function of the interpreter and of libpython (-P . -P .@libpython...),
# the same binary, the same script.  Also shown: how much each recorded.
py=${BENCH_PY:-/root/.pyenv/versions/3.11.7/bin/python3.11}
[ -x "$py" ] || py=$(command -v python3.11 || command -v python3)
pyscript=$top/tests/real/py-work.py
pyargs=${short:+200}
pyreps=${BENCH_PY_REPS:-${short:+1}}
pyreps=${pyreps:-3}
if [ -n "$py" ] && [ -x "$py" ]; then
	uft_pat=(-P .)
	pylib=$(ldd "$py" 2>/dev/null | awk '/libpython/ { print $1; exit }')
	[ -n "$pylib" ] && uft_pat+=(-P ".@$pylib")
	py_base=$(reps=$pyreps median_ms "$py" "$pyscript" $pyargs)
	p_py=n/a p_what=n/a
	if [ -z "$propel_why" ]; then
		p_py=$(reps=$pyreps median_ms timeout 600 "$PROPEL" record -o "$work/run/py.db" -- "$py" "$pyscript" $pyargs)
		if [ -n "$short" ]; then
			# replaying its 8M events takes 20 s: the events stored
			p_what=$(sqlite3 "$work/run/py.db" "SELECT sum(count) FROM chunks" 2>/dev/null)
			[ "${p_what:-0}" -gt 0 ] && p_what="$p_what events" || p_what=
		else
			p_what=$("$PROPEL" replay --format=jsonl "$work/run/py.db" 2>/dev/null |
				python3 "$top/tests/real/trace-stats.py" - | sed -n 's/.*entries=\([0-9]*\) funcs=\([0-9]*\).*/\2 distinct, \1 calls/p')
		fi
	fi
	u_py=n/a u_what=n/a
	if command -v uftrace >/dev/null; then
		u_py=$(reps=$pyreps median_ms timeout 600 uftrace record -d "$work/run/py.uftrace" "${uft_pat[@]}" --force "$py" "$pyscript" $pyargs)
		u_what=$(timeout 120 uftrace report -d "$work/run/py.uftrace" 2>/dev/null |
			awk '$NF != "Function" && $1 !~ /^=/ && NF >= 4 { n++; c += $(NF - 1) } END { printf "%d distinct, %d calls\n", n, c }')
	fi
	pcheck "propel record of $(basename "$py") py-work.py (replayed)" "$p_what"
	printf '%-44s %12s %12s %8s\n' "ms $(basename "$py") py-work.py${pyargs:+ $pyargs}, incl. storing" \
		"$p_py" "$u_py" "$(ratio "$p_py" "$u_py")"
	echo "  untraced ${py_base} ms; recorded: propel $p_what (kept in its rings); uftrace $u_what"
	echo "  peer: uftrace record ${uft_pat[*]} --force (dynamic patching of the same binary), median of $pyreps"
	rm -rf "$work/run"
else
	echo "no python interpreter for the real-program comparison (BENCH_PY)"
fi

# --- attach latency on a large generated binary ---------------------------
big=$out/bench/big-$nfuncs
if [ ! -x "$big" ]; then
	mkdir -p "$out/bench"
	python3 - "$nfuncs" >"$work/big.c" <<'EOF'
import sys
n = int(sys.argv[1])
print("/* generated by tests/bench-trace.sh: %d functions, looped forever */" % n)
print("#include <unistd.h>")
print("volatile unsigned sink;")
for i in range(n):
    print("__attribute__((noinline)) unsigned f_%d(unsigned x) { x = x * %du + %du; "
          "if (x %% 7u == %du) sink += x; return x ^ (x >> %d); }" % (i, 2 * i + 3, i, i % 7, 1 + i % 13))
print("typedef unsigned (*fn)(unsigned);")
print("static fn table[] = {" + ",".join("f_%d" % i for i in range(n)) + "};")
print("int main(void) { unsigned x = 1; for (;;) { for (unsigned i = 0; i < %d; i++) x = table[i](x);"
      " sink = x; usleep(1000); } }" % n)
EOF
	gcc -O1 -g -o "$big" "$work/big.c" || { echo "bench-trace: cannot build $big" >&2; exit 1; }
fi
"$big" &
disown
bigpid=$!
sleep 0.3
probe=f_$((nfuncs / 2))

# first_line_ms PATTERN CMD...: ms from starting CMD until it prints a line
# matching PATTERN (n/a after 30 s); CMD is then stopped.
first_line_ms() {
	python3 - "$@" <<'EOF'
import re, subprocess, sys, time, os, signal
pat = re.compile(sys.argv[1])
t0 = time.monotonic()
p = subprocess.Popen(sys.argv[2:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                     stdin=subprocess.DEVNULL, text=True, start_new_session=True)
res = "n/a"
try:
    for line in p.stdout:
        if pat.search(line):
            res = "%.1f" % ((time.monotonic() - t0) * 1000)
            break
        if time.monotonic() - t0 > 30:
            break
finally:
    try:
        os.killpg(p.pid, signal.SIGINT)
        p.wait(timeout=5)
    except Exception:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
print(res)
EOF
}

# propel_attach_ms: ms from starting propel attach to a first record of $bigpid.
propel_attach_ms() {
	python3 - "$PROPEL" "$bigpid" "$work/run/attach.db" <<'EOF'
import glob, os, subprocess, sys, time
propel, pid, db = sys.argv[1:]
t0 = time.monotonic()
p = subprocess.Popen([propel, "attach", "-o", db, "--duration", "3", pid],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
res = "n/a"
while time.monotonic() - t0 < 30 and res == "n/a":
    for ring in glob.glob("/dev/shm/propel/*/%s.*.ring" % pid):
        try:
            with open(ring, "rb") as f:
                f.seek(4096)
                if any(f.read(16)):
                    res = "%.1f" % ((time.monotonic() - t0) * 1000)
                    break
        except OSError:
            pass
    if p.poll() is not None and res == "n/a":
        break
    time.sleep(0.0005)
try:
    p.wait(timeout=30)
except subprocess.TimeoutExpired:
    p.kill()
print(res)
EOF
}

p_ms=n/a
if [ -z "$propel_why" ]; then
	mkdir -p "$work/run"
	p_ms=$(propel_attach_ms)
fi
b_ms=n/a
if command -v bpftrace >/dev/null; then
	b_ms=$(first_line_ms '^hit' bpftrace -p "$bigpid" -e "uprobe:$big:$probe { printf(\"hit\\n\"); exit(); }")
fi
g_ms=n/a
if command -v gdb >/dev/null; then
	g_ms=$(first_line_ms "^Breakpoint 1, " gdb -nx -p "$bigpid" -batch -ex "break $probe" -ex continue)
fi
pcheck "propel attach latency" "$p_ms"
printf '%-44s %12s %12s %8s\n' "attach latency ms, $nfuncs functions (bpftrace)" "$p_ms" "$b_ms" "$(ratio "$p_ms" "$b_ms")"
printf '%-44s %12s %12s %8s\n' "attach latency ms, $nfuncs functions (gdb)" "$p_ms" "$g_ms" "$(ratio "$p_ms" "$g_ms")"
echo "  peers: bpftrace uprobe on $probe (ms to first hit); gdb -p, break $probe (ms to the stop)"
exit $rc
