# tests/e2e/tui-lib.sh - helpers for the TUI screen tests (sourced; not a
# test itself: run.sh runs tests/e2e/*.sh, and this file only defines
# functions, so it prints no result).  Builds the synthetic-session
# generator and the crashy fixture into $O/tests/, drives propel in tmux.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
TUI_GEN=$PROPEL_TOP/$O/tests/gen-session
TUI_CRASHY=$PROPEL_TOP/$O/tests/crashy
TUI_SRC=$PROPEL_TOP/tests/fixtures/tui/crashy.c
tui_build() {
	mkdir -p "$PROPEL_TOP/$O/tests"
	(cd "$PROPEL_TOP" && cc -O2 -D_GNU_SOURCE -I. -o "$TUI_GEN" tests/fixtures/tui/gen-session.c \
		engine/session.c share/log.c $(pkg-config --cflags --libs sqlite3)) || return 1
	cc -g -O0 -no-pie -pthread -o "$TUI_CRASHY" "$TUI_SRC" || return 1
}
# tui_crash_db OUT [SRC]: the crash session, fault pc = first address of
# the @fault line in the real binary
tui_crash_db() {
	local src=${2:-$TUI_SRC} line pc
	line=$(grep -n '/\* @fault \*/' "$TUI_SRC" | cut -d: -f1)
	pc=$(objdump --dwarf=decodedline "$TUI_CRASHY" | awk -v l="$line" '$1=="crashy.c" && $2==l {print $3; exit}')
	"$TUI_GEN" crash "$1" "$src" "$TUI_CRASHY" "${pc:-0}"
}
TUI_SOCK=propel-tui-$$
tmx() { tmux -L "$TUI_SOCK" "$@"; }
# tui_start W H CMD...: run CMD in a fresh tmux session "t"
tui_start() {
	local w=$1 h=$2; shift 2
	tmx kill-server 2>/dev/null
	for _ in 1 2 3 4 5; do
		tmx new-session -d -s t -x "$w" -y "$h" "$* ; echo EXITED \$?; sleep 60" 2>/dev/null && break
		sleep 0.3
	done
	tui_wait_for "" 1
}
tui_screen() { tmx capture-pane -p -t t; }
# tui_wait_for TEXT [SECONDS]: until the screen shows TEXT
tui_wait_for() {
	local i n=$(( ${2:-5} * 20 ))
	for ((i = 0; i < n; i++)); do
		tui_screen | grep -qF -- "$1" && return 0
		sleep 0.05
	done
	return 1
}
# tui_keys KEYS...: send keys and wait until the screen settles
tui_keys() {
	local before
	before=$(tui_screen)
	tmx send-keys -t t "$@"
	sleep 0.1
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		[ "$(tui_screen)" != "$before" ] && break
		sleep 0.05
	done
	sleep 0.05
}
tui_cmd() { tui_keys ":$*" Enter; }
tui_status() { tui_screen | tail -n 2 | head -n 1; }
tui_message() { tui_screen | tail -n 1; }
tui_stop() { tmx kill-server 2>/dev/null; }
