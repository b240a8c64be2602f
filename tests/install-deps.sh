#!/usr/bin/env bash
# tests/install-deps.sh [build|test|bench|fuzz] - install the Debian packages propel
# needs, only those missing (idempotent); sudo when not root.
set -e
pkgs_build="build-essential pkg-config libncurses-dev libdw-dev libelf-dev
  libcapstone-dev libreadline-dev libsqlite3-dev libbpf-dev bpftool clang llvm
  zlib1g-dev libzstd-dev"
pkgs_test="tmux sqlite3 g++ binutils iproute2 procps python3 strace"
# --follow across hosts (tests/e2e/follow-netns.sh): an sshd per namespace
pkgs_test="$pkgs_test openssh-server openssh-client"
# real packaged software (tests/e2e/real-software.sh, tests/bench-real.sh)
pkgs_test="$pkgs_test nginx-light redis-server redis-tools wrk"
pkgs_test="$pkgs_test git"
# a slow file under a real server (tests/real/slowfs.py, a FUSE file system:
# tests/e2e/adaptive-real.sh)
pkgs_test="$pkgs_test python3-fusepy"
# propel export --format=dot renders (tests/e2e/export.sh)
pkgs_test="$pkgs_test graphviz"
# propel export's chrome and folded output loaded in speedscope under
# headless Chromium (tests/e2e/export-trace.sh; the npm part is below)
pkgs_test="$pkgs_test chromium"
command -v npm >/dev/null || pkgs_test="$pkgs_test nodejs npm"
# names for stripped binaries (test-symsrc): a local debuginfod, MiniDebugInfo
pkgs_test="$pkgs_test debuginfod libdebuginfod-dev curl xz-utils"
# the benchmarks' peers: tests/e2e/bench-short.sh runs every benchmark
# in its short mode, each beside its peer
pkgs_test="$pkgs_test uftrace linux-perf gdb bpftrace"
# make fuzz: clang's libFuzzer and sanitizer runtimes (tests/fuzz/fuzz.mk)
pkgs_fuzz="clang libclang-rt-dev"
pkgs_bench="hyperfine nginx wrk"
want=$pkgs_build
case "${1:-build}" in
test) want="$pkgs_build $pkgs_test" ;;
bench) want="$pkgs_build $pkgs_test $pkgs_bench" ;;
fuzz) want="$pkgs_build $pkgs_fuzz" ;;
esac
missing=()
for p in $want; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
sudo=
[ "$(id -u)" -eq 0 ] || sudo=sudo
if [ ${#missing[@]} -gt 0 ]; then
	echo "propel: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq >/dev/null || true
	$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
case "${1:-build}" in build | fuzz) exit 0 ;; esac
# npm, pinned, in PROPEL_JS (default /opt/propel-js): speedscope's release
# build and puppeteer-core to drive Chromium, and the OpenTelemetry
# protobuf definitions (the protobufjs code @opentelemetry/otlp-transformer
# 0.52 generates, the last version to ship it)
js=${PROPEL_JS:-/opt/propel-js}
if ! [ -f "$js/node_modules/speedscope/package.json" ] ||
	! [ -f "$js/node_modules/puppeteer-core/package.json" ] ||
	! [ -f "$js/node_modules/@opentelemetry/otlp-transformer/build/src/generated/root.js" ]; then
	echo "propel: installing speedscope, puppeteer-core, otlp-transformer (npm) in $js" >&2
	$sudo mkdir -p "$js"
	# the registry out of reach is not the build's failure: the export
	# tests say SKIP for the consumers they cannot load
	$sudo npm install --prefix "$js" --no-audit --no-fund --loglevel=error \
		speedscope@1.25.0 puppeteer-core@24.43.1 \
		@opentelemetry/otlp-transformer@0.52.0 >/dev/null ||
		echo "propel: npm install failed: the export tests will skip speedscope and OTLP protobuf" >&2
fi
