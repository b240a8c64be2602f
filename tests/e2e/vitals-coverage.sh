#!/usr/bin/env bash
# tests/e2e/vitals-coverage.sh - coverage of the sketch (chopstix §5.3): a
# generator calls getppid from N call sites (each at its own stack depth,
# so each has its own stack-pointer label), site i about 20000/i^1.2 times
# (heavy tail, the rarest ~20 times).  Coverage = sites with at least one
# sample / N.  Chopstix reports over 99.9%; we measure ~93% (HCA collisions,
# t adapted upward, ring drops while an epoch is written) and require 90%.
. "$(dirname "$0")/../lib.sh"
is_root || { skip vitals-coverage "needs root for BPF"; exit 0; }
command -v python3 >/dev/null || { skip vitals-coverage "python3 missing"; exit 0; }
d=$(tmpdir); trap 'rm -rf "$d"' EXIT
N=${VITALS_COVERAGE_SITES:-300}
gcc -O1 -g -fno-omit-frame-pointer -o "$d/vitals-load" \
	"$PROPEL_TOP/tests/fixtures/vitals/vitals-load.c" -lpthread -lm || exit 1
"$PROPEL" vitals record -o "$d/cov.db" --duration 3 --epoch 1 --disable cpu 2>"$d/rec.err" &
rec=$!
sleep 0.5
"$d/vitals-load" sites "$N" >"$d/sites.txt" &
gen=$!
wait $gen
wait $rec || { fail vitals-coverage "record failed: $(cat "$d/rec.err")"; exit 1; }
grep -q "vitals via bpf" "$d/rec.err" || { skip vitals-coverage "BPF unavailable"; exit 0; }
"$PROPEL" vitals report --format=jsonl --vital syscall "$d/cov.db" >"$d/cov.jsonl"
python3 - "$d" "$N" "$gen" <<'PY'
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
print("PASS vitals-coverage" if cov >= 0.90 else f"FAIL vitals-coverage: {100*cov:.2f}% < 90%")
print("PASS vitals-coverage-count" if events >= total else f"FAIL vitals-coverage-count: {events} < {total}")
PY
# what the sketch saw, for a failing run (sampled, dropped, log2 t per epoch)
command -v sqlite3 >/dev/null && sqlite3 "$d/cov.db" \
	"SELECT '# epoch '||epoch||' events '||events||' sampled '||sampled||' dropped '||dropped||' log2(t) '||tshift FROM vitals_totals WHERE vital='syscall'"
