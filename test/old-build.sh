#!/usr/bin/env bash
# Build snowid 1.10, the last release members of 1.x run, from this
# repository's git history, into a copy of the PostgreSQL installation
# under test, for the TAP test of an old member against this registry
# (test/t/102_request_compat.pl).
#
#   bash test/old-build.sh /path/to/pg_config [DEST]
#
# The commit is the last one whose snowid.control says default_version =
# '1.10' (the parent of the commit that began 1.11).  The installation is
# copied once (binaries, libraries, shared files and server headers, with
# their paths under DEST as pg_config reports them, so that the copy finds
# its own files), then `git archive` of that commit is built with PGXS and
# installed into the copy: only snowid is compiled (well under a minute).
# DEST defaults to $SNOWID_OLD_ROOT or /var/cache/snowid-old/1.10-pg<major>
# (~/.cache/snowid-old/... for a user other than root).
#
# Reused on later runs: DEST/.snowid-old-stamp records the commit and the
# PostgreSQL version; the build is skipped while both match and snowid.so
# is there.
#
# Prints progress and reasons on stderr, prefixed "old-build: ", and on
# stdout one line: the installation's path for PostgreSQL::Test::Cluster's
# install_path (what SNOWID_OLD_INSTALL should hold).  Exit status: 0 built
# or reused; 3 not for this run (no git history with 1.10: the last line
# says why); 1 the build failed (the log's tail is printed).
set -euo pipefail

say() { echo "old-build: $*" >&2; }

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 PG_CONFIG [DEST]" >&2
	exit 2
fi
pg_config=$1
src=$(cd "$(dirname "$0")/.." && pwd)
major=$("$pg_config" --version | sed -n 's/^PostgreSQL \([0-9]*\).*/\1/p')
if [ "$(id -u)" -eq 0 ]; then
	cache=/var/cache/snowid-old
else
	cache=${XDG_CACHE_HOME:-$HOME/.cache}/snowid-old
fi
dest=${2:-${SNOWID_OLD_ROOT:-$cache/1.10-pg$major}}

if ! command -v git >/dev/null || ! git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	say "$src is not a git checkout: the old member test is skipped"
	exit 3
fi
# the commit that took 1.10 out of snowid.control; 1.10 is its parent
ended=$(git -C "$src" log -S"default_version = '1.10'" --format=%H --max-count=1 -- snowid.control)
if [ -z "$ended" ] || ! commit=$(git -C "$src" rev-parse --verify -q "$ended^"); then
	say "the git history here does not reach snowid 1.10 (a shallow clone?): the old member test is skipped"
	exit 3
fi
if ! git -C "$src" show "$commit:snowid.control" | grep -q "^default_version = '1.10'"; then
	say "commit $commit is not snowid 1.10: the old member test is skipped"
	exit 3
fi

bindir=$("$pg_config" --bindir)
new_config=$dest$bindir/pg_config
install_path=$(dirname "$dest$bindir")
stamp=$dest/.snowid-old-stamp
want="$commit $("$pg_config" --version)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] &&
	[ -f "$dest$("$pg_config" --pkglibdir)/snowid.so" ]; then
	say "snowid 1.10 ($commit) is already built in $dest"
	echo "$install_path"
	exit 0
fi

if [ ! -x "$new_config" ]; then
	say "copying the PostgreSQL installation of $pg_config into $dest"
	for d in "$bindir" "$("$pg_config" --pkglibdir)" "$("$pg_config" --sharedir)" \
		"$("$pg_config" --includedir)" "$("$pg_config" --includedir-server)"; do
		mkdir -p "$dest$d"
		cp -a "$d/." "$dest$d/"
	done
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git -C "$src" archive "$commit" | tar -x -C "$work"
say "building snowid 1.10 ($commit) into $dest"
if ! (cd "$work" && make -s PG_CONFIG="$new_config" with_llvm=no >"$work/build.log" 2>&1 &&
	make -s PG_CONFIG="$new_config" with_llvm=no install >>"$work/build.log" 2>&1); then
	tail -n 30 "$work/build.log" >&2
	say "the build of snowid 1.10 failed"
	exit 1
fi
echo "$want" >"$stamp"
echo "$install_path"
