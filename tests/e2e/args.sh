#!/usr/bin/env bash
# tests/e2e/args.sh - `record|attach --args` (issue 33, uftrace's -a): the
# integer and pointer arguments and the return value of each traced call,
# read by DWARF, equal what the program itself printed; at -O0 and -O2,
# under record and under attach; shown by replay (text and jsonl) and by
# the TUI under tmux at 80x24 and 120x40.  Programs written and built here:
#   args  fib(n) recursive (long), mix(unsigned char, short, long, unsigned
#         long, const char *, int) -> unsigned, half(double, int) -> double;
#         main prints each call and its result
#   loop  square(long x, int tag) -> long, printed every 20 ms: attached to
#         for a second
# Checks:
#   OLVL/record-fib     jsonl: every fib entry's "args" {"n":N} and its
#                       exit's "retval" = fib(N) (the printed top call and
#                       each recursive one: fib(N) = fib(N-1) + fib(N-2))
#   OLVL/record-mix     mix's six arguments by name and type (a negative
#                       short, a 64-bit negative, an unsigned above 2^31,
#                       the pointer in hex) and its return value: as printed
#   OLVL/record-float   half: the double argument is null (in xmm, not
#                       recorded), k = 5, no retval (a double)
#   OLVL/record-clone   scale(v, k) always called with k = 3: at -O0
#                       scale(v=V, k=3); at -O2 gcc's scale.constprop.0
#                       (v alone) is shown by its registers (rdi = V), not
#                       by DWARF names that no longer fit it
#   OLVL/attach         attach --args -d 1: each square(x=X, tag=7) = R in
#                       replay's text as the program printed it
#   replay-text         `fib(n=12) {` ... `} = 144; /* fib */` (O0)
#   SIZE/tui            the TUI's trace line `fib(n=12) = 144 {` and
#                       `fib(n=11) = 89 {`; main, which the agent calls
#                       (no values recorded), `main() {` with no value
#   bt-args             (120x40, the cursor on fib(n=10)) `:bt`: one frame a
#                       line with gdb's arguments, `#1  fib (n=11) at args.c:LINE`
#   print-arg           `:print n` = 10 (an argument of the cursor's frame)
#   print-fields        `:print`: the fields' box has args = n=10, retval = 55
#   no-args             without --args nothing changes: `fib() {`, no
#                       "args" in jsonl
# propel-test: takes 10
. "$(dirname "$0")/../fixtures/tui/tui-lib.sh"
set -uo pipefail
expect_checks 17
command -v cc >/dev/null || { skip args "no C compiler"; exit 77; }
command -v jq >/dev/null || { skip args "no jq"; exit 77; }
[ -x "$PROPEL" ] || { fail args "no $PROPEL"; exit 1; }
d=$(tmpdir)
lp=
trap '[ -n "$lp" ] && kill "$lp" 2>/dev/null; tui_stop; rm -rf "$d"' EXIT

cat >"$d/args.c" <<'C'
/* args.c - tests/e2e/args.sh: calls whose values the program prints */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile int argc_seen;

__attribute__((noinline)) long fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) unsigned mix(unsigned char c, short s, long l,
				       unsigned long u, const char *p, int neg)
{
	return (unsigned)(c + s + l + u + strlen(p) + neg);
}

__attribute__((noinline)) double half(double d, int k)
{
	return d / 2 + k;
}

/* always k = 3: gcc -O2 clones it as scale.constprop.0(v) */
static __attribute__((noinline)) int scale(int v, int k)
{
	return v * k + argc_seen;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	const char *s = "hello";
	long r = fib(n);
	unsigned m = mix(200, -3, -1234567890123L, 4000000000UL, s, -7);
	double h = half(3.0, 5);

	printf("fib %d %ld\n", n, r);
	printf("mix 200 -3 -1234567890123 4000000000 %p -7 %u\n", (void *)s, m);
	printf("half 5 %g\n", h);
	argc_seen = argc;
	printf("scale %d %d\n", n + 1, scale(n + 1, 3));
	printf("scale %d %d\n", n + 2, scale(n + 2, 3));
	return 0;
}
C
cat >"$d/loop.c" <<'C'
/* loop.c - tests/e2e/args.sh: a live process to attach to */
#include <stdio.h>
#include <unistd.h>

__attribute__((noinline)) long square(long x, int tag)
{
	return x * x + tag;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (long i = 1;; i++) {
		long r = square(i, 7);

		printf("square(x=%ld, tag=%d) = %ld;\n", i, 7, r);
		usleep(20000);
	}
}
C

for lvl in O0 O2; do
	cc -g -$lvl -o "$d/args-$lvl" "$d/args.c" && cc -g -$lvl -o "$d/loop-$lvl" "$d/loop.c" ||
		{ fail "args/$lvl/build" "cc failed"; exit 1; }
	db=$d/args-$lvl.db
	if ! (cd "$d" && timeout 60 "$PROPEL" record --args -o "$db" -- "./args-$lvl" 12 >"$d/out-$lvl" 2>"$d/err-$lvl"); then
		fail "args/$lvl/record" "$(head -c 300 "$d/err-$lvl")"
		exit 1
	fi
	"$PROPEL" replay --format=jsonl "$db" >"$d/$lvl.jsonl"
	# every fib call: n from its entry, the value from its exit (per
	# thread in order: a stack pairs them), then checked against fib itself
	pairs=$(jq -r 'select(.func == "fib" and (.kind == "entry" or .kind == "exit")) |
		if .kind == "entry" then "E \(.args.n // "none")" else "X \(.retval // "none")" end' "$d/$lvl.jsonl" |
		awk '$1 == "E" { st[++sp] = $2; next } { print st[sp--], $2 }')
	want=$(awk '$1 == "fib" { print $2, $3 }' "$d/out-$lvl")
	bad=$(awk 'function f(n) { return n < 2 ? n : f(n - 1) + f(n - 2) } $1 != "none" && $2 != f($1) { print; n++ } END { exit n > 0 }' <<<"$pairs") &&
		ncall=$(wc -l <<<"$pairs")
	if [ -z "$bad" ] && grep -qxF "$want" <<<"$pairs" && [ "${ncall:-0}" -ge 100 ] &&
		! grep -q none <<<"$pairs"; then
		pass "args/$lvl/record-fib"
	else
		fail "args/$lvl/record-fib" "want '$want' among $(wc -l <<<"$pairs") calls; wrong: $(head -3 <<<"$bad" | tr '\n' '|') first: $(head -3 <<<"$pairs" | tr '\n' '|')"
	fi
	read -r _ c s l u p neg m <<<"$(grep '^mix' "$d/out-$lvl")"
	got=$(jq -r 'select(.func == "mix" and .kind == "entry") | .args | "\(.c) \(.s) \(.l) \(.u) \(.p) \(.neg)"' "$d/$lvl.jsonl")
	ret=$(jq -r 'select(.func == "mix" and .kind == "exit") | .retval' "$d/$lvl.jsonl")
	if [ "$got" = "$c $s $l $u $p $neg" ] && [ "$ret" = "$m" ]; then
		pass "args/$lvl/record-mix"
	else
		fail "args/$lvl/record-mix" "got '$got' = '$ret', printed '$c $s $l $u $p $neg' = '$m'"
	fi
	read -r _ k _ <<<"$(grep '^half' "$d/out-$lvl")"
	got=$(jq -c 'select(.func == "half" and (.kind == "entry" or .kind == "exit")) | [.kind, .args, .retval]' "$d/$lvl.jsonl" | tr '\n' ' ')
	if [ "$got" = "[\"entry\",{\"d\":null,\"k\":$k},null] [\"exit\",null,null] " ]; then
		pass "args/$lvl/record-float"
	else
		fail "args/$lvl/record-float" "$got"
	fi
	# scale(v, 3): at -O0 by its DWARF names; at -O2 gcc's clone
	# scale.constprop.0 takes v alone: its registers, rdi = v, not
	# DWARF's names (which would read k from a register it does not use)
	got=$(jq -r 'select((.func | startswith("scale")) and .kind == "entry") | "\(.func) \(.args.v // .args.rdi) \(.args.k // "-")"' "$d/$lvl.jsonl" | tr '\n' ' ')
	ret=$(jq -r 'select((.func | startswith("scale")) and .kind == "exit") | .retval' "$d/$lvl.jsonl" | tr '\n' ' ')
	want=$(awk '$1 == "scale" { printf "%s ", $2 }' "$d/out-$lvl")
	wret=$(awk '$1 == "scale" { printf "%s ", $3 }' "$d/out-$lvl")
	case $lvl in
	O0) wgot=$(for v in $want; do printf 'scale %s 3 ' "$v"; done) ;;
	*) wgot=$(for v in $want; do printf 'scale.constprop.0 %s - ' "$v"; done) ;;
	esac
	if [ "$got" = "$wgot" ] && [ "$ret" = "$wret" ] &&
		{ [ "$lvl" = O0 ] || jq -r 'select(.func == "scale.constprop.0" and .kind == "entry") | .args | has("rsi")' "$d/$lvl.jsonl" | grep -qx true; }; then
		pass "args/$lvl/record-clone"
	else
		fail "args/$lvl/record-clone" "got '$got' = '$ret', want '$wgot' = '$wret'"
	fi
	# attach: a second of a live process
	"$d/loop-$lvl" >"$d/loop-$lvl.out" 2>&1 &
	lp=$!
	sleep 0.3
	timeout 60 "$PROPEL" attach --args -d 1 -o "$d/loop-$lvl.db" "$lp" >"$d/att-$lvl.err" 2>&1
	sleep 0.1
	kill "$lp" 2>/dev/null
	wait "$lp" 2>/dev/null
	lp=
	"$PROPEL" replay "$d/loop-$lvl.db" 2>/dev/null | grep -o 'square(x=.*' >"$d/att-$lvl.txt"
	n=$(wc -l <"$d/att-$lvl.txt")
	miss=$(grep -vxFf "$d/loop-$lvl.out" "$d/att-$lvl.txt" | head -3)
	if [ "$n" -ge 20 ] && [ -z "$miss" ]; then
		pass "args/$lvl/attach"
	else
		fail "args/$lvl/attach" "$n calls; not printed: $(tr '\n' '|' <<<"$miss") $(head -c 300 "$d/att-$lvl.err")"
	fi
done

txt=$("$PROPEL" replay "$d/args-O0.db")
if grep -qE '\| +fib\(n=12\) \{$' <<<"$txt" && grep -qE '\| +\} = 144; /\* fib \*/$' <<<"$txt" &&
	grep -qE 'mix\(c=200, s=-3, l=-1234567890123, u=4000000000, p=0x[0-9a-f]+, neg=-7\) \{' <<<"$txt"; then
	pass args/replay-text
else
	fail args/replay-text "$(grep -E 'fib\(n=12|mix' <<<"$txt" | head -3 | tr '\n' '|')"
fi

if command -v tmux >/dev/null; then
	for size in 80x24 120x40; do
		tui_start "${size%x*}" "${size#*x}" "$PROPEL tui $d/args-O0.db"
		tui_wait_for "main()" 10
		# from main's entry (the trace opens at the constructors before it)
		tui_cmd "break main"
		tui_keys c
		tui_wait_for "  main  " 5
		tui_cmd delete
		tui_keys s s s s s
		scr=$(tui_screen)
		if grep -qF 'fib(n=12) = 144 {' <<<"$scr" && grep -qF 'fib(n=11) = 89 {' <<<"$scr" &&
			grep -qF -- '- main() {' <<<"$scr"; then
			pass "args/$size/tui"
		else
			fail "args/$size/tui" "$(tr '\n' '|' <<<"$scr")"
		fi
		[ "$size" = 120x40 ] || { tui_stop; continue; }
		# the cursor on fib(n=10): gdb's frame commands with values
		tui_cmd bt
		scr=$(tui_screen)
		fl=$(grep -n 'return n < 2' "$d/args.c" | cut -d: -f1)
		if grep -qE "#0 +fib \\(n=10\\) at args\\.c:$fl " <<<"$scr" &&
			grep -qE "#1 +fib \\(n=11\\) at args\\.c:$fl " <<<"$scr" &&
			grep -qE "#2 +fib \\(n=12\\) at args\\.c:$fl " <<<"$scr"; then
			pass args/bt-args
		else
			fail args/bt-args "$(tr '\n' '|' <<<"$scr")"
		fi
		tui_keys Escape
		tui_cmd print n
		if tui_message | grepq -E '^\$[0-9]+ = 10 *$'; then
			pass args/print-arg
		else
			fail args/print-arg "$(tui_message)"
		fi
		tui_cmd print
		scr=$(tui_screen)
		if grep -qE '│ args +=  ?n=10 +│' <<<"$scr" && grep -qE '│ retval +=  ?55 +│' <<<"$scr"; then
			pass args/print-fields
		else
			fail args/print-fields "$(grep -E 'args|retval' <<<"$scr" | tr '\n' '|')"
		fi
		tui_stop
	done
else
	skip args/80x24/tui "tmux not installed"
	skip args/120x40/tui "tmux not installed"
	skip args/bt-args "tmux not installed"
	skip args/print-arg "tmux not installed"
	skip args/print-fields "tmux not installed"
fi

(cd "$d" && timeout 60 "$PROPEL" record -o "$d/plain.db" -- ./args-O0 5 >/dev/null 2>&1)
if "$PROPEL" replay "$d/plain.db" | grep -qE '\| +fib\(\) \{$' &&
	! "$PROPEL" replay --format=jsonl "$d/plain.db" | grep -qE '"args"|"retval"'; then
	pass args/no-args
else
	fail args/no-args "$("$PROPEL" replay "$d/plain.db" | grep fib | head -2 | tr '\n' '|')"
fi
