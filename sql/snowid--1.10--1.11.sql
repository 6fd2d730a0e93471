/* snowid--1.10--1.11.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.11'" to load this file. \quit

-- 1.11.  Each change has a section of its own below; a function it
-- changes is replaced whole there, nothing else moves.
