#!/usr/bin/env bash
# Run a test target of the Makefile (installcheck, prove) as a user that
# PostgreSQL accepts, on a copy of the tree that user owns:
#
#   bash test/make.sh installcheck [PGHOST=... PGPORT=... PGUSER=...]
#   bash test/make.sh prove [PROVE_TESTS='test/t/020_tickets.pl']
#
# As root, the target runs as the postgres OS user (servers refuse root,
# and with Debian's peer authentication that user is the postgres role); as
# anyone else, as that user.  The copy keeps the tree clean and is kept for
# its results: results/, regression.diffs, output_iso/, tmp_check/log/.
# PG_CONFIG names the PostgreSQL 15 installation (as for test/run-tests.sh).
set -u
. "$(dirname "$0")/lib.sh"

if [ $# -eq 0 ]; then
	sed -n '2,12s/^# \{0,1\}//p' "$0"
	exit 2
fi

work=$(copy_tree_for_runner)
echo "snowid: running 'make $*' as $(runner_user) in $work"
cd "$work" || exit 1
as_runner make PG_CONFIG="$PG_CONFIG" with_llvm=no "$@"
rc=$?
for f in regression.diffs output_iso/regression.diffs; do
	[ -f "$f" ] && { echo "--- $work/$f"; cat "$f"; }
done
echo "snowid: results in $work"
exit $rc
