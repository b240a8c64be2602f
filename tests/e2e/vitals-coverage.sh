#!/usr/bin/env bash
# tests/e2e/vitals-coverage.sh - coverage of the sketch (chopstix §5.3): a
# generator calls getppid from N call sites (each at its own stack depth,
# so each has its own stack-pointer label), site i about 20000/i^1.2 times
# (heavy tail: N=1000, the rarest 5 times).  Coverage = sites with at least
# one sample / N; chopstix reports over 99.9% and so must we.  Coverage is
# a property of the sketch, not of an idle machine: the test loads the
# machine itself while the generator runs (a spinner per CPU, a syscall
# loop, a shell forking short-lived programs, whose labels crowd the
# sketch and raise t), and waits for the collector to be attached before
# the generator starts.
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 2
need_bpf vitals-coverage
d=$(tmpdir); trap 'rm -rf "$d"' EXIT
N=${VITALS_COVERAGE_SITES:-1000}
gcc -O1 -g -fno-omit-frame-pointer -o "$d/vitals-load" \
	"$PROPEL_TOP/tests/fixtures/vitals/vitals-load.c" -lpthread -lm || exit 1
# the recorder runs until the generator is done, however slow the machine
"$PROPEL" vitals record -o "$d/cov.db" --duration 120 --epoch 1 --disable cpu 2>"$d/rec.err" &
rec=$!
wait_vitals "$d/rec.err" $rec
noise=
for i in $(seq "$(nproc)"); do "$d/vitals-load" spin 3 & noise="$noise $!"; done
"$d/vitals-load" sysloop 3 & noise="$noise $!"
( end=$((SECONDS + 3)); while [ $SECONDS -lt $end ]; do /bin/true; ls / >/dev/null; done ) &
noise="$noise $!"
sleep 0.3
"$d/vitals-load" sites "$N" >"$d/sites.txt" &
gen=$!
wait $gen $noise
sleep 0.2
kill -INT $rec
wait $rec || { fail vitals-coverage "record failed: $(cat "$d/rec.err")"; exit 1; }
grep -q "vitals via bpf" "$d/rec.err" ||
	fail vitals-coverage/bpf "BPF here, but: $(head -1 "$d/rec.err")"
"$PROPEL" vitals report --format=jsonl --vital syscall "$d/cov.db" >"$d/cov.jsonl"
checker vitals-coverage python3 - "$d" "$N" "$gen" <<'PY'
import json, sys
d, n, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sps = set(); events = 0
for l in open(f"{d}/cov.jsonl"):
    o = json.loads(l)
    if o["kind"] == "sample" and o["pid"] == pid and o["data"][0] == 110:
        sps.add(o["data"][2] & ~0xff)
    if o["kind"] == "value" and o["pid"] == pid:
        events += o["value"]
total = sum(int(l.split()[2]) for l in open(f"{d}/sites.txt"))
cov = min(len(sps), n) / n
print(f"# {n} sites, {total} getppid calls, {events:.0f} syscalls counted, "
      f"{len(sps)} sites sampled: coverage {100*cov:.2f}%")
print("PASS vitals-coverage" if cov >= 0.999 else f"FAIL vitals-coverage: {100*cov:.2f}% < 99.9%")
print("PASS vitals-coverage-count" if events >= total else f"FAIL vitals-coverage-count: {events} < {total}")
PY
# what the sketch saw, for a failing run (sampled, dropped, log2 t per epoch)
command -v sqlite3 >/dev/null && sqlite3 "$d/cov.db" \
	"SELECT '# epoch '||epoch||' events '||events||' sampled '||sampled||' dropped '||dropped||' log2(t) '||tshift FROM vitals_totals WHERE vital='syscall'"
