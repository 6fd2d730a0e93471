/* snowid--2.0--2.1.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '2.1'" to load this file. \quit

-- 2.1.  Each change has a section of its own below.
