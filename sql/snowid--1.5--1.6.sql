/* snowid--1.5--1.6.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.6'" to load this file. \quit

-- 1.6: snowid on Citus (issue 23).
