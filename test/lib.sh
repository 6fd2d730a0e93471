# Shell helpers shared by test/demo.sh and test/run-tests.sh (sourced).
#
# They work for root (servers then run as the postgres OS user, since
# PostgreSQL refuses to run as root) and for a normal user with sudo (servers
# run as that user; sudo is used only for apt-get and make install).

SNOWID_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# PG_CONFIG may name another installation of PostgreSQL 15 (for instance
# a private copy); the binaries are then taken from it too.
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
PG_BINDIR=$("$PG_CONFIG" --bindir)
export PATH="$PG_BINDIR:$PATH"

# Run a command as root.
as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# The OS user that runs servers and tests.
runner_user() {
	if [ "$(id -u)" -eq 0 ]; then echo postgres; else id -un; fi
}

# Run a command as the runner user, keeping the environment.
as_runner() {
	if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# Install the Debian packages that are missing (server and headers together,
# so that they are the same minor release).
ensure_packages() {
	local missing=()
	local pkg
	for pkg in "$@"; do
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" ||
			missing+=("$pkg")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "snowid: installing ${missing[*]}"
	as_root apt-get update -qq &&
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			postgresql-15 postgresql-server-dev-15 "${missing[@]}" >/dev/null
}

# Build snowid with warnings as errors and install it into PostgreSQL 15.
build_and_install() {
	local log=${1:-/dev/stdout}
	(
		cd "$SNOWID_SRC" &&
			make -s clean PG_CONFIG="$PG_CONFIG" &&
			make -s PG_CONFIG="$PG_CONFIG" COPT="-Wall -Wextra -Werror -Wno-unused-parameter" &&
			as_root make -s install PG_CONFIG="$PG_CONFIG"
	) >"$log" 2>&1
}

# Copy the source tree (without build or test output) to a new directory
# owned by the runner user, and print its path.
copy_tree_for_runner() {
	local dest
	dest=$(mktemp -d "${TMPDIR:-/tmp}/snowid-test.XXXXXX")
	tar -C "$SNOWID_SRC" --exclude=.git --exclude='*.o' --exclude='*.so' \
		--exclude='*.bc' --exclude=results --exclude=tmp_check \
		--exclude=tmp_regress --exclude=tmp_isolation --exclude=output_iso \
		-cf - . | tar -C "$dest" -xf -
	if [ "$(id -u)" -eq 0 ]; then chown -R postgres "$dest"; fi
	echo "$dest"
}
