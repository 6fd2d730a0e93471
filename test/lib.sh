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

# ---- throwaway servers for the benchmarks (test/bench/*.sh) ----
#
#   sdir=$(bench_scratch NAME)        a directory the runner owns
#   trap bench_cleanup EXIT           stops every server below, removes sdir
#   bench_server DATA LOG PORT [BINDIR] [CONF_LINE...]
#
# bench_server runs initdb (of BINDIR, else the PATH's) into DATA as the
# runner with trust authentication, appends to its postgresql.conf the
# port, no TCP listener, the socket in DATA's parent directory and each
# CONF_LINE, and starts it with its log in LOG.  bench_cleanup stops what
# bench_server started (immediate: a benchmark's data is thrown away) and
# removes the scratch directories; a script with a cleanup of its own calls
# it from there.
BENCH_SERVERS=()
BENCH_SCRATCH=()
bench_scratch() {
	local d
	d=$(mktemp -d "${TMPDIR:-/tmp}/snowid-bench-$1.XXXXXX") || return 1
	[ "$(id -u)" -eq 0 ] && chown postgres "$d"
	echo "$d"
}

bench_server() {
	local data=$1 log=$2 port=$3 bin=${4:+$4/}
	shift 3
	[ $# -gt 0 ] && shift
	BENCH_SCRATCH+=("$(dirname "$data")")
	as_runner "${bin}initdb" -D "$data" -A trust >/dev/null || return 1
	{
		echo "port = $port"
		echo "listen_addresses = ''"
		echo "unix_socket_directories = '$(dirname "$data")'"
		[ $# -gt 0 ] && printf '%s\n' "$@"
	} | as_runner tee -a "$data/postgresql.conf" >/dev/null
	BENCH_SERVERS+=("$bin|$data")
	as_runner "${bin}pg_ctl" -D "$data" -l "$log" -w start >/dev/null
}

bench_cleanup() {
	local s d
	for s in ${BENCH_SERVERS[@]+"${BENCH_SERVERS[@]}"}; do
		as_runner "${s%%|*}pg_ctl" -D "${s#*|}" -m immediate stop >/dev/null 2>&1 || true
	done
	for d in ${BENCH_SCRATCH[@]+"${BENCH_SCRATCH[@]}"}; do
		rm -rf "$d"
	done
	return 0
}

# psql as the runner: quiet, unaligned, stopping at the first error.
q() { as_runner psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

# Samples of a benchmark and their summaries: add KEY VALUE; med KEY (the
# median); range KEY (lowest–highest); ratio A B (A / B, 3 decimals).
declare -A samples
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "n/a"; else printf "%.3f", a / b }'; }
add() { samples[$1]="${samples[$1]:-} $2"; }
med() { printf '%s\n' ${samples[$1]} | median; }
range() { printf '%s\n' ${samples[$1]} | sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.2f–%.2f", lo, hi}'; }
