#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang, AddressSanitizer and UBSan, and runs each
# for a while from its committed seed corpus (fuzz/corpus/TARGET). New inputs go to a scratch
# folder, not the repository; a crash leaves its input in build-fuzz/ and fails the run: fix
# it, then add the input to fuzz/corpus/TARGET as a regression case.
#
#   FUZZ_SECONDS   how long each target runs (default 15)
#   BUILD_DIR      the build folder (default: build-fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_packages
command -v clang >/dev/null || { echo "fuzzing needs clang (Debian: clang libclang-rt-14-dev)" >&2; exit 1; }
dir=${BUILD_DIR:-build-fuzz}
if [ ! -f "$dir/build.ninja" ]; then
	CC=clang meson setup "$dir" -Dfuzz=true -Dtests=false -Db_sanitize=address,undefined \
		-Db_lundef=false >&2
fi
meson compile -C "$dir" >&2

export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
failed=0
for target in url duration opts reply; do
	scratch=$(mktemp -d)
	echo "fuzz_$target: ${FUZZ_SECONDS:-15}s from fuzz/corpus/$target"
	if ! (cd "$dir" && "./fuzz/fuzz_$target" -max_total_time="${FUZZ_SECONDS:-15}" \
		-timeout=5 -rss_limit_mb=1024 -print_final_stats=0 "$scratch" \
		"../fuzz/corpus/$target" 2>"fuzz_$target.log"); then
		tail -n 30 "$dir/fuzz_$target.log" >&2
		failed=$((failed + 1))
	fi
	rm -rf "$scratch"
done
echo "fuzzing: $((4 - failed)) passed, $failed failed"
exit $((failed > 0))
