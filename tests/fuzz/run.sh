#!/usr/bin/env bash
# tests/fuzz/run.sh NAME... - run each libFuzzer target $FUZZ_O/fuzz-NAME
# (built by `make fuzz`) for $FUZZ_SECONDS, one after the other, at nice
# 10 and one worker: the committed seeds tests/fuzz/corpus/NAME/ are read,
# what the run finds goes to $FUZZ_O/corpus/NAME/ (the committed corpus is
# left as it is), a crash, leak, timeout (-timeout=20 s) or out-of-memory
# input to $FUZZ_O/crash-NAME-{crash,leak,timeout,oom}-*.
# Prints per target: seconds, runs executed, new coverage (units added to
# the corpus, and the edges covered), crashes; exits 1 when any crashed.
cd "$(dirname "$0")/../.." || exit 1
: "${FUZZ_O:=build/fuzz}" "${FUZZ_SECONDS:=600}"
bad=0
printf '%-12s %8s %12s %10s %8s %8s\n' target seconds runs new-units edges crashes
for name in "$@"; do
	bin=$FUZZ_O/fuzz-$name seeds=tests/fuzz/corpus/$name work=$FUZZ_O/corpus/$name
	log=$FUZZ_O/fuzz-$name.log
	if ! [ -x "$bin" ] || ! [ -d "$seeds" ]; then
		echo "FAIL fuzz/$name: no $bin or no $seeds"
		bad=1
		continue
	fi
	mkdir -p "$work"
	rm -f "$FUZZ_O"/crash-"$name"-*
	t0=$EPOCHSECONDS
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
		nice -n 10 "$bin" -max_total_time="$FUZZ_SECONDS" -timeout=20 \
		-rss_limit_mb=2048 -close_fd_mask=3 -print_final_stats=1 \
		-artifact_prefix="$FUZZ_O/crash-$name-" "$work" "$seeds" >"$log" 2>&1
	rc=$?
	took=$((EPOCHSECONDS - t0))
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	units=$(sed -n 's/^stat::new_units_added: *//p' "$log" | tail -1)
	edges=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	# (crash-NAME-slow-unit-*: an input over 10 s, said but not failed)
	crashes=$(find "$FUZZ_O" -maxdepth 1 -regex ".*/crash-$name-\(crash\|leak\|timeout\|oom\)-.*" | wc -l)
	printf '%-12s %8s %12s %10s %8s %8s\n' "$name" "$took" "${runs:-?}" \
		"${units:-?}" "${edges:-?}" "$crashes"
	if [ "$rc" -ne 0 ] || [ "$crashes" -gt 0 ]; then
		bad=1
		echo "  fuzz-$name exited $rc; its log: $log"
		grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -5 | sed 's/^/  /'
		find "$FUZZ_O" -maxdepth 1 -regex ".*/crash-$name-\(crash\|leak\|timeout\|oom\)-.*" |
			sed 's/^/  input: /'
	fi
done
exit $bad
