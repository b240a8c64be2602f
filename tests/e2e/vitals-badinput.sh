#!/usr/bin/env bash
# tests/e2e/vitals-badinput.sh - the collector runs with what it has and
# says what is missing: not root, BPF refused (root without CAP_BPF/
# CAP_SYS_ADMIN), tracefs not mounted (private mount namespace), a
# tracepoint missing (PROPEL_VITALS_FAKE_MISSING makes the BTF lookup miss,
# the real one is present here), and bad arguments / empty sessions.
. "$(dirname "$0")/../lib.sh"
set -uo pipefail
expect_checks 10
d=$(tmpdir); chmod 777 "$d"; trap 'rm -rf "$d"' EXIT

"$PROPEL" vitals report "$d/none.db" 2>"$d/e" && fail vitals-report-missing "exit 0" ||
	{ grep -q "^propel: vitals report:" "$d/e" && pass vitals-report-missing ||
	  fail vitals-report-missing "$(cat "$d/e")"; }
"$PROPEL" vitals report --format=xml "$d/none.db" 2>"$d/e"
[ $? -eq 2 ] && pass vitals-report-badformat || fail vitals-report-badformat "$(cat "$d/e")"
"$PROPEL" vitals --help | grepq "vitals record" && pass vitals-help || fail vitals-help "no usage"

need_root vitals-badinput

if command -v setpriv >/dev/null; then
	(cd "$d" && setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$PROPEL" vitals record -o "$d/user.db" --duration 1.2 --epoch 0.5) 2>"$d/e"
	if grep -q "vitals via proc" "$d/e" && grep -q "BPF unavailable" "$d/e"; then
		pass vitals-not-root
	else
		fail vitals-not-root "$(cat "$d/e")"
	fi
	"$PROPEL" vitals report "$d/user.db" | grepq "coarse" &&
		pass vitals-not-root-report || fail vitals-not-root-report "report does not say coarse"
	setpriv --inh-caps=-all --bounding-set=-bpf,-sys_admin,-perfmon \
		"$PROPEL" vitals record -o "$d/nocap.db" --duration 1.2 --epoch 0.5 2>"$d/e"
	grep -q "vitals via proc" "$d/e" && pass vitals-bpf-refused ||
		fail vitals-bpf-refused "$(cat "$d/e")"
else
	skip vitals-not-root "setpriv missing"
	skip vitals-not-root-report "setpriv missing"
	skip vitals-bpf-refused "setpriv missing"
fi

if command -v unshare >/dev/null; then
	unshare -m sh -c "umount /sys/kernel/tracing 2>/dev/null; umount /sys/kernel/debug/tracing 2>/dev/null;
		exec '$PROPEL' vitals record -o '$d/notrace.db' --duration 1.2 --epoch 0.5" 2>"$d/e"
	if grep -q "vitals via bpf" "$d/e"; then pass vitals-no-tracefs
	elif grep -q "vitals via proc" "$d/e" && nobpf=$(bpf_missing) && [ -n "$nobpf" ]; then
		skip vitals-no-tracefs "$nobpf"
	else fail vitals-no-tracefs "$(cat "$d/e")"; fi
else
	skip vitals-no-tracefs "unshare missing"
fi

PROPEL_VITALS_FAKE_MISSING=contention_begin "$PROPEL" vitals record -o "$d/nolock.db" \
	--duration 1.2 --epoch 0.5 2>"$d/e"
if grep -q "vitals via proc" "$d/e" && nobpf=$(bpf_missing) && [ -n "$nobpf" ]; then
	skip vitals-missing-tracepoint "$nobpf"
	skip vitals-missing-tracepoint-report "$nobpf"
	skip vitals-missing-tracepoint-rest "$nobpf"
elif grep -q "lock off: tracepoint contention_begin missing on this kernel" "$d/e"; then
	pass vitals-missing-tracepoint
	"$PROPEL" vitals report --format=jsonl "$d/nolock.db" |
		grepq '"kind":"status","vital":"lock","state":"off"' &&
		pass vitals-missing-tracepoint-report ||
		fail vitals-missing-tracepoint-report "status not stored"
	"$PROPEL" vitals report --format=jsonl "$d/nolock.db" | grepq '"vital":"syscall"' &&
		pass vitals-missing-tracepoint-rest || fail vitals-missing-tracepoint-rest "no other vital"
else
	fail vitals-missing-tracepoint "$(cat "$d/e")"
	fail vitals-missing-tracepoint-report "no session"
	fail vitals-missing-tracepoint-rest "no session"
fi
