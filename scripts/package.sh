#!/usr/bin/env bash
# Builds the Debian package (.deb) from this checkout, runs lintian on it and, with --install,
# installs it and smoke-tests the installed binary against a throwaway redis-server.
#
#   scripts/package.sh [--install] [OUTDIR]      (default OUTDIR: build-deb)
#
# The build runs in a copy of the tracked files (in a release tarball without git, of the
# sources), so the checkout stays as it is. It needs
# debhelper, dpkg-dev, fakeroot and lintian besides the build's own packages: they are
# installed with apt-get when we are root or may sudo (Debian packages only; no apt source
# is added).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

install=false
if [[ ${1:-} == --install ]]; then
	install=true
	shift
fi
out=$(realpath -m "${1:-build-deb}")

ensure_packages
ensure_listed_packages debhelper dpkg-dev fakeroot lintian

version=$(sed -n "s/^  version: '\(.*\)',$/\1/p" meson.build)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src="$work/redlock-run-$version"
mkdir "$src"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	# Tracked files and new ones not ignored: what a commit of this checkout would hold.
	git ls-files -z --cached --others --exclude-standard | xargs -0 -r cp --parents -t "$src"
else
	# A release tarball (meson dist) holds just the sources: all of them, but what a build
	# here or a run of this script left behind.
	find . -mindepth 1 -maxdepth 1 ! -name 'build*' ! -name '.git' -exec cp -a -t "$src" {} +
fi

echo "building redlock-run $version in $src" >&2
(cd "$src" && dpkg-buildpackage -us -uc -b)
mkdir -p "$out"
rm -f "$out"/redlock-run*.deb
mv "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out"/
deb=$(ls "$out"/redlock-run_*.deb)
echo "built $deb" >&2

# Lintian at its default level: errors and warnings fail the build.
lintian --fail-on error,warning "$deb"

$install || exit 0
sudo=""
((EUID == 0)) || sudo=sudo
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$deb"
scripts/smoke.sh /usr/bin/redlock-run
