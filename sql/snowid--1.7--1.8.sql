/* snowid--1.7--1.8.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.8'" to load this file. \quit

-- 1.8: no caller, copy or forgetful registry can make a duplicate or lock
-- others out (issue 29).  Each function this version changes is replaced
-- whole below; nothing else moves.
