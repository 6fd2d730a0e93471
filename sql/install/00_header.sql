/*
 * The install script of the current version.  The Makefile builds
 * sql/install/snowid--<default_version>.sql by concatenating the parts in
 * sql/install/ that it lists in INSTALL_PARTS, in that order, starting
 * with this header: each part holds the SQL of one subsystem (src/README.md
 * names them), and a part may use what an earlier one creates.  Every
 * release also ships an update script snowid--<old>--<new>.sql that brings
 * an installed extension to the same objects (sql/upgrade.sql compares the
 * two), built from sql/updates/ and these parts (src/README.md, "Update
 * scripts").
 */

\echo Use "CREATE EXTENSION snowid" to load this file. \quit

