# shellcheck shell=bash
# Shared by scripts/setup.sh and scripts/test.sh: make sure what the build and the tests need
# is installed, installing it with apt-get when we can (root or sudo), and saying exactly what
# is missing when we cannot.

# "what is needed" "how to tell it is there" "the Debian package that provides it"
need_list() {
	cat <<'EOT'
meson|command -v meson|meson
ninja|command -v ninja|ninja-build
a C compiler|command -v cc|gcc
C library headers|test -f /usr/include/stdio.h|libc6-dev
pkg-config|command -v pkg-config|pkg-config
hiredis|pkg-config --exists 'hiredis >= 0.14'|libhiredis-dev
libuuid|pkg-config --exists uuid|uuid-dev
OpenSSL 3 headers (TLS)|pkg-config --exists 'openssl >= 3.0'|libssl-dev
openssl|command -v openssl|openssl
redis-server|command -v redis-server|redis-server
redis-cli|command -v redis-cli|redis-tools
bats|command -v bats|bats
bats-assert|test -f /usr/lib/bats/bats-assert/load.bash|bats-assert
bats-support|test -f /usr/lib/bats/bats-support/load.bash|bats-support
python3|command -v python3|python3
script|command -v script|bsdutils
flock|command -v flock|util-linux
strace|command -v strace|strace
mandoc|command -v mandoc|mandoc
shellcheck|command -v shellcheck|shellcheck
python3-yaml|/usr/bin/python3 -c 'import yaml'|python3-yaml
systemd-analyze|command -v systemd-analyze|systemd
bash-completion|test -f /usr/share/bash-completion/bash_completion|bash-completion
EOT
}

ensure_packages() {
	local what check pkg missing=() names=()
	while IFS='|' read -r what check pkg; do
		if ! eval "$check" >/dev/null 2>&1; then
			missing+=("$pkg")
			names+=("$what")
		fi
	done < <(need_list)
	((${#missing[@]} == 0)) || install_packages "${names[*]}" "${missing[@]}"
}

# ensure_listed_packages PACKAGE...: the Debian packages named, installed if they are not.
ensure_listed_packages() {
	local pkg missing=()
	for pkg; do
		dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
	done
	((${#missing[@]} == 0)) || install_packages "${missing[*]}" "${missing[@]}"
}

# install_packages WHAT PACKAGE...: apt-get install, as root or with sudo; otherwise says
# what is missing (WHAT, in words) and how to install it, and exits.
install_packages() {
	local what=$1
	shift
	local sudo=""
	if ((EUID != 0)); then
		if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
			sudo=sudo
		else
			echo "missing: $what" >&2
			echo "install them with: sudo apt-get install $*" >&2
			exit 1
		fi
	fi
	if ! command -v apt-get >/dev/null; then
		echo "missing: $what (Debian packages: $*); no apt-get here to install them" >&2
		exit 1
	fi
	echo "installing: $*" >&2
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"$@" >&2
}

# build DIR [meson setup arguments...]: configures DIR once (reconfigures when arguments
# are given) and compiles.
build() {
	local dir=$1
	shift
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" "$@" >&2
	elif (($# > 0)); then
		meson configure "$dir" "$@" >&2
	fi
	meson compile -C "$dir" >&2
}
