/* snowid--1.3--1.4.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.4'" to load this file. \quit

-- 1.4: pools of values leased in ranges from the registry (registry side)
-- and ticket sequences fed by them (member side).
