#!/usr/bin/env bash
# Build Citus from its source tarball into a PostgreSQL installation (the one
# test/run-tests.sh is testing), for the Citus TAP tests (test/t/07x_*.pl).
#
#   bash test/citus-build.sh /path/to/pg_config
#
# The tarball is $SNOWID_CITUS_TARBALL, by default shared/vendor/
# citus-14.0.1.tar.gz in the repository's parent directory (a checkout
# without ../shared has none).  Citus is configured with
#   ./configure PG_CONFIG=<pg_config> --without-libcurl --without-lz4 --without-zstd
# (no packages beyond PostgreSQL's own build tools), built in a temporary
# directory and installed into the installation of that pg_config, as root
# (or with sudo for the install where the user cannot write there); the
# installed files are readable by everyone, so servers run as the postgres
# OS user load them.  About half a minute on two cores.
#
# Reused on later runs: the installation's <prefix>/.snowid-citus-stamp
# records the version, the tarball's SHA-256 and the configure options of
# the last build; the build is skipped while citus.so there reports the
# tarball's version and the stamp matches (or there is no stamp: Citus was
# installed by someone else).  A PostgreSQL rebuilt by test/pg-build.sh
# starts without either, so Citus is rebuilt into it.
#
# Prints progress and reasons on stderr, prefixed "citus-build: ".  Exit
# status: 0 Citus is installed there; 3 Citus is not for this run (no
# tarball, or a PostgreSQL major the tarball's Citus does not support: the
# last line says why); 1 the build failed (the log's tail is printed).
set -euo pipefail

say() { echo "citus-build: $*" >&2; }

# Run a command that writes into the installation: directly where this user
# can write there (root, or an installation of one's own), else with sudo.
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
tarball=${SNOWID_CITUS_TARBALL:-$(dirname "$src")/shared/vendor/citus-14.0.1.tar.gz}

if [ ! -r "$tarball" ]; then
	say "no Citus source tarball at $tarball (set SNOWID_CITUS_TARBALL to one): the Citus tests are skipped"
	exit 3
fi

major=$("$pg_config" --version | sed -n 's/^PostgreSQL \([0-9]*\).*/\1/p')
# The tarball's top directory names the version (citus-14.0.1/); its
# configure script lists the PostgreSQL majors it builds against.
version=$(tar -tzf "$tarball" | sed -n '1{s,^citus-\([^/]*\)/.*,\1,p}')
if [ -z "$version" ]; then
	say "$tarball does not hold a citus-<version>/ directory: the Citus tests are skipped"
	exit 3
fi
majors=$(tar -xOzf "$tarball" "citus-$version/configure" |
	grep -o "\"\$version_num\" != '[0-9]*'" | grep -o '[0-9][0-9]*' | tr '\n' ' ' || true)
majors=${majors% }
if [[ " $majors " != *" $major "* ]]; then
	say "Citus $version builds against PostgreSQL ${majors:-(none found in its configure)}, not $major: the Citus tests are skipped"
	exit 3
fi

configure_opts="--without-libcurl --without-lz4 --without-zstd"
sum=$(sha256sum "$tarball" | cut -d' ' -f1)
want="citus $version sha256:$sum $configure_opts"
prefix=$(dirname "$("$pg_config" --bindir)")
pkglibdir=$("$pg_config" --pkglibdir)
sharedir=$("$pg_config" --sharedir)
stamp=$prefix/.snowid-citus-stamp

# True if that installation holds Citus of this version (citus.so says so in
# its version string, "Citus 14.0.1 on ...") and the stamp, if any, is this
# build's.
installed() {
	[ -f "$pkglibdir/citus.so" ] && [ -f "$sharedir/extension/citus.control" ] &&
		grep -aqF "Citus $version on " "$pkglibdir/citus.so" || return 1
	[ ! -e "$stamp" ] || [ "$(cat "$stamp")" = "$want" ]
}

umask 022
# One build at a time per installation (the lock file lies beside the stamp).
as_owner touch "$prefix/.snowid-citus-lock"
exec 9<"$prefix/.snowid-citus-lock"
flock 9

if installed; then
	say "Citus $version already installed in $prefix (PostgreSQL $major)"
	exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/snowid-citus.XXXXXX")
trap 'rm -rf "$work"' EXIT
log=$work/build.log
say "building Citus $version into $prefix (PostgreSQL $major)"
start=$SECONDS
# A stamp that is not this build's while files are replaced: an interrupted
# install is rebuilt next time.
{
	tar -C "$work" -xzf "$tarball" &&
		cd "$work/citus-$version" &&
		./configure PG_CONFIG="$pg_config" $configure_opts &&
		make -j"$(nproc)" &&
		echo "incomplete: $want" | as_owner tee "$stamp" >/dev/null &&
		as_owner make install PG_CONFIG="$pg_config"
} >"$log" 2>&1 || {
	tail -n 40 "$log" >&2
	say "building Citus $version into $prefix failed"
	exit 1
}
echo "$want" | as_owner tee "$stamp" >/dev/null
if ! installed; then
	say "Citus $version was installed into $prefix, but $pkglibdir/citus.so does not say it is Citus $version"
	exit 1
fi
say "Citus $version built and installed into $prefix in $((SECONDS - start)) s"
