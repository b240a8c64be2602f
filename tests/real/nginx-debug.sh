#!/usr/bin/env bash
# tests/real/nginx-debug.sh [CACHE] - a Debian nginx binary together with its
# exact debug info, obtained without Debian's debug archive (which this
# machine cannot reach).  Prints the path of the binary on stdout (exit 0), or
# why not on stderr (exit 1: the caller falls back to the installed nginx,
# whose static functions then have no names).
#
# Why: Debian's nginx is stripped and the request path's functions
# (ngx_http_process_request_line, ngx_http_static_handler, ...) are static,
# absent from .dynsym: only debug info names them.  nginx-dbgsym lives in the
# debian-debug archive and on debuginfod.debian.net, neither reachable here.
# But Debian builds nginx reproducibly: rebuilding its source package in the
# recorded build path (/build/reproducible-path/nginx-VER, from `nginx -V`)
# with the OpenSSL headers of the version the binary says it was built with
# gives a byte-identical binary.  This script does that for the newest
# version in the archive whose source package can be fetched, checks that
# the rebuilt stripped binary is byte-for-byte Debian's, and only then
# installs the rebuilt debug file where nginx-dbgsym would put it
# (/usr/lib/debug/.build-id/xx/yyyy.debug).  The binary it prints is Debian's
# own (from the .deb, extracted, not installed: the system's nginx stays as
# it is).
#
# Cost: the first time, the package's build dependencies are installed and
# nginx is built (about 1-3 min on 2 cores); later runs find the result in
# CACHE (default /var/cache/propel-tests) and take no time.  Needs root.
#
# Steps, each logged into CACHE/VERSION/log:
#   lists     private apt lists with deb-src entries (the system's untouched)
#   fetch     apt-get source --download-only; apt-get download nginx=VER
#   deps      apt-get build-dep nginx=VER; libssl-dev of the recorded version
#             (downloaded and extracted, not installed)
#   build     in a private mount namespace: that libssl-dev's headers bound
#             over /usr/include/openssl, dpkg-buildpackage -B
#   verify    rebuilt usr/sbin/nginx == Debian's, byte for byte
#   install   the .debug file from the rebuilt nginx-dbgsym
set -u
cache=${1:-/var/cache/propel-tests}
say() { echo "nginx-debug: $*" >&2; }
[ "$(id -u)" -eq 0 ] || { say "needs root (installs into /usr/lib/debug)"; exit 1; }
for c in apt-get apt-cache dpkg-deb dpkg-source dpkg-buildpackage unshare readelf; do
	command -v "$c" >/dev/null || { say "no $c"; exit 1; }
done
mkdir -p "$cache" || exit 1
exec 9>"$cache/.nginx-debug.lock"
flock -w 900 9 || { say "another build holds $cache/.nginx-debug.lock"; exit 1; }

build_id() { readelf -n "$1" 2>/dev/null | awk '/Build ID:/ { print $3; exit }'; }
debug_path() { echo "/usr/lib/debug/.build-id/${1:0:2}/${1:2}.debug"; }

# done already?
for d in "$cache"/nginx-*/root/usr/sbin/nginx; do
	[ -x "$d" ] || continue
	id=$(build_id "$d")
	[ -n "$id" ] && [ -s "$(debug_path "$id")" ] && [ -f "${d%/root/usr/sbin/nginx}/verified" ] &&
		{ echo "$d"; exit 0; }
done

work=$cache/work
rm -rf "$work"
mkdir -p "$work/lists/partial" "$work/archives/partial"
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
	-o Dir::Cache::archives="$work/archives" -o APT::Sandbox::User=root)
export DEBIAN_FRONTEND=noninteractive
step() { echo "== $*" >>"$log"; }

step lists
timeout 300 apt-get "${apt[@]}" update >>"$log" 2>&1 || { say "apt-get update failed (see $log)"; exit 1; }

# the newest version whose source package can be fetched
cd "$work" || exit 1
ver=
for v in $(apt-cache "${apt[@]}" madison nginx | awk '$NF == "Sources" { print $3 }' | sort -u -r -V); do
	step "fetch $v"
	if timeout 300 apt-get "${apt[@]}" source --download-only "nginx=$v" >>"$log" 2>&1 &&
		timeout 300 apt-get "${apt[@]}" download "nginx=$v" >>"$log" 2>&1; then
		ver=$v
		break
	fi
	say "nginx $v: source package not reachable (see $log)"
	rm -f "$work"/nginx_*
done
[ -n "$ver" ] || { say "no nginx source package reachable"; exit 1; }
deb=$(ls "$work"/nginx_*_amd64.deb 2>/dev/null | head -1)
dsc=$(ls "$work"/nginx_*.dsc 2>/dev/null | head -1)
[ -f "$deb" ] && [ -f "$dsc" ] || { say "fetch of nginx $ver incomplete"; exit 1; }
out=$cache/nginx-$ver
rm -rf "$out"
mkdir -p "$out/root"
dpkg-deb -x "$deb" "$out/root" || exit 1
bin=$out/root/usr/sbin/nginx
want_id=$(build_id "$bin")

# what the buildd had: build path and OpenSSL version, both recorded in the binary
bpath=$(strings -a "$bin" | grep -o -m1 -- '-ffile-prefix-map=[^= ]*=\.' | sed 's/^-ffile-prefix-map=//; s/=\.$//')
sslv=$(strings -a "$bin" | sed -n 's/^built with OpenSSL \([0-9.]*\) .*/\1/p' | head -1)
[ -n "$bpath" ] && [ -n "$sslv" ] || { say "nginx $ver: no build path or OpenSSL version recorded"; exit 1; }
sslpkg=$(apt-cache "${apt[@]}" madison libssl-dev | awk -v v="$sslv" '$NF == "Packages" && index($3, v "-") == 1 { print $3; exit }')
[ -n "$sslpkg" ] || { say "nginx $ver was built with OpenSSL $sslv: no libssl-dev $sslv in the archive"; exit 1; }

step "deps (build path $bpath, libssl-dev $sslpkg)"
timeout 600 apt-get "${apt[@]}" build-dep -y -qq --no-install-recommends "nginx=$ver" >>"$log" 2>&1 ||
	{ say "apt-get build-dep nginx=$ver failed (see $log)"; exit 1; }
timeout 300 apt-get "${apt[@]}" download "libssl-dev=$sslpkg" >>"$log" 2>&1 ||
	{ say "libssl-dev $sslpkg not reachable"; exit 1; }
mkdir -p "$work/ssl"
dpkg-deb -x "$work"/libssl-dev_*.deb "$work/ssl" || exit 1

step build
case $bpath in /build/*) ;; *) say "unexpected build path $bpath"; exit 1 ;; esac
[ -e "$bpath" ] && { say "$bpath exists already: not touching it"; exit 1; }
made=
for p in /build "$(dirname "$bpath")"; do [ -d "$p" ] || { mkdir "$p" && made="$p $made"; }; done
dpkg-source -x "$dsc" "$bpath" >>"$log" 2>&1 || { rm -rf "$bpath"; say "dpkg-source -x failed"; exit 1; }
t0=$(date +%s)
unshare -m bash -c '
	set -e
	mount --make-rprivate /
	mount --bind "$1/usr/include/openssl" /usr/include/openssl
	mount --bind "$1/usr/include/x86_64-linux-gnu/openssl" /usr/include/x86_64-linux-gnu/openssl
	cd "$2"
	DEB_BUILD_OPTIONS="parallel=$(nproc) nocheck" timeout 1200 dpkg-buildpackage -B -uc -us
' _ "$work/ssl" "$bpath" >>"$log" 2>&1
rc=$?
step "build: status $rc, $(($(date +%s) - t0)) s"
mkdir -p "$work/rebuilt"
ok=0
if [ $rc -eq 0 ]; then
	dpkg-deb -x "$(dirname "$bpath")/nginx_${ver#*:}_amd64.deb" "$work/rebuilt" 2>>"$log" &&
		dpkg-deb -x "$(dirname "$bpath")/nginx-dbgsym_${ver#*:}_amd64.deb" "$work/rebuilt" 2>>"$log" && ok=1
fi
rm -rf "$bpath" "$(dirname "$bpath")"/nginx* "$(dirname "$bpath")"/libnginx*
for p in $made; do rmdir "$p" 2>/dev/null; done
[ $ok -eq 1 ] || { say "rebuild of nginx $ver failed (see $log)"; exit 1; }

step verify
if ! cmp -s "$work/rebuilt/usr/sbin/nginx" "$bin"; then
	say "rebuilt nginx $ver differs from Debian's (build ids $(build_id "$work/rebuilt/usr/sbin/nginx") vs $want_id): not reproducible here"
	exit 1
fi
src=$work/rebuilt$(debug_path "$want_id")
[ -s "$src" ] || { say "the rebuilt nginx-dbgsym has no $(debug_path "$want_id")"; exit 1; }

step install
mkdir -p "$(dirname "$(debug_path "$want_id")")"
install -m 644 "$src" "$(debug_path "$want_id")" || exit 1
echo "nginx $ver (build id $want_id): rebuilt byte-identical with libssl-dev $sslpkg in $bpath" >"$out/verified"
cp "$log" "$out/log"
rm -rf "$work"
echo "$bin"
