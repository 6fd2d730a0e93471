--
-- The text form: snowid_to_text and snowid_from_text (Crockford base32 with
-- an optional check symbol, value % 37).
--

-- Known vectors, worked out by hand: base32 digits most significant first
-- from 0123456789ABCDEFGHJKMNPQRSTVWXYZ, then the check symbol value % 37
-- from the same 32 followed by * ~ $ = U.
--   1234567890 = 1*32^6 + 4*32^5 + 25*32^4 + 12*32^3 + 0*32^2 + 22*32 + 18
--              = 14SC0PJ, and 1234567890 % 37 = 27 = V
--   2^31-1 = 1 and six 31s; 2^53-1 = 7 and ten 31s; 2^62 = 4 and twelve 0s;
--   2^63-1 = 7 and twelve 31s.  2^36 % 37 = 1, so 2^k % 37 = 2^(k % 36) % 37:
--   2^31-1 -> 21 = N, 2^53-1 -> 17 = H, 2^62 -> 3, 2^63-1 -> 5.
SELECT v.value, v.plain, v.checked,
       snowid_to_text(v.value, false) = v.plain AS plain_ok,
       snowid_to_text(v.value) = v.checked AS checked_ok,
       snowid_from_text(v.plain, false) = v.value AS read_plain_ok,
       snowid_from_text(v.checked) = v.value AS read_checked_ok
  FROM (VALUES (0::bigint, '0', '00'),
               (1, '1', '11'),
               (31, 'Z', 'ZZ'),
               (32, '10', '10*'),
               (36, '14', '14U'),
               (37, '15', '150'),
               (1234567890, '14SC0PJ', '14SC0PJV'),
               (2147483647, '1ZZZZZZ', '1ZZZZZZN'),
               (9007199254740991, '7ZZZZZZZZZZ', '7ZZZZZZZZZZH'),
               (4611686018427387904, '4000000000000', '40000000000003'),
               (9223372036854775807, '7ZZZZZZZZZZZZ', '7ZZZZZZZZZZZZ5'))
       AS v(value, plain, checked)
 ORDER BY v.value;

-- The check symbols 32 .. 36 all occur, and with_check defaults to true.
SELECT v, snowid_to_text(v) AS code, snowid_to_text(v, false) AS plain
  FROM generate_series(32::bigint, 36) AS v;

-- Round trips across the whole range: every power of two and its
-- neighbours, 0 and 2^63-1, and 5000 pseudo-random values of every length.
CREATE TEMP TABLE text_values AS
SELECT DISTINCT v FROM (
  SELECT (2::numeric ^ k + d)::bigint AS v
    FROM generate_series(0, 62) AS k, generate_series(-1, 1) AS d
  UNION ALL SELECT 0
  UNION ALL SELECT 9223372036854775807
  UNION ALL
  SELECT ((((hashint8(i)::bigint & 2147483647) << 32) |
           (hashint8(-i)::bigint & 4294967295)) >> (i % 63)::integer)
    FROM generate_series(1, 5000) AS i) AS s;
SELECT count(*) >= 4000 AS enough, min(v) AS smallest, max(v) AS largest,
       count(*) FILTER (WHERE v < 0) AS negative
  FROM text_values;
SELECT count(*) FILTER (WHERE snowid_from_text(snowid_to_text(v)) <> v) AS bad_checked,
       count(*) FILTER (WHERE snowid_from_text(snowid_to_text(v, false), false) <> v) AS bad_plain,
       count(*) FILTER (WHERE v >= 32::numeric ^ length(snowid_to_text(v, false)) OR
                              (v > 0 AND v < 32::numeric ^ (length(snowid_to_text(v, false)) - 1))) AS bad_length,
       count(*) FILTER (WHERE snowid_to_text(v) <> snowid_to_text(v, false) ||
                              substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ*~$=U', (v % 37)::integer + 1, 1)) AS bad_check
  FROM text_values;
-- Codes sort like their values when they have the same length.
SELECT count(*) AS misordered
  FROM (SELECT v, snowid_to_text(v, false) AS c,
               lag(v) OVER w AS pv, lag(snowid_to_text(v, false)) OVER w AS pc
          FROM text_values WINDOW w AS (ORDER BY v)) AS s
 WHERE length(c) = length(pc) AND c COLLATE "C" <= pc COLLATE "C";
DROP TABLE text_values;

-- Tolerant reading: any case, I and L as 1, O as 0, hyphens anywhere,
-- leading zeros; the check symbol is read the same way (u, i, l, o).
SELECT snowid_from_text('14sc0pjv') AS lower,
       snowid_from_text('I4SCOPJV') AS i_and_o,
       snowid_from_text('l4Sc0pJv') AS l_mixed,
       snowid_from_text('-14SC-0PJ-V-') AS hyphens,
       snowid_from_text('14-SC0PJ', false) AS hyphens_plain,
       snowid_from_text('14u') AS check_u,
       snowid_from_text('1i', true) AS check_i,
       snowid_from_text('0o') AS check_o,
       snowid_from_text('00011') AS leading_zeros,
       snowid_from_text('000000000000000000000007ZZZZZZZZZZZZ', false) AS many_zeros;

-- On IDs from the generator and on ticket values.
CREATE TEMP TABLE text_ids AS SELECT snowid_next() AS id FROM generate_series(1, 100);
SELECT count(*) AS ids,
       count(*) FILTER (WHERE snowid_from_text(snowid_to_text(id)) = id) AS round_trips,
       count(*) FILTER (WHERE snowid_from_text(lower(snowid_to_text(id))) = id) AS lower_case
  FROM text_ids;
DROP TABLE text_ids;
SELECT snowid_ticket_create('text_ticket', shard => 2, shards => 3, start => 1000);
SELECT v, snowid_to_text(v) AS code, snowid_from_text(snowid_to_text(v)) = v AS ok
  FROM (SELECT snowid_ticket_next('text_ticket') AS v
          FROM generate_series(1, 3)) AS s;
DROP SEQUENCE text_ticket;

-- NULL in, NULL out (STRICT); the labels.
SELECT snowid_to_text(NULL) IS NULL AS to_null,
       snowid_from_text(NULL) IS NULL AS from_null,
       snowid_from_text('11', NULL) IS NULL AS check_null;
SELECT p.oid::regprocedure AS function, p.provolatile, p.proparallel, p.proisstrict
  FROM pg_proc p
 WHERE p.proname IN ('snowid_to_text', 'snowid_from_text')
 ORDER BY p.proname;

-- Errors: each with its SQLSTATE, message and detail.
CREATE FUNCTION pg_temp.text_error(code text, with_check boolean)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	state text;
	message text;
	detail text;
BEGIN
	PERFORM snowid_from_text(code, with_check);
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
							detail = PG_EXCEPTION_DETAIL;
	RETURN state || ': ' || message || ' / ' || detail;
END
$$;
SELECT v.what, v.code, v.with_check, pg_temp.text_error(v.code, v.with_check) AS error
  FROM (VALUES ('bad symbol', '12#4', true),
               ('bad symbol, plain', '12#4', false),
               ('space', '12 4', false),
               ('U is no value symbol', '1U3', true),
               ('U without check', '1U', false),
               ('wrong check', '14SC0PJW', true),
               ('swapped symbols', '41SC0PJV', true),
               ('check symbol in the middle', '1*23', true),
               ('check symbol in the middle, plain', '1*23', false),
               ('check symbol without with_check', '10*', false),
               ('empty', '', true),
               ('empty, plain', '', false),
               ('only hyphens', '---', true),
               ('only a check symbol', '*', true),
               ('only a check symbol, plain', '*', false),
               ('2^63 with its check', '80000000000006', true),
               ('2^63, plain', '8000000000000', false),
               ('2^63-1 with a wrong check', '7ZZZZZZZZZZZZ6', true),
               ('far beyond bigint', 'ZZZZZZZZZZZZZZZZZZZZ', false))
       AS v(what, code, with_check);
-- A character of several bytes is named whole (checked in a UTF8 database
-- only, as other encodings read these bytes differently).
SELECT pg_catalog.getdatabaseencoding() <> 'UTF8' OR
       pg_temp.text_error('Ä-1ÄB', false) =
       '22P02: invalid snowid code: "Ä-1ÄB" / "Ä" at position 1 is not a Crockford base32 symbol.' AS non_ascii_ok,
       pg_catalog.getdatabaseencoding() <> 'UTF8' OR
       pg_temp.text_error('1ÄB', false) =
       '22P02: invalid snowid code: "1ÄB" / "Ä" at position 2 is not a Crockford base32 symbol.' AS position_ok;

-- The check symbol catches every single substituted symbol and every swap
-- of two adjacent different symbols (the check symbol included): none of
-- these codes is accepted, each is 22P02.
CREATE TEMP TABLE text_codes AS
SELECT snowid_to_text(v) AS code
  FROM (VALUES (0::bigint), (1), (36), (1234567890), (2147483647),
               (9007199254740991), (4611686018427387904),
               (9223372036854775807), (250477384434716672)) AS t(v);
SELECT count(*) AS substitutions,
       count(*) FILTER (WHERE e NOT LIKE '22P02:%') AS accepted
  FROM text_codes,
       generate_series(1, length(code)) AS p,
       regexp_split_to_table('0123456789ABCDEFGHJKMNPQRSTVWXYZ*~$=U', '') AS s,
       LATERAL pg_temp.text_error(overlay(code placing s from p), true) AS e
 WHERE s <> substr(code, p, 1);
SELECT count(*) AS swaps,
       count(*) FILTER (WHERE e NOT LIKE '22P02:%') AS accepted
  FROM text_codes,
       generate_series(1, length(code) - 1) AS p,
       LATERAL pg_temp.text_error(overlay(code placing substr(code, p + 1, 1) ||
                                          substr(code, p, 1) from p for 2),
                                  true) AS e
 WHERE substr(code, p, 1) <> substr(code, p + 1, 1);
DROP TABLE text_codes;

-- And as psql shows them, with the hint and the SQLSTATE.
\set SHOW_CONTEXT never
SELECT snowid_from_text('14SC0PJW');
\echo :LAST_ERROR_SQLSTATE
SELECT snowid_from_text('12O-I!', false);
\echo :LAST_ERROR_SQLSTATE
SELECT snowid_from_text('7ZZZZZZZZZZZZ*');
\echo :LAST_ERROR_SQLSTATE
SELECT snowid_from_text('8000000000000', false);
\echo :LAST_ERROR_SQLSTATE
SELECT snowid_from_text('-');
\echo :LAST_ERROR_SQLSTATE
-- Negative values have no code.
SELECT snowid_to_text(-1);
\echo :LAST_ERROR_SQLSTATE
SELECT snowid_to_text(-9223372036854775808, false);
\echo :LAST_ERROR_SQLSTATE
\set SHOW_CONTEXT errors
