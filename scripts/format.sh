#!/usr/bin/env bash
# Applies .clang-format to every C file (or, with --check, lists the ones it would change).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "clang-format is missing: apt-get install clang-format" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.c' '*.h' 2>/dev/null; git ls-files --others --exclude-standard '*.c' '*.h')
if [ "${1:-}" = --check ]; then
	status=0
	for f in "${files[@]}"; do
		clang-format --dry-run --Werror "$f" 2>/dev/null || { echo "$f"; status=1; }
	done
	exit "$status"
fi
clang-format -i "${files[@]}"
