#!/usr/bin/env bash
# tests/bench-analysis.sh - `propel report` (issue 10) on big sessions:
#   sessions   1M and 10M events (gen-session's chunked session: three
#              processes, a client whose requests the server receives,
#              matched messages), each of --flows, --suspects,
#              --suspects --by process and --rootcause: wall time and
#              peak RSS (/usr/bin/time)
#   paths      profiles with 100,000 distinct call paths in 8 units
#              (tests/fixtures/report/bench-paths.c, in memory): profile
#              building, scores, root-cause paths
# Goals (issue 10): 10M events in <= 5 s, 100K paths in <= 1 s.  No peer
# tool computes these; the figures stand alone.
# PROPEL_BENCH_SHORT=1 (tests/e2e/bench-short.sh): 100,000 events and
# 10,000 paths, no goals.  A report that fails prints "bench-analysis: ..."
# and the script exits 1.
# Run by `make bench` (tests/bench.sh) or alone: O=build tests/bench-analysis.sh
. "$(dirname "$0")/fixtures/tui/tui-lib.sh"
tui_build || exit 1
short=${PROPEL_BENCH_SHORT:-}
sizes=${PROPEL_BENCH_SIZES:-${short:+100000}}
npaths=${short:+10000}
rc=0
for n in ${sizes:-1000000 10000000}; do
	db=$PROPEL_TOP/$O/tests/big-chunked-$n.db
	if [ ! -s "$db" ] || [ "$PROPEL_TOP/tests/fixtures/tui/gen-session.c" -nt "$db" ]; then
		echo "bench-analysis: generating $n events (chunked) into $db ..."
		rm -f "$db"
		"$TUI_GEN" chunked "$db" "$n" >/dev/null || exit 1
	fi
	cat "$db" >/dev/null
	for mode in "--flows" "--suspects" "--suspects --by process" "--rootcause"; do
		if ! /usr/bin/time -o "$db.time" -f '%e %M' "$PROPEL" report $mode "$db" >/dev/null 2>"$db.err" ||
			! grep -q '^[0-9.]* [0-9]*$' "$db.time"; then
			echo "bench-analysis: report $mode on $n events: $(grep -v '^Command exited' "$db.err" | head -2 | tr '\n' ' ')$(tail -1 "$db.time")"
			rc=1
			continue
		fi
		out=$(tail -1 "$db.time")
		printf 'report %-24s %9d events: %6.2f s, %5d MB\n' "$mode" "$n" \
			"${out% *}" $(( ${out#* } / 1024 ))
	done
done
bp=$PROPEL_TOP/$O/tests/bench-paths
(cd "$PROPEL_TOP" && ${CC:-cc} -O2 -D_GNU_SOURCE -I. -o "$bp" tests/fixtures/report/bench-paths.c \
	analysis/*.c share/log.c share/kinds.c -lm) || exit 1
set -o pipefail
"$bp" "${npaths:-100000}" 8 | sed 's/^/paths: /' || { echo "bench-analysis: bench-paths failed"; rc=1; }
rm -f "$PROPEL_TOP/$O"/tests/big-chunked-*.db.time "$PROPEL_TOP/$O"/tests/big-chunked-*.db.err
exit $rc
