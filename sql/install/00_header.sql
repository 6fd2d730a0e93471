/*
 * snowid.sql: the install script of the current version.  The build copies
 * it to sql/snowid--<default_version>.sql; every release also ships an
 * upgrade script sql/snowid--<old>--<new>.sql that brings an installed
 * extension to the same objects (sql/upgrade.sql compares the two).
 */

\echo Use "CREATE EXTENSION snowid" to load this file. \quit

