#!/usr/bin/env bash
# Build pgEdge's snowflake extension from its source tarball into a
# PostgreSQL installation (the one test/run-tests.sh is testing), for the
# TAP test of moving a snowflake-keyed table to snowid (test/t/083_from_pgedge.pl).
#
#   bash test/snowflake-build.sh /path/to/pg_config
#
# The tarball is $SNOWID_SNOWFLAKE_TARBALL, by default shared/vendor/
# pgedge-snowflake-2.6.0.tar.gz in the repository's parent directory (a
# `git archive` of pgEdge/snowflake's tag v2.6.0, top directory
# snowflake-2.6.0/).  It is a PGXS extension of one C file: built with
#   make USE_PGXS=1 PG_CONFIG=<pg_config> with_llvm=no
# in a temporary directory (a second or two) and installed into the
# installation of that pg_config, as root (or with sudo for the install
# where the user cannot write there).
#
# Reused on later runs: <prefix>/.snowid-snowflake-stamp records the
# version and the tarball's SHA-256; the build is skipped while
# snowflake.so and a snowflake.control of that version are there and the
# stamp matches (or there is no stamp: installed by someone else).
#
# Prints progress and reasons on stderr, prefixed "snowflake-build: ".
# Exit status: 0 snowflake is installed there; 3 it is not for this run (no
# tarball: the last line says why); 1 the build failed (the log's tail is
# printed).
set -euo pipefail

say() { echo "snowflake-build: $*" >&2; }

as_owner() {
	if [ "$(id -u)" -eq 0 ] || { [ -w "$prefix" ] && [ -w "$pkglibdir" ] && [ -w "$sharedir/extension" ]; }; then
		"$@"
	else
		sudo "$@"
	fi
}

if [ $# -ne 1 ]; then
	echo "usage: $0 PG_CONFIG" >&2
	exit 2
fi
pg_config=$1
src=$(cd "$(dirname "$0")/.." && pwd)
tarball=${SNOWID_SNOWFLAKE_TARBALL:-$(dirname "$src")/shared/vendor/pgedge-snowflake-2.6.0.tar.gz}

if [ ! -r "$tarball" ]; then
	say "no pgEdge snowflake source tarball at $tarball (set SNOWID_SNOWFLAKE_TARBALL to one): the pgEdge snowflake test is skipped"
	exit 3
fi

top=$(tar -tzf "$tarball" | sed -n '1{s,/.*,,p}')
version=$(tar -xOzf "$tarball" "$top/snowflake.control" 2>/dev/null |
	sed -n "s/^default_version = '\(.*\)'/\1/p")
if [ -z "$version" ]; then
	say "$tarball holds no $top/snowflake.control with a default_version: the pgEdge snowflake test is skipped"
	exit 3
fi

major=$("$pg_config" --version | sed -n 's/^PostgreSQL \([0-9]*\).*/\1/p')
sum=$(sha256sum "$tarball" | cut -d' ' -f1)
want="snowflake $version sha256:$sum"
prefix=$(dirname "$("$pg_config" --bindir)")
pkglibdir=$("$pg_config" --pkglibdir)
sharedir=$("$pg_config" --sharedir)
stamp=$prefix/.snowid-snowflake-stamp

installed() {
	[ -f "$pkglibdir/snowflake.so" ] &&
		grep -qF "default_version = '$version'" "$sharedir/extension/snowflake.control" 2>/dev/null || return 1
	[ ! -e "$stamp" ] || [ "$(cat "$stamp")" = "$want" ]
}

umask 022
as_owner touch "$prefix/.snowid-snowflake-lock"
exec 9<"$prefix/.snowid-snowflake-lock"
flock 9

if installed; then
	say "pgEdge snowflake $version already installed in $prefix (PostgreSQL $major)"
	exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/snowid-snowflake.XXXXXX")
trap 'rm -rf "$work"' EXIT
log=$work/build.log
say "building pgEdge snowflake $version into $prefix (PostgreSQL $major)"
start=$SECONDS
{
	tar -C "$work" -xzf "$tarball" &&
		cd "$work/$top" &&
		make USE_PGXS=1 PG_CONFIG="$pg_config" with_llvm=no &&
		echo "incomplete: $want" | as_owner tee "$stamp" >/dev/null &&
		as_owner make USE_PGXS=1 PG_CONFIG="$pg_config" with_llvm=no install
} >"$log" 2>&1 || {
	tail -n 40 "$log" >&2
	say "building pgEdge snowflake $version into $prefix failed"
	exit 1
}
echo "$want" | as_owner tee "$stamp" >/dev/null
if ! installed; then
	say "pgEdge snowflake $version was installed into $prefix, but snowflake.so or its control file is not there"
	exit 1
fi
say "pgEdge snowflake $version built and installed into $prefix in $((SECONDS - start)) s"
