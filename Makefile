# snowid: PGXS build.  `make && make install`, then see README.md.

EXTENSION = snowid
EXTVERSION = $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" snowid.control)

MODULE_big = snowid
OBJS = \
	src/layout.o \
	src/clock.o \
	src/text.o \
	src/conninfo.o \
	src/durable.o \
	src/boot_record.o \
	src/guc.o \
	src/state.o \
	src/lease.o \
	src/continuation.o \
	src/highwater_file.o \
	src/highwater.o \
	src/lease_file.o \
	src/pool_file.o \
	src/pool_store.o \
	src/pool_users.o \
	src/generator.o \
	src/generator_floor.o \
	src/pool_take.o \
	src/pool_grant.o \
	src/ticket_catalog.o \
	src/ticket_guard.o \
	src/ticket_slot.o \
	src/ticket_lookup.o \
	src/counter_exec.o \
	src/counter_catalog.o \
	src/counter_citus.o \
	src/counter_row.o \
	src/counter_cache.o \
	src/counter_fast.o \
	src/decode.o \
	src/uuid.o \
	src/stats.o \
	src/registry_sql.o \
	src/registry_guard.o \
	src/registry_xact.o \
	src/pool_sql.o \
	src/ticket_sql.o \
	src/counter_sql.o \
	src/ticket_hooks.o \
	src/partition_guard.o \
	src/replication_guard.o \
	src/alter_system.o \
	src/rmgr.o \
	src/registry_conn.o \
	src/registry_call.o \
	src/registry_claim.o \
	src/pool_worker.o \
	src/registry_worker.o \
	src/registry_server.o \
	src/registry_request.o \
	src/snowid.o

# The install script of the current version, sql/install/snowid--$(EXTVERSION).sql
# (not in git), is built by concatenating the parts in sql/install/ in this
# order (one part per subsystem; a later part may use what an earlier one
# creates).
INSTALL_PARTS = \
	sql/install/00_header.sql \
	sql/install/10_generator.sql \
	sql/install/20_ticket.sql \
	sql/install/30_registry.sql \
	sql/install/40_pool_registry.sql \
	sql/install/50_pool_member.sql \
	sql/install/55_counter.sql \
	sql/install/60_uuid.sql \
	sql/install/70_convert.sql \
	sql/install/80_replication.sql \
	sql/install/90_health.sql

# The update scripts ALTER EXTENSION UPDATE runs (src/README.md, "Update
# scripts"); no function body is written twice in git:
# - Those of released versions are never edited again and are not in the
#   tree: sql/updates/released.txt names each with the commit that holds it
#   as released, and the build takes them from git into sql/released/ (not
#   in git; make clean keeps them, as a tree without the history cannot
#   make them again; the release zip of make dist carries them).
# - The hops of the version in progress, sql/updates/snowid--<old>--<new>.sql,
#   are hand-written: what the install parts cannot say (ALTER TABLE, data,
#   DROP) and directives such as "-- @function NAME", which
#   sql/updates/build-script.pl replaces by the install parts' statements of
#   that object, into sql/install/snowid--<old>--<new>.sql (not in git).
#   A hop that writes out any function, or a view, table, type or event
#   trigger of the install parts, or a directive naming none, stops the
#   build.
UPDATES_TOOL = sql/updates/build-script.pl
RELEASED_LIST = sql/updates/released.txt
RELEASED_NAMES := $(shell sed -n 's/^[0-9a-f]\{40\}[[:space:]]\{1,\}\([^[:space:]]*\).*/\1/p' $(RELEASED_LIST))
RELEASED_COMMITS := $(sort $(shell sed -n 's/^\([0-9a-f]\{40\}\)[[:space:]].*/\1/p' $(RELEASED_LIST)))
RELEASED = $(addprefix sql/released/,$(RELEASED_NAMES))
# "yes" where this clone holds every commit released.txt names.
RELEASED_IN_GIT := $(shell for c in $(RELEASED_COMMITS); do git cat-file -e "$$c^{commit}" 2>/dev/null || exit 0; done; echo yes)
HOPS = $(filter-out $(addprefix sql/updates/,$(RELEASED_NAMES)),$(wildcard sql/updates/*.sql))
HOPS_BUILT = $(patsubst sql/updates/%,sql/install/%,$(HOPS))
DATA_built = sql/install/$(EXTENSION)--$(EXTVERSION).sql $(HOPS_BUILT)
ifeq ($(RELEASED_IN_GIT),yes)
DATA = $(RELEASED)
else
# A tree without the history (a shallow clone, a copy without .git):
# what sql/released/ holds is installed; the rest is said, not fatal.
DATA = $(wildcard $(RELEASED))
RELEASED_MISSING = $(filter-out $(DATA),$(RELEASED))
ifneq ($(RELEASED_MISSING),)
$(warning snowid: $(words $(RELEASED_MISSING)) released update scripts are missing ($(notdir $(RELEASED_MISSING))): they come from git at commit $(RELEASED_COMMITS), which this tree lacks (a shallow clone, or a copy without .git).  The build goes on without them: CREATE EXTENSION snowid works, but updates from those versions (and the tests that make them: pg_regress upgrade, security, replication_guard; TAP 035, 070) fail.  Fetch the history (git fetch --unshallow) and run make again, or build from the release zip (make dist), which carries sql/released/)
endif
endif
PG_CPPFLAGS = -I$(srcdir)/src -I$(libpq_srcdir)
# The library knows its version (snowid.library_version, the registry
# connection's application_name) from the control file it ships with.
PG_CPPFLAGS += -DSNOWID_LIBRARY_VERSION='"$(EXTVERSION)"'
# The registry worker talks to the registry with libpq, as postgres_fdw does.
SHLIB_LINK_INTERNAL = $(libpq)

# pg_regress inputs live in sql/ (its only files), outputs in expected/
# (PGXS defaults).
REGRESS = upgrade registry registry_trust registry_request pool layout layout_change partition generator errors gucs ticket ticket_named ticket_errors ticket_rewind security generate_privileges text uuid convert replication_guard health counter counter_hostile
# Without the released update scripts (see above) the tests that install
# an old version cannot run: the warning above names them.
ifneq ($(RELEASED_MISSING),)
REGRESS := $(filter-out upgrade security replication_guard,$(REGRESS))
endif
REGRESS_OPTS = --load-extension=snowid
# Isolation specs and their outputs live in test/isolation/{specs,expected}
# (PostgreSQL 15's pg_isolation_regress has no --expecteddir).
ISOLATION = concurrent_next ticket_boundary ticket_drop ticket_named registry_claim pool_grant counter_gapless counter_fast
ISOLATION_OPTS = --inputdir=test/isolation --load-extension=snowid

# TAP tests in test/t, run by `make prove` only: they start servers of their
# own, so `make installcheck` (which runs prove when TAP_TESTS is set) leaves
# them out.  PGXS defines prove_installcheck whether TAP_TESTS is set or not.
PROVE_TESTS = test/t/*.pl
EXTRA_CLEAN = tmp_check/

# `make installcheck` targets the server named by PGHOST/PGPORT.  With
# SNOWID_TEMP_INSTANCE=1, pg_regress starts servers of its own instead, in
# tmp_regress/ and tmp_isolation/, configured by test/snowid.conf (snowid
# preloaded, node_id = 1) and listening on SNOWID_TEMP_PORT.
SNOWID_TEMP_PORT ?= 54391
ifdef SNOWID_TEMP_INSTANCE
REGRESS_OPTS += --temp-instance=tmp_regress --temp-config=test/snowid.conf --port=$(SNOWID_TEMP_PORT)
ISOLATION_OPTS += --temp-instance=tmp_isolation --temp-config=test/snowid.conf --port=$(SNOWID_TEMP_PORT)
endif

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

src/guc.o: snowid.control

sql/install/$(EXTENSION)--$(EXTVERSION).sql: $(INSTALL_PARTS)
	@$(MKDIR_P) $(@D)
	cat $^ >$@

$(HOPS_BUILT): sql/install/%: sql/updates/% $(INSTALL_PARTS) $(UPDATES_TOOL)
	perl $(UPDATES_TOOL) hop $< $(INSTALL_PARTS) >$@.tmp || { rm -f $@.tmp; exit 1; }
	mv $@.tmp $@

ifeq ($(RELEASED_IN_GIT),yes)
$(RELEASED): sql/released/%: $(RELEASED_LIST) $(UPDATES_TOOL)
	@$(MKDIR_P) $(@D)
	perl $(UPDATES_TOOL) released $(RELEASED_LIST) $* >$@.tmp || { rm -f $@.tmp; exit 1; }
	mv $@.tmp $@
endif
# PGXS installs DATA but does not build it.  `make released` takes the
# released scripts from git only (test/package/deb.sh).
all: $(DATA)
released: $(DATA)

# A release for PGXN and packagers: snowid-<version>.zip of the committed
# tree (HEAD) and the released update scripts (sql/released/, which a tree
# without the history cannot make), one top folder snowid-<version>/
# holding META.json; the version is META.json's.  test/dist.sh builds and
# tests it.
DIST_VERSION = $(shell sed -n 's/^   "version": "\([0-9.]*\)",$$/\1/p' $(srcdir)/META.json)
dist: $(RELEASED)
	git -C $(srcdir) archive --format=zip \
		--prefix=$(EXTENSION)-$(DIST_VERSION)/sql/released/ $(addprefix --add-file=,$(RELEASED)) \
		--prefix=$(EXTENSION)-$(DIST_VERSION)/ \
		-o $(abspath $(EXTENSION)-$(DIST_VERSION).zip) HEAD

.PHONY: prove snowid-not-root dist released
prove: snowid-not-root
	$(prove_installcheck)

# PostgreSQL refuses to run as root, peer authentication maps root to no
# role, and the tests write into this tree: as root, test/make.sh runs the
# same target on a copy of the tree as the postgres OS user.
installcheck: snowid-not-root
snowid-not-root:
	@if [ "$$(id -u)" = 0 ]; then \
		echo "snowid: 'make $(MAKECMDGOALS)' does not run as root: run it as an ordinary user," >&2; \
		echo "snowid: or as root run the same on a copy of the tree as the postgres user:" >&2; \
		echo "snowid:     bash test/make.sh $(MAKECMDGOALS) $(MAKEOVERRIDES)" >&2; \
		exit 1; \
	fi
