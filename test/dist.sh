#!/usr/bin/env bash
# A release a packager can take (issue 32): the versions agree (META.json,
# snowid.control's default_version, the newest upgrade script), META.json
# holds what PGXN's meta spec 1.0.0 requires, and the zip `make dist` makes
# (git archive of HEAD and the released update scripts: one top folder
# snowid-<version>/, META.json in it) builds, installs and passes `make
# installcheck` from a clean directory.
#
#   bash test/dist.sh      # prints "ok - ..." / "not ok - ..." and ends
#                          # with "dist: N passed, M failed"
#
# PostgreSQL: the installation of PG_CONFIG (default Debian's 15); the
# installcheck runs on servers of its own (port SNOWID_DIST_PORT, default
# 55479).  Needs the git history (a clone) and unzip.
set -u
. "$(dirname "$0")/lib.sh"

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
	echo "dist: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
}

ensure_packages unzip >/dev/null || { not_ok "unzip could not be installed"; finish; }

# ---- the versions agree, META.json is complete ----
meta_out=$(/usr/bin/python3 - "$SNOWID_SRC" <<'PY'
import json, os, re, sys
src = sys.argv[1]
bad = []
def need(cond, what):
    print(('ok ' if cond else 'bad ') + what)
meta = json.load(open(os.path.join(src, 'META.json')))
control = open(os.path.join(src, 'snowid.control')).read()
m = re.search(r"^default_version\s*=\s*'([0-9]+(?:\.[0-9]+)*)'", control, re.M)
default = m.group(1) if m else None
semver = re.compile(r'^[0-9]+\.[0-9]+\.[0-9]+$')
for key in ('name', 'abstract', 'version', 'maintainer', 'license', 'provides', 'meta-spec'):
    need(key in meta, f'META.json has the required key "{key}"')
need(meta.get('meta-spec', {}).get('version') == '1.0.0', 'META.json follows meta spec 1.0.0')
need(meta.get('name') == 'snowid', 'META.json names the distribution snowid')
need(bool(semver.match(str(meta.get('version', '')))), 'META.json version is a semantic version')
need(meta.get('license') in ('postgresql', 'bsd', 'mit', 'apache_2_0', 'gpl_3', 'lgpl_3_0'),
     'META.json license is one the spec names')
want = (default + '.0') if default and default.count('.') == 1 else default
need(meta.get('version') == want, f'META.json version {meta.get("version")} is default_version {default} of snowid.control')
prov = meta.get('provides', {}).get('snowid', {})
need(prov.get('version') == want, f'META.json provides snowid {prov.get("version")}, the same version')
need(bool(prov.get('file')) and os.path.isfile(os.path.join(src, prov.get('file', ''))),
     'the file META.json names for snowid exists')
need(meta.get('prereqs', {}).get('runtime', {}).get('requires', {}).get('PostgreSQL') == '15.0.0',
     'META.json requires PostgreSQL 15.0.0 at run time')
def key(v): return tuple(int(x) for x in v.split('.'))
# the hops in the tree and the released ones (sql/updates/released.txt)
names = os.listdir(os.path.join(src, 'sql', 'updates'))
names += [l.split()[1] for l in open(os.path.join(src, 'sql', 'updates', 'released.txt'))
          if re.match(r'^[0-9a-f]{40}\s+\S', l)]
ups = [re.match(r'^snowid--([0-9.]+)--([0-9.]+)\.sql$', f) for f in names]
targets = sorted((m.group(2) for m in ups if m), key=key)
need(bool(targets) and targets[-1] == default,
     f'the newest update script goes to {targets[-1] if targets else None}, the default_version')
PY
)
while read -r verdict what; do
	if [ "$verdict" = ok ]; then ok "$what"; else not_ok "$what"; fi
done <<<"$meta_out"
version=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$SNOWID_SRC/META.json")

check "README's Install names this version's zip (snowid-$version.zip)" \
	grep -qF "snowid-$version.zip && cd snowid-$version " "$SNOWID_SRC/README.md"

# ---- make dist, unpacked where nothing else is ----
git -C "$SNOWID_SRC" rev-parse -q --verify HEAD >/dev/null 2>&1 || {
	not_ok "make dist needs the git history: $SNOWID_SRC is not a clone"
	finish
}
zip=$SNOWID_SRC/snowid-$version.zip
rm -f "$zip"
check "make dist makes snowid-$version.zip" \
	bash -c "make -s -C '$SNOWID_SRC' dist PG_CONFIG='$PG_CONFIG' >/dev/null && test -s '$zip'"
[ -s "$zip" ] || finish
listing=$(unzip -Z1 "$zip")
check "every file of the zip lies in one folder snowid-$version/" \
	bash -c "! grep -v '^snowid-$version/' <<<'$listing' | grep -q ."
check "META.json lies at the top of that folder" grep -qx "snowid-$version/META.json" <<<"$listing"
check "the zip holds the install script's parts, the C sources and the tests" \
	bash -c "grep -q '^snowid-$version/sql/install/00_header.sql$' <<<'$listing' &&
		grep -q '^snowid-$version/src/generator.c$' <<<'$listing' &&
		grep -q '^snowid-$version/expected/generator.out$' <<<'$listing'"

released=$(sed -n 's/^[0-9a-f]\{40\} \{1,\}\([^ ]*\).*/\1/p' "$SNOWID_SRC/sql/updates/released.txt")
released_missing=
for f in $released; do
	grep -qx "snowid-$version/sql/released/$f" <<<"$listing" || released_missing+=" $f"
done
check "the zip holds in sql/released/ the $(wc -w <<<"$released") released update scripts sql/updates/released.txt names${released_missing:+; missing:$released_missing}" \
	test -z "$released_missing"

dir=$(mktemp -d "${TMPDIR:-/tmp}/snowid-dist.XXXXXX")
unzip -q "$zip" -d "$dir"
rm -f "$zip"
[ "$(id -u)" -eq 0 ] && chown -R postgres "$dir"
tree=$dir/snowid-$version
check "it builds from the zip (warnings as errors)" \
	as_runner bash -c "cd '$tree' && make -s PG_CONFIG='$PG_CONFIG' with_llvm=no COPT='-Wall -Wextra -Werror -Wno-unused-parameter' >'$dir/build.log' 2>&1"
check "it installs from the zip" \
	bash -c "cd '$tree' && $(declare -f as_root); as_root make -s install PG_CONFIG='$PG_CONFIG' with_llvm=no >'$dir/install.log' 2>&1"
check "make installcheck passes from the zip (pg_regress and isolation, servers of their own)" \
	as_runner bash -c "cd '$tree' && make -s installcheck PG_CONFIG='$PG_CONFIG' SNOWID_TEMP_INSTANCE=1 SNOWID_TEMP_PORT=${SNOWID_DIST_PORT:-55479} >'$dir/installcheck.log' 2>&1"
if [ "$fail" -gt 0 ]; then
	for f in build install installcheck; do
		[ -f "$dir/$f.log" ] && { echo "--- $f.log (last 30 lines)"; tail -30 "$dir/$f.log"; }
	done
	[ -f "$tree/regression.diffs" ] && head -60 "$tree/regression.diffs"
else
	rm -rf "$dir"
fi
finish
