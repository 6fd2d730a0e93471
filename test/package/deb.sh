#!/usr/bin/env bash
# The Debian package (issue 40): debian/ builds postgresql-15-snowid the
# way PGDG builds extensions (pg_buildext, dpkg-buildpackage -us -uc -b)
# from a copy of the tree, and the package holds the library, its bitcode
# (Debian's 15 is built with LLVM), the control file, the install script
# and every upgrade script.  Then it is installed with dpkg -i, a throwaway
# server preloads snowid from it and CREATE EXTENSION snowid works, and it
# is removed with dpkg -r.
#
#   bash test/package/deb.sh      # prints "ok - ..." / "not ok - ..." and
#                                 # ends with "deb: N passed, M failed"
#   SNOWID_DEB_NO_INSTALL=1 bash test/package/deb.sh   # build and inspect only
#
# PostgreSQL 15 only (PG_SUPPORTED_VERSIONS=15: the one major Debian 12
# packages).  The server listens on a socket in its own directory (port
# SNOWID_DEB_PORT, default 55483).  The snowid files that `make install`
# put into PostgreSQL 15 before (test/run-tests.sh's) are saved first and
# put back after dpkg -r, byte for byte, also when the script stops early.
# Skipped, with the reason, where it cannot run: no dpkg, no Debian
# postgresql-15, the packaging tools cannot be installed, or the machine
# has postgresql-15-snowid installed already.
set -u
. "$(dirname "$0")/../lib.sh"
PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
# The checkout may lie where the postgres OS user cannot go (a mode-700
# directory of root's), and initdb and pg_ctl need a working directory
# they can read: work from /.
cd / || exit 1

pass=0
fail=0
ok() { echo "ok - $*"; pass=$((pass + 1)); }
not_ok() { echo "not ok - $*"; fail=$((fail + 1)); }
check() { # check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@"; then ok "$what"; else not_ok "$what"; fi
}
finish() {
	echo "deb: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}
skip() {
	echo "deb: skipped: $*"
	exit 0
}

command -v dpkg >/dev/null || skip "no dpkg (not Debian)"
{ [ -x /usr/lib/postgresql/15/bin/postgres ] && [ -x "$PG_CONFIG" ]; } ||
	skip "Debian's postgresql-15 and postgresql-server-dev-15 are not installed"
ensure_packages debhelper dpkg-dev postgresql-server-dev-all >/dev/null ||
	skip "the packaging tools (debhelper, dpkg-dev, postgresql-server-dev-all) could not be installed"

pkg=postgresql-15-snowid
[ "$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null)" != installed ] ||
	skip "$pkg is installed on this machine: left alone"
pkglibdir=$("$PG_CONFIG" --pkglibdir)
extdir=$("$PG_CONFIG" --sharedir)/extension
control_version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$SNOWID_SRC/snowid.control")
deb_version=$(dpkg-parsechangelog -l "$SNOWID_SRC/debian/changelog" -S Version)
work=$(mktemp -d "${TMPDIR:-/tmp}/snowid-deb.XXXXXX")
src=$work/snowid-${deb_version%-*}

# ---- build from a copy of the tree (its files that git does not ignore) ----
# and the released update scripts, which the build takes from the git
# history (sql/updates/released.txt) that the copy lacks: made here first.
mkdir -p "$src"
if git -C "$SNOWID_SRC" rev-parse -q --verify HEAD >/dev/null 2>&1; then
	make -s -C "$SNOWID_SRC" released PG_CONFIG="$PG_CONFIG" >"$work/released.log" 2>&1 ||
		{ not_ok "make released takes the released update scripts from git"; cat "$work/released.log"; finish; }
	git -C "$SNOWID_SRC" ls-files -z --cached --others --exclude-standard |
		tar -C "$SNOWID_SRC" --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -C "$src" -xf -
	tar -C "$SNOWID_SRC" -cf - sql/released | tar -C "$src" -xf -
else
	tar -C "$SNOWID_SRC" --exclude=.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
		--exclude='./debian/postgresql-*' --exclude=./debian/files --exclude='./debian/*.substvars' \
		--exclude='./debian/*.log' --exclude=./debian/debhelper-build-stamp --exclude=./debian/.debhelper \
		-cf - . | tar -C "$src" -xf -
fi
# A repository of its own, to see what the build leaves behind.
git -C "$src" init -q && git -C "$src" add -A &&
	git -C "$src" -c user.name=deb -c user.email=deb@localhost commit -q -m copy

export PG_SUPPORTED_VERSIONS=15
check "debian/control is what pg_buildext updatecontrol makes of debian/control.in for 15" \
	bash -c "cd '$src' && pg_buildext checkcontrol >'$work/checkcontrol.log' 2>&1"
# nocheck: the regression tests run elsewhere in the suite (and as root
# debian/rules skips them: snowid's installcheck refuses root).
check "dpkg-buildpackage -us -uc -b builds the package from the copy" \
	bash -c "cd '$src' && DEB_BUILD_OPTIONS='nocheck parallel=1' DEB_BUILD_PROFILES=nocheck \
		dpkg-buildpackage -us -uc -b >'$work/build.log' 2>&1"
deb=$work/${pkg}_${deb_version}_$(dpkg --print-architecture).deb
if [ ! -s "$deb" ]; then
	not_ok "$deb was made"
	tail -40 "$work/build.log"
	finish
fi
others=
for f in "$work"/*.deb; do
	case $(basename "$f") in
	"${pkg}_"* | "${pkg}-dbgsym_"*) ;;
	*) others+=" $(basename "$f")" ;;
	esac
done
check "it makes $pkg only (and its -dbgsym), no package for another major${others:+; also:$others}" \
	test -z "$others"
tree_clean() {
	local out
	out=$(git -C "$src" status --porcelain --untracked-files=all) && [ -z "$out" ] && return 0
	echo "$out" | head -20 | sed 's/^/  left: /'
	return 1
}
check "the build leaves no file in the tree that git status shows" tree_clean

files=$(dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|')
has() { grep -qx "$1" <<<"$files"; }
check "it holds $pkglibdir/snowid.so" has "$pkglibdir/snowid.so"
check "it holds $extdir/snowid.control" has "$extdir/snowid.control"
check "it holds the install script $extdir/snowid--$control_version.sql" \
	has "$extdir/snowid--$control_version.sql"
# The released scripts (sql/updates/released.txt) and the hops being made.
scripts=($(sed -n 's/^[0-9a-f]\{40\} \{1,\}\([^ ]*\).*/\1/p' "$src/sql/updates/released.txt") \
	$(cd "$src/sql/updates" && ls snowid--*--*.sql))
scripts_missing=
for f in "${scripts[@]}"; do
	has "$extdir/$f" || scripts_missing+=" $f"
done
check "it holds the ${#scripts[@]} update scripts (snowid--1.0.sql among them) of sql/updates/released.txt and sql/updates/${scripts_missing:+; missing:$scripts_missing}" \
	test -z "$scripts_missing"
depends=$(dpkg-deb -f "$deb" Depends)
depends_on() { grep -qE "(^|, )$1( |,|$)" <<<"$depends"; }
no_bitcode() { ! grep -q '/bitcode/' <<<"$files"; }
# PGXS emits bitcode where PostgreSQL was built with LLVM (Debian's 15 is);
# pg_buildext then adds the dependency on the server's JIT.
if grep -qE '^with_llvm\s*=\s*yes' "$(dirname "$("$PG_CONFIG" --pgxs)")/../Makefile.global"; then
	check "it holds the LLVM bitcode and depends on postgresql-15-jit-llvm (Debian's 15 is built with LLVM)" \
		eval 'has "$pkglibdir/bitcode/snowid.index.bc" && depends_on postgresql-15-jit-llvm'
else
	check "it holds no LLVM bitcode (this 15 is built without LLVM)" no_bitcode
fi
check "it depends on postgresql-15 and libpq5 (the registry worker's)" \
	eval 'depends_on postgresql-15 && depends_on libpq5'

if [ -n "${SNOWID_DEB_NO_INSTALL:-}" ]; then
	echo "deb: dpkg -i and the server skipped (SNOWID_DEB_NO_INSTALL is set); the package is $deb"
	finish
fi

# ---- install it, use it, remove it ----
# Save the snowid files of PostgreSQL 15 that no package owns (a make
# install's), to put them back after dpkg -r: dpkg -i takes them over, and
# dpkg -r removes them.
saved=()
for f in "$pkglibdir/snowid.so" "$pkglibdir/bitcode/snowid.index.bc" "$pkglibdir/bitcode/snowid" \
	"$extdir"/snowid.control "$extdir"/snowid--*.sql; do
	[ -e "$f" ] && saved+=("${f#/}")
done
saved_sums=
if [ ${#saved[@]} -gt 0 ]; then
	tar -C / -cf "$work/saved.tar" "${saved[@]}" || {
		not_ok "the installed snowid files could not be saved: nothing installed"
		finish
	}
	saved_sums=$(tar -tf "$work/saved.tar" | grep -v '/$' | sed 's|^|/|' | sort | xargs sha256sum)
fi
installed=
restore() {
	[ -n "$installed" ] || return 0
	installed=
	as_root dpkg -r "$pkg" >"$work/remove.log" 2>&1
	[ -f "$work/saved.tar" ] && as_root tar -C / -xpf "$work/saved.tar"
	return 0
}
trap 'bench_cleanup; restore' EXIT
trap 'exit 1' HUP INT TERM

installed=1
if as_root dpkg -i "$deb" >"$work/install.log" 2>&1; then
	ok "dpkg -i installs $pkg"
else
	not_ok "dpkg -i installs $pkg"
	tail -20 "$work/install.log"
	finish
fi
listed=$(dpkg -L "$pkg")
lists() { grep -qx "$1" <<<"$listed"; }
check "dpkg -L $pkg lists snowid.so, snowid.control and snowid--$control_version.sql" \
	eval 'lists "$pkglibdir/snowid.so" && lists "$extdir/snowid.control" && lists "$extdir/snowid--$control_version.sql"'
check "dpkg --verify finds its files as the package has them" as_root dpkg --verify "$pkg"

sdir=$(bench_scratch deb)
port=${SNOWID_DEB_PORT:-55483}
check "a throwaway server starts with shared_preload_libraries = 'snowid' from the package" \
	bench_server "$sdir/data" "$sdir/server.log" "$port" /usr/lib/postgresql/15/bin \
	"shared_preload_libraries = 'snowid'" "snowid.node_id = 1"
sql() { q -h "$sdir" -p "$port" -d postgres -c "$1" 2>>"$work/sql.log"; }
sql "CREATE EXTENSION snowid"
check "CREATE EXTENSION snowid creates version $control_version" \
	test "$(sql "SELECT extversion FROM pg_extension WHERE extname = 'snowid'")" = "$control_version"
check "snowid_next() returns increasing bigints (1,000 in one query)" \
	test "$(sql "SELECT pg_typeof(min(id))::text || ' ' || bool_and(id > prev)::text
		FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev
		      FROM (SELECT n, snowid_next() AS id FROM generate_series(1, 1000) AS n) s) t")" = "bigint true"
check "snowid_decode() of a new ID gives node 1 and a time within a minute of now()" \
	test "$(sql "SELECT (d).node = 1 AND abs(extract(epoch FROM (d).ts - now())) < 60
		FROM (SELECT snowid_decode(snowid_next()) AS d) s")" = t
stop_server() { as_runner /usr/lib/postgresql/15/bin/pg_ctl -D "$sdir/data" -m fast -w stop >/dev/null; }
check "the server stops" stop_server
[ -s "$work/sql.log" ] && sed 's/^/  /' "$work/sql.log"

remove_package() { as_root dpkg -r "$pkg" >"$work/remove.log" 2>&1; }
check "dpkg -r removes $pkg" remove_package
installed=
left=$(grep -E '\.(so|sql|control|bc)$' <<<"$listed" | while read -r f; do [ -e "$f" ] && echo "$f"; done)
check "dpkg -r leaves none of the package's files" test -z "$left"
if [ -f "$work/saved.tar" ]; then
	as_root tar -C / -xpf "$work/saved.tar"
	check "PostgreSQL 15's snowid files from before are back, the same bytes (${#saved[@]} paths)" \
		test "$(tar -tf "$work/saved.tar" | grep -v '/$' | sed 's|^|/|' | sort | xargs sha256sum)" = "$saved_sums"
else
	echo "deb: no snowid was installed into PostgreSQL 15 before: none put back"
fi

if [ "$fail" -gt 0 ]; then
	for f in checkcontrol build install remove; do
		[ -f "$work/$f.log" ] && { echo "--- $work/$f.log (last 20 lines)"; tail -20 "$work/$f.log"; }
	done
	[ -f "${sdir:-}/server.log" ] && { echo "--- server log (last 20 lines)"; tail -20 "$sdir/server.log"; }
else
	rm -rf "$work"
fi
finish
