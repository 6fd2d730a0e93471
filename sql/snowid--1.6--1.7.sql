/* snowid--1.6--1.7.sql */

\echo Use "ALTER EXTENSION snowid UPDATE TO '1.7'" to load this file. \quit

-- 1.7: ready to adopt (issue 24) and IDs beside uuidv7() (issue 25).
