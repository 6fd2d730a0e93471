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
	src/registry_claim.o \
	src/pool_worker.o \
	src/registry_worker.o \
	src/registry_server.o \
	src/snowid.o

# The install script of the current version, sql/install/snowid--$(EXTVERSION).sql
# (not in git), is built by concatenating the parts in sql/install/ in this
# order (one part per subsystem; a later part may use what an earlier one
# creates).  sql/updates/ holds the update scripts ALTER EXTENSION UPDATE
# runs, snowid--<old>--<new>.sql, and the frozen 1.0 script they start from.
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
DATA_built = sql/install/$(EXTENSION)--$(EXTVERSION).sql
DATA = sql/updates/$(EXTENSION)--1.0.sql $(wildcard sql/updates/$(EXTENSION)--*--*.sql)
PG_CPPFLAGS = -I$(srcdir)/src -I$(libpq_srcdir)
# The library knows its version (snowid.library_version, the registry
# connection's application_name) from the control file it ships with.
PG_CPPFLAGS += -DSNOWID_LIBRARY_VERSION='"$(EXTVERSION)"'
# The registry worker talks to the registry with libpq, as postgres_fdw does.
SHLIB_LINK_INTERNAL = $(libpq)

# pg_regress inputs live in sql/ (its only files), outputs in expected/
# (PGXS defaults).
REGRESS = upgrade registry registry_trust pool layout layout_change partition generator errors gucs ticket ticket_named ticket_errors ticket_rewind security generate_privileges text uuid convert replication_guard health counter
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

# A release for PGXN and packagers: snowid-<version>.zip of the committed
# tree (HEAD), one top folder snowid-<version>/ holding META.json; the
# version is META.json's.  test/dist.sh builds and tests it.
DIST_VERSION = $(shell sed -n 's/^   "version": "\([0-9.]*\)",$$/\1/p' $(srcdir)/META.json)
dist:
	git -C $(srcdir) archive --format=zip --prefix=$(EXTENSION)-$(DIST_VERSION)/ \
		-o $(abspath $(EXTENSION)-$(DIST_VERSION).zip) HEAD

.PHONY: prove snowid-not-root dist
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
