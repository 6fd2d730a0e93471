/* snowid--1.4--1.5.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.5'" to load this file. \quit

-- 1.5: the registry trusts no caller (issue 22).  Leases belong to the
-- login role that took them, the registry decides lease lengths, takeover
-- delays and range sizes, members verify every answer, and no credential
-- is shown.
