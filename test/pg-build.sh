#!/usr/bin/env bash
# Build a PostgreSQL major that this machine has no binary package for (17,
# 18, 19) from Debian's source package, into a cache directory outside the
# repository, and print the path of its pg_config.
#
#   bash test/pg-build.sh 17 18          # build what is missing, print pg_configs
#   bash test/pg-build.sh --print-pg-config 17   # path only; fails if not built
#
# The cache is $SNOWID_PG_CACHE, by default /var/cache/snowid-pg (or
# ~/.cache/snowid-pg for a user who cannot write there); major N goes to
# <cache>/N.  A build is reused on later runs and rebuilt when Debian's source
# package version changes (recorded in <cache>/N/.snowid-stamp) or when the
# last build did not finish.  Without network, an existing build is reused.
#
# Source: Debian's newer suites carry the source packages of the majors that
# this release ships no binaries for.  A deb-src entry is derived from the
# machine's own Debian source list (same mirror, same keyring) and used
# through a private apt configuration, so the system's apt state is not
# touched and no package host is named here.  The orig tarball (upstream
# source, without Debian's patches) is built with
#   configure --without-icu --without-readline --enable-tap-tests --with-ssl=openssl
# which installs what PGXS needs for installcheck and TAP tests
# (pg_regress, pg_isolation_regress, the PostgreSQL::Test perl modules);
# with SSL, as Debian's own builds, so that TAP 030 runs the registry's
# SSL configuration on every major.
#
# Beside each build it keeps PostgreSQL's own regression suite, the
# directory src/test/regress of the same source, as <cache>/N/.snowid-regress-src.tar.gz
# (about 3 MB), for test/core/run.sh; a build made before it was kept gets
# it on the next run (the source package is downloaded, nothing rebuilt).
#
# Runs as root or as a user with sudo (sudo is used only for apt-get install
# of the build tools).
set -euo pipefail

print_only=
if [ "${1:-}" = --print-pg-config ]; then
	print_only=1
	shift
fi
if [ $# -eq 0 ]; then
	echo "usage: $0 [--print-pg-config] MAJOR..." >&2
	exit 2
fi

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

say() { echo "pg-build: $*" >&2; }

default_cache() {
	local sys=/var/cache/snowid-pg
	if [ -w "$sys" ] || { [ ! -e "$sys" ] && [ -w "$(dirname "$sys")" ]; }; then
		echo "$sys"
	else
		echo "${XDG_CACHE_HOME:-$HOME/.cache}/snowid-pg"
	fi
}
cache=${SNOWID_PG_CACHE:-$(default_cache)}

# Options of the build; a change here rebuilds (they are part of the stamp).
configure_opts="--without-icu --without-readline --enable-tap-tests --with-ssl=openssl"

stamp_of() { cat "$cache/$1/.snowid-stamp" 2>/dev/null || true; }

if [ -n "$print_only" ]; then
	rc=0
	for major in "$@"; do
		if [ -n "$(stamp_of "$major")" ] && [ -x "$cache/$major/bin/pg_config" ]; then
			echo "$cache/$major/bin/pg_config"
		else
			say "PostgreSQL $major is not built in $cache (run $0 $major)"
			rc=1
		fi
	done
	exit $rc
fi

for major in "$@"; do
	case $major in
	[1-9][0-9]) ;;
	*) say "not a PostgreSQL major: $major"; exit 2 ;;
	esac
done

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9 # one build at a time per cache

# Build tools: bison and flex (newer tarballs ship no generated parsers),
# perl with IPC::Run for the TAP tests, zlib for the default configure,
# OpenSSL's headers for --with-ssl.
ensure_tools() {
	local missing=() pkg
	for pkg in gcc make bison flex perl libipc-run-perl zlib1g-dev libssl-dev bzip2 xz-utils; do
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" ||
			missing+=("$pkg")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	say "installing ${missing[*]}"
	as_root apt-get update -qq &&
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends "${missing[@]}" >&2
}

# The deb-src stanza: the first stanza of the machine's Debian source list
# whose suites include the release itself (not -security or -updates), with
# its URIs, components and keyring, for the suites that carry newer majors.
write_sources() {
	local out=$1 sys=/etc/apt/sources.list.d/debian.sources
	if [ -r "$sys" ]; then
		awk '
			function flush() {
				if (!done && types ~ /(^| )deb( |$)/ && release && uris != "") {
					print "Types: deb-src"
					print "URIs: " uris
					print "Suites: trixie sid experimental"
					print "Components: " (comps != "" ? comps : "main")
					if (signed != "") print "Signed-By: " signed
					done = 1
				}
				types = uris = comps = signed = ""; release = 0
			}
			/^[ \t]*#/ { next }
			/^[ \t]*$/ { flush(); next }
			{
				key = $1; sub(/:$/, "", key); $1 = ""; sub(/^ +/, "")
				if (key == "Types") types = $0
				else if (key == "URIs") uris = $0
				else if (key == "Components") comps = $0
				else if (key == "Signed-By") signed = $0
				else if (key == "Suites") {
					n = split($0, s, " ")
					for (i = 1; i <= n; i++) if (s[i] !~ /-/) release = 1
				}
			}
			END { flush(); if (!done) exit 1 }
		' "$sys" >"$out"
	elif [ -r /etc/apt/sources.list ]; then
		# One-line format: "deb [options] URI suite components...".
		awk '$1 == "deb" && $0 !~ /-(security|updates)/ {
				i = 2; opts = ""
				if ($2 ~ /^\[/) { while ($i !~ /\]$/) { opts = opts " " $i; i++ } opts = opts " " $i; i++ }
				uri = $i; comps = ""
				for (j = i + 2; j <= NF; j++) comps = comps " " $j
				printf "Types: deb-src\nURIs: %s\nSuites: trixie sid experimental\nComponents:%s\n", uri, comps
				if (match(opts, /signed-by=[^] ]+/)) print "Signed-By: " substr(opts, RSTART + 10, RLENGTH - 10)
				found = 1; exit
			}
			END { if (!found) exit 1 }' /etc/apt/sources.list >"$out"
	else
		return 1
	fi
}

apt_dir=$cache/apt
apt_opts=(
	-o "Dir::Etc::sourcelist=$apt_dir/snowid-src.sources"
	-o "Dir::Etc::SourceParts=$apt_dir/empty"
	-o "Dir::State::Lists=$apt_dir/lists"
	-o "Dir::Cache=$apt_dir/cache"
	-o "APT::Sandbox::User=$(id -un)"
)
apt_updated=

apt_update_private() {
	[ -n "$apt_updated" ] && return 0
	mkdir -p "$apt_dir/empty" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
	write_sources "$apt_dir/snowid-src.sources" || {
		say "found no Debian entry in /etc/apt to derive a deb-src entry from"
		return 1
	}
	say "apt-get update (private deb-src list in $apt_dir)"
	apt-get "${apt_opts[@]}" update -qq >&2 || return 1
	apt_updated=1
}

# The URI of the directory that holds the source package's files on the
# mirror (from apt's own answer, so no host is named here).
source_dir_uri() {
	apt-get "${apt_opts[@]}" source --print-uris "postgresql-$1" 2>/dev/null |
		sed -n "s/^'\(.*\)\/postgresql-$1_[^/']*\.dsc' .*/\1/p" | head -n1
}

# Mirrors sometimes list a new version in the index before its files are
# there (seen: 17.12 listed, 404, while 17.11's files were still in the
# pool).  Look for an earlier minor of the same major with the same Debian
# revision (up to four back) and take it only if its .dsc carries a good
# signature of a Debian developer (debian-keyring) and, in its signed part,
# names this source package and version and the tarball's SHA-256, which
# the download must match.  This trusts the maintainer's signature where
# apt-get source trusts the archive's.  Leaves the verified orig tarball,
# alone, in $2 (files of the listed version are removed) and prints the
# version found.
fetch_earlier_source() {
	local major=$1 dir=$2 listed upstream rev minor m v uri file enc sum orig tmp
	local helper=(/usr/lib/apt/apt-helper -o "APT::Sandbox::User=$(id -un)" download-file)
	listed=$(source_version "$major")
	uri=$(source_dir_uri "$major")
	upstream=${listed%-*}
	rev=${listed##*-}
	[ -n "$uri" ] && [ "$upstream" != "$listed" ] || return 1
	case $upstream in
	"$major".[0-9]*) minor=${upstream#"$major".} ;;
	*) return 1 ;; # a beta or release candidate has no earlier minor
	esac
	case $minor in *[!0-9]*) return 1 ;; esac
	ensure_keyring >&2 || return 1
	tmp=$dir/earlier
	for ((m = minor - 1; m >= 0 && m >= minor - 4; m--)); do
		v=$major.$m-$rev
		file=postgresql-${major}_$v.dsc
		enc=$(printf '%s' "$file" | sed 's/+/%2b/g; s/~/%7e/g')
		rm -rf "$tmp"
		mkdir -p "$tmp"
		"${helper[@]}" "$uri/$enc" "$tmp/$file" >/dev/null 2>&1 || continue
		# gpgv checks only the signed part: read only what it writes out.
		if ! gpgv --keyring /usr/share/keyrings/debian-keyring.gpg \
			--output "$tmp/signed" "$tmp/$file" >/dev/null 2>&1; then
			say "$file: no good signature of a Debian developer; not used"
			continue
		fi
		if ! grep -qx "Source: postgresql-$major" "$tmp/signed" ||
			! grep -qxF "Version: $v" "$tmp/signed"; then
			say "$file: its signed part names another package or version; not used"
			continue
		fi
		# The orig tarball's line in Checksums-Sha256: " <sum> <size> <name>".
		sum= orig=
		read -r sum orig < <(awk '/^Checksums-Sha256:/ { on = 1; next }
			/^[^ ]/ { on = 0 }
			on && $3 ~ /\.orig\.tar\./ { print $1, $3; exit }' "$tmp/signed") || true
		case ${orig:-} in
		"postgresql-${major}_$major.$m.orig.tar."gz | \
			"postgresql-${major}_$major.$m.orig.tar."bz2 | \
			"postgresql-${major}_$major.$m.orig.tar."xz) ;;
		*)
			say "$file: no orig tarball of $major.$m named in it; not used"
			continue
			;;
		esac
		case $sum in [0-9a-f]*) ;; *) continue ;; esac
		if "${helper[@]}" "$uri/$orig" "$tmp/$orig" "SHA256:$sum" >/dev/null 2>&1; then
			rm -f "$dir"/postgresql-"$major"_*
			mv "$tmp/$orig" "$dir/$orig"
			rm -rf "$tmp"
			say "postgresql-$major $listed is listed but not downloadable; using $v (signature and checksum verified)"
			echo "$v"
			return 0
		fi
	done
	rm -rf "$tmp"
	return 1
}

# debian-keyring (Debian developers' keys) for fetch_earlier_source.
ensure_keyring() {
	[ -r /usr/share/keyrings/debian-keyring.gpg ] && command -v gpgv >/dev/null && return 0
	say "installing debian-keyring and gpgv"
	as_root apt-get update -qq &&
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends debian-keyring gpgv >&2
}

# The source package's version that apt-get source would fetch now.
source_version() {
	apt-get "${apt_opts[@]}" source --print-uris "postgresql-$1" 2>/dev/null |
		sed -n "s/^'[^']*' postgresql-$1_\(.*\)\.dsc .*/\1/p" | head -n1
}

# Keep src/test/regress of the orig tarball $2 (nothing built in it) as
# $1/.snowid-regress-src.tar.gz, for test/core/run.sh.
keep_regress_src() {
	local prefix=$1 orig=$2 tmp
	tmp=$(mktemp -d "$cache/regress-src.XXXXXX") || return 1
	if tar -C "$tmp" --strip-components=1 --wildcards -xf "$orig" '*/src/test/regress/*' &&
		tar -C "$tmp" -czf "$prefix/.snowid-regress-src.tar.gz.part" src/test/regress &&
		mv "$prefix/.snowid-regress-src.tar.gz.part" "$prefix/.snowid-regress-src.tar.gz"; then
		rm -rf "$tmp"
		return 0
	fi
	rm -rf "$tmp" "$prefix/.snowid-regress-src.tar.gz.part"
	return 1
}

# A build made before the regression suite was kept beside it: download the
# same source package again (only that) and keep its src/test/regress.
fetch_regress_src() {
	local major=$1 prefix=$cache/$1 tmp orig
	tmp=$(mktemp -d "$cache/regress-dl.XXXXXX") || return 1
	say "keeping PostgreSQL $major's src/test/regress beside its build (downloading the source package)"
	if (cd "$tmp" && apt-get "${apt_opts[@]}" source --download-only "postgresql-$major") >"$tmp/log" 2>&1 &&
		orig=$(ls "$tmp"/postgresql-"$major"_*.orig.tar.*) &&
		keep_regress_src "$prefix" "$orig"; then
		rm -rf "$tmp"
		return 0
	fi
	tail -n 5 "$tmp/log" >&2
	rm -rf "$tmp"
	say "could not keep PostgreSQL $major's src/test/regress: test/core/run.sh will say so"
	return 1
}

build_major() {
	local major=$1 prefix=$cache/$1 version want have work orig log
	have=$(stamp_of "$major")
	version=
	if apt_update_private; then
		version=$(source_version "$major")
	fi
	if [ -z "$version" ]; then
		if [ -n "$have" ] && [ -x "$prefix/bin/pg_config" ]; then
			say "no source version for postgresql-$major available (offline?): reusing $prefix ($have)"
			return 0
		fi
		say "cannot find source package postgresql-$major"
		return 3
	fi
	want="postgresql-$major $version $configure_opts"
	if [ "$have" = "$want" ] && [ -x "$prefix/bin/pg_config" ]; then
		say "PostgreSQL $major ($version) already built in $prefix"
		[ -f "$prefix/.snowid-regress-src.tar.gz" ] || fetch_regress_src "$major" || true
		return 0
	fi

	ensure_tools
	work=$cache/build/$major
	log=$cache/build-$major.log
	rm -rf "$work"
	mkdir -p "$work/src"
	say "building PostgreSQL $major ($version) into $prefix; log: $log"
	local start=$SECONDS
	# A source package listed in the index but not downloadable here is not
	# a build failure: say so and return 3.
	if ! (cd "$work" && apt-get "${apt_opts[@]}" source --download-only \
		"postgresql-$major") >"$log" 2>&1; then
		tail -n 5 "$log" >&2
		say "the source package postgresql-$major ($version) cannot be downloaded; log: $log"
		# A newer version listed but not (yet) on the mirror: the build of
		# the version before still tests the same major.
		if [ -n "$have" ] && [ -x "$prefix/bin/pg_config" ]; then
			say "reusing $prefix ($have)"
			rm -rf "$work"
			return 0
		fi
		version=$(fetch_earlier_source "$major" "$work") || return 3
		want="postgresql-$major $version $configure_opts"
	fi
	# (set -e does not apply in a list tested by ||: every step is chained.)
	{
		cd "$work" &&
			orig=$(ls postgresql-"$major"_*.orig.tar.*) &&
			tar -C src --strip-components=1 -xf "$orig" &&
			cd src &&
			rm -rf "$prefix" &&
			./configure --prefix="$prefix" $configure_opts &&
			make -j"$(nproc)" &&
			make install &&
			keep_regress_src "$prefix" "$work/$orig"
	} >"$log" 2>&1 || {
		tail -n 40 "$log" >&2
		say "building PostgreSQL $major failed; log: $log"
		return 1
	}
	echo "$want" >"$prefix/.snowid-stamp"
	cd "$cache" && rm -rf "$work"
	say "PostgreSQL $major ($version) built in $((SECONDS - start)) s"
}

# Exit status: 0 if every major is there, 3 if some source package could
# not be had (and nothing else failed), 1 if a build failed.
rc=0
for major in "$@"; do
	got=0
	build_major "$major" || got=$?
	if [ $got -eq 0 ]; then
		echo "$cache/$major/bin/pg_config"
	elif [ $got -eq 3 ] && [ $rc -ne 1 ]; then
		rc=3
	else
		rc=1
	fi
done
exit $rc
