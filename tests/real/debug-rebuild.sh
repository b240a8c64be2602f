#!/usr/bin/env bash
# tests/real/debug-rebuild.sh [--headers DEV[=RE]]... PKG[,PKG...] PATH [CACHE]
#
# A Debian binary together with its exact debug info, obtained without
# Debian's debug archive (debian-debug and debuginfod.debian.net, which this
# machine cannot reach).  Prints the path of the binary on stdout (exit 0),
# or why not on stderr (exit 1: the caller falls back to the installed
# binary, whose static functions then have no names).
#
#   PKG,...   binary packages of one source package, extracted together
#             (the first names the cache entry); PATH, inside them, is the
#             program to print (may be a symlink: usr/bin/redis-server is
#             one to redis-check-rdb, in redis-tools)
#   CACHE     default /var/cache/propel-tests
#   --headers DEV[=RE]
#             build against the headers of an archive version of the -dev
#             package DEV (its usr/include files bound over the system's in
#             the build's private mount namespace; nothing is installed).
#             With RE (a sed -E regex with one group, matched against the
#             lines of `strings -a` of the binary), the version the binary
#             records: nginx says "built with OpenSSL 3.0.20".  Without, each
#             version in the archive, newest first, until the rebuild is
#             byte-identical (at most DEBUG_REBUILD_TRIES builds, default 3):
#             a buildd builds against the newest packages of its day.
#
# Why it works: Debian builds reproducibly.  Rebuilding the source package
# in the build path its buildd used (/build/reproducible-path/SRC-VER, or
# the -ffile-prefix-map the binary records) against the same headers gives
# a byte-identical binary.  This script does that for the newest version in
# the archive whose source package can be fetched, checks that the rebuilt
# stripped binary is byte-for-byte Debian's, and only then installs the
# rebuilt debug file where PKG-dbgsym would put it
# (/usr/lib/debug/.build-id/xx/yyyy.debug, and the dwz file it refers to
# by .gnu_debugaltlink).  The binary it prints is Debian's own, from the
# .debs, extracted, not installed: the system's package stays as it is, and
# may be a newer security update whose source is not fetchable (then the
# binary printed is the older version's).
#
# Cost: the first time, the build dependencies are installed (apt-get
# build-dep) and the package is built (1-3 min on 2 cores each try); later
# runs find CACHE/PKG-VER and take no time (no network).  A rebuild that
# is not byte-identical is remembered in CACHE/PKG.failed ("TRIES EPOCH",
# then why): retried on the next runs up to 3 times, then not for a week
# (remove the file to try at once), so a transient failure (a build killed
# under load, a mirror mid-sync) does not fail every later run, and a
# lasting one does not cost a rebuild on every run.  Needs root.
#
# Steps, each logged into CACHE/PKG.work/log (kept on failure; on success
# in CACHE/PKG-VER/log):
#   lists     private apt lists with deb-src entries (the system's untouched)
#   fetch     apt-get source --download-only; apt-get download PKG...=VER
#   deps      apt-get build-dep; the --headers packages (downloaded and
#             extracted, not installed)
#   build     in a private mount namespace: CACHE/PKG.work/build bound over
#             /build (the host's /build stays empty), the headers bound
#             over /usr/include/..., dpkg-buildpackage -B
#   verify    the rebuilt PATH (symlinks resolved) == Debian's, byte for byte
#   install   the debug files from the rebuilt PKG-dbgsym packages, kept in
#             CACHE/PKG-VER/debug too (reinstalled from there if removed)
set -u
headers=()
while [ $# -gt 0 ]; do
	case $1 in
	--headers) headers+=("$2"); shift 2 ;;
	--) shift; break ;;
	-*) echo "debug-rebuild: unknown option $1" >&2; exit 1 ;;
	*) break ;;
	esac
done
[ $# -ge 2 ] || { echo "usage: debug-rebuild.sh [--headers DEV[=RE]]... PKG[,PKG...] PATH [CACHE]" >&2; exit 1; }
IFS=, read -r -a pkgs <<<"$1"
name=${pkgs[0]}
path=${2#/}
cache=${3:-/var/cache/propel-tests}
tries=${DEBUG_REBUILD_TRIES:-3}
say() { echo "$name-debug: $*" >&2; }
[ "$(id -u)" -eq 0 ] || { say "needs root (installs into /usr/lib/debug)"; exit 1; }
for c in apt-get apt-cache dpkg-deb dpkg-source dpkg-buildpackage unshare readelf strings flock; do
	command -v "$c" >/dev/null || { say "no $c"; exit 1; }
done

build_id() { readelf -n "$1" 2>/dev/null | awk '/Build ID:/ { print $3; exit }'; }
debug_path() { echo "/usr/lib/debug/.build-id/${1:0:2}/${1:2}.debug"; }
# resolve ROOT/REL through symlinks that stay inside ROOT
real_in() {
	local root=$1 f=$1/$2 t i
	for ((i = 0; i < 8; i++)); do
		[ -L "$f" ] || break
		t=$(readlink "$f")
		case $t in /*) f=$root$t ;; *) f=$(dirname "$f")/$t ;; esac
	done
	echo "$f"
}
# the alt (dwz) file a debug file refers to, as an absolute path
altlink() { readelf -p .gnu_debugaltlink "$1" 2>/dev/null | sed -n 's/^ *\[ *0\] *\(\/[^ ]*\)$/\1/p' | head -1; }

# done already?  CACHE/PKG-VER with a verified file and the binary; its
# debug files reinstalled from CACHE/PKG-VER/debug if someone removed them.
cached() {
	local d out bin id f
	for out in $(ls -d "$cache/$name"-[0-9]* 2>/dev/null | sort -r -V); do
		bin=$out/root/$path
		[ -f "$out/verified" ] && [ -x "$bin" ] || continue
		if [ -d "$out/debug" ]; then
			while IFS= read -r f; do
				d=${f#"$out/debug"}
				cmp -s "$f" "$d" && continue
				mkdir -p "$(dirname "$d")" && install -m 644 "$f" "$d.propel-tmp" && mv -f "$d.propel-tmp" "$d" || continue 2
			done < <(find "$out/debug" -type f)
		fi
		id=$(build_id "$(real_in "$out/root" "$path")")
		[ -n "$id" ] && [ -s "$(debug_path "$id")" ] && { echo "$bin"; return 0; }
	done
	return 1
}
mkdir -p "$cache" || exit 1
cached && exit 0
runs=0
if [ -s "$cache/$name.failed" ]; then
	read -r runs when _ <"$cache/$name.failed"
	# an older marker (one line, why) counts as no try
	[[ $runs =~ ^[0-9]+$ && ${when:-} =~ ^[0-9]+$ ]] || runs=0 when=0
	if [ "$runs" -ge 3 ] && [ $(($(date +%s) - when)) -lt $((7 * 86400)) ]; then
		say "$(tail -n 1 "$cache/$name.failed") ($runs runs; again after a week, or remove $cache/$name.failed)"
		exit 1
	fi
	[ "$runs" -ge 3 ] && runs=0
	say "try $((runs + 1)) after: $(tail -n 1 "$cache/$name.failed")"
fi
exec 9>"$cache/.$name-debug.lock"
flock -w 1200 9 || { say "another build holds $cache/.$name-debug.lock"; exit 1; }
cached && exit 0 # built by the holder of the lock

work=$cache/$name.work
rm -rf "$work"
mkdir -p "$work/lists/partial" "$work/archives/partial" "$work/debs" "$work/hdr" "$work/build"
log=$work/log
cat >"$work/src.list" <<'EOF'
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
deb-src http://deb.debian.org/debian bookworm main
deb-src http://deb.debian.org/debian bookworm-updates main
deb-src http://deb.debian.org/debian-security bookworm-security main
EOF
apt=(-o Dir::Etc::sourcelist="$work/src.list" -o Dir::Etc::sourceparts=- -o Dir::State::Lists="$work/lists"
	-o Dir::Cache::archives="$work/archives" -o APT::Sandbox::User=root -o DPkg::Lock::Timeout=300)
export DEBIAN_FRONTEND=noninteractive
step() { echo "== $* ($(date +%T))" >>"$log"; }
# fail WHY: give up for now; failed WHY: also remember (a rebuild that ran),
# counting the tries
fail() { say "$*"; exit 1; }
failed() {
	printf '%d %d\n%s\n' $((runs + 1)) "$(date +%s)" "$* [$(date -u +%F)]" >"$cache/$name.failed"
	say "$*"
	exit 1
}
# versions DEV: DEV's amd64/all versions in the archive, newest first
versions() {
	apt-cache "${apt[@]}" madison "$1" | awk -F' [|] ' '$3 ~ /(amd64|all) Packages$/ { gsub(/ /, "", $2); print $2 }' |
		sort -u -r -V
}

step lists
timeout 300 apt-get "${apt[@]}" update >>"$log" 2>&1 || fail "apt-get update failed (see $log)"

# the newest version whose source package can be fetched
cd "$work" || exit 1
ver=
for v in $(versions "$name"); do
	step "fetch $v"
	ok=1
	timeout 300 apt-get "${apt[@]}" source --download-only "$name=$v" >>"$log" 2>&1 || ok=0
	for p in "${pkgs[@]}"; do
		[ $ok -eq 1 ] || break
		(cd debs && timeout 300 apt-get "${apt[@]}" download "$p=$v") >>"$log" 2>&1 || ok=0
	done
	[ $ok -eq 1 ] && { ver=$v; break; }
	say "$name $v: source package not reachable (see $log)"
	rm -f "$work"/*.dsc "$work"/*.tar.* "$work"/*.diff.gz "$work"/debs/*
done
[ -n "$ver" ] || fail "no source package of $name reachable"
dsc=$(ls "$work"/*.dsc 2>/dev/null | head -1)
[ -f "$dsc" ] || fail "fetch of $name $ver incomplete"
src=$(sed -n 's/^Source: *//p' "$dsc" | head -1)
sver=$(sed -n 's/^Version: *//p' "$dsc" | head -1)
upver=${sver#*:}
upver=${upver%-*}
out=$cache/$name-${ver#*:}
rm -rf "$out"
mkdir -p "$out/root"
for p in "${pkgs[@]}"; do
	dpkg-deb -x "$work"/debs/"${p}"_*.deb "$out/root" || fail "cannot extract $p $ver"
done
bin=$out/root/$path
real=$(real_in "$out/root" "$path")
[ -f "$real" ] || fail "$name $ver has no $path"
rel=${real#"$out/root"}
want_id=$(build_id "$real")
[ -n "$want_id" ] || fail "$path of $name $ver has no build id"

# the build path: the one the binary records, else the buildds' usual
bpath=$(strings -a "$real" | grep -o -m1 -- '-ffile-prefix-map=[^= ]*=\.' | sed 's/^-ffile-prefix-map=//; s/=\.$//')
: "${bpath:=/build/reproducible-path/$src-$upver}"
case $bpath in /build/*/*) ;; *) fail "unexpected build path $bpath" ;; esac

# the header sets to try: one line per try, "DEV=VER DEV=VER ..."
combos=("")
for h in "${headers[@]}"; do
	dev=${h%%=*} re=
	[ "$dev" != "$h" ] && re=${h#*=}
	cands=()
	if [ -n "$re" ]; then
		rv=$(strings -a "$real" | sed -nE "s#^.*${re}.*\$#\1#p" | head -1)
		[ -n "$rv" ] || fail "$name $ver: no $dev version recorded in $rel"
		for v in $(versions "$dev"); do
			case ${v#*:} in "$rv"-*) cands=("$v"); break ;; esac
		done
		[ ${#cands[@]} -gt 0 ] || fail "$name $ver was built with $dev $rv: not in the archive"
	else
		read -r -a cands <<<"$(versions "$dev" | tr '\n' ' ')"
		[ ${#cands[@]} -gt 0 ] || fail "no $dev in the archive"
	fi
	next=()
	for c in "${combos[@]}"; do for v in "${cands[@]}"; do next+=("${c:+$c }$dev=$v"); done; done
	combos=("${next[@]}")
done

step "deps (build path $bpath)"
timeout 900 apt-get "${apt[@]}" build-dep -y -qq --no-install-recommends "$dsc" >>"$log" 2>&1 ||
	fail "apt-get build-dep for $src $sver failed (see $log)"

# build TRY HEADERS: the package built into $work/build; 0 when it built
parent=$work/build/${bpath#/build/}
parent=$(dirname "$parent")
build() {
	local n=$1 hs=$2 hv dirs=() d t0 rc
	rm -rf "$work/build"
	mkdir -p "$parent"
	for hv in $hs; do
		d=$work/hdr/$hv
		if [ ! -d "$d" ]; then
			(cd "$work/hdr" && timeout 300 apt-get "${apt[@]}" download "$hv") >>"$log" 2>&1 || { echo "cannot fetch $hv" >>"$log"; return 1; }
			mkdir -p "$d" && dpkg-deb -x "$work/hdr/${hv%%=*}"_*"${hv##*[:=]}"_*.deb "$d" || return 1
		fi
		dirs+=("$d")
	done
	step "build $n${hs:+ with $hs}"
	dpkg-source -x "$dsc" "$parent/$(basename "$bpath")" >>"$log" 2>&1 || return 1
	t0=$(date +%s)
	unshare -m bash -c '
		set -e
		mount --make-rprivate /
		mount --bind "$1" /build
		cd "$2"
		shift 2
		triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
		for o in "$@"; do
			for e in "$o"/usr/include/* "$o/usr/include/$triplet"/*; do
				[ "$e" = "$o/usr/include/$triplet" ] && continue
				t=${e#"$o"}
				if { [ -d "$e" ] && [ -d "$t" ]; } || { [ -f "$e" ] && [ -f "$t" ]; }; then
					mount --bind "$e" "$t"
					echo "headers: $e over $t"
				fi
			done
		done
		DEB_BUILD_OPTIONS="parallel=$(nproc) nocheck" timeout 1800 dpkg-buildpackage -B -uc -us
	' _ "$work/build" "$bpath" "${dirs[@]}" >>"$log" 2>&1
	rc=$?
	step "build $n: status $rc, $(($(date +%s) - t0)) s"
	return $rc
}

# /build must exist on the host to be a mount point; made if missing, and
# removed after unless another build (holding .build-dir.lock shared) uses it
exec 8>"$cache/.build-dir.lock"
flock -s 8
made_build=
[ -d /build ] || { mkdir /build && made_build=1; } || fail "cannot make /build"
n=0 got='' ids=''
for hs in "${combos[@]}"; do
	n=$((n + 1))
	[ $n -le "$tries" ] || break
	build $n "$hs" || { say "build $n of $name $ver failed (see $log)"; ids="$ids build $n failed;"; continue; }
	rm -rf "$work/rebuilt"
	mkdir -p "$work/rebuilt"
	for p in "${pkgs[@]}"; do
		dpkg-deb -x "$(ls "$parent/${p}_"*.deb | head -1)" "$work/rebuilt" 2>>"$log"
		d=$(ls "$parent/${p}-dbgsym_"*.deb 2>/dev/null | head -1)
		[ -n "$d" ] && dpkg-deb -x "$d" "$work/rebuilt" 2>>"$log"
	done
	step verify
	if cmp -s "$work/rebuilt$rel" "$real"; then
		got=$hs
		break
	fi
	ids="$ids build id $(build_id "$work/rebuilt$rel")${hs:+ with $hs};"
	echo "rebuilt $rel differs from Debian's" >>"$log"
done
rm -rf "$work/build/"*
flock -u 8
[ -n "$made_build" ] && flock -x -n 8 && rmdir /build 2>/dev/null
exec 8>&-
if [ -z "$got" ]; then
	case $ids in
	*"build id "*) failed "rebuilt $name $ver is not byte-identical to Debian's ($want_id):$ids see $log" ;;
	*) fail "rebuild of $name $ver failed:$ids see $log" ;;
	esac
fi

dbg=$(debug_path "$want_id")
[ -s "$work/rebuilt$dbg" ] || failed "the rebuilt $name-dbgsym has no $dbg"
step install
files=("$dbg")
alt=$(altlink "$work/rebuilt$dbg")
if [ -n "$alt" ]; then
	[ -s "$work/rebuilt$alt" ] || failed "the rebuilt dbgsym lacks $alt, the dwz file of $dbg"
	files+=("$alt")
fi
for f in "${files[@]}"; do
	mkdir -p "$(dirname "$out/debug$f")" "$(dirname "$f")"
	cp "$work/rebuilt$f" "$out/debug$f" || exit 1
	if [ -e "$f" ] && ! cmp -s "$f" "$work/rebuilt$f" && dpkg -S "$f" >/dev/null 2>&1; then
		say "not replacing $f (installed by $(dpkg -S "$f" | cut -d: -f1))"
		continue
	fi
	install -m 644 "$work/rebuilt$f" "$f.propel-tmp" && mv -f "$f.propel-tmp" "$f" || exit 1
done
echo "$name $ver (build id $want_id): rebuilt byte-identical${got:+ with ${got//=/ }} in $bpath" >"$out/verified"
cp "$log" "$out/log"
rm -f "$cache/$name.failed"
rm -rf "$work"
echo "$bin"
