--
-- snowid_registry_request(jsonb): a member's call as one typed request
-- (2.1).  Every way a request can be wrong is refused before anything is
-- called, naming the field; a good request makes the positional call and
-- answers its rows by name.
--
\set VERBOSITY default
CREATE FUNCTION pg_temp.req(r jsonb) RETURNS jsonb
LANGUAGE sql AS $$ SELECT snowid_registry_request(r) $$;
-- A claim request whose fields are all there; change one with ||, drop
-- one with -.
CREATE FUNCTION pg_temp.claim_req() RETURNS jsonb
LANGUAGE sql AS $$
SELECT jsonb_build_object('version', 1, 'op', 'claim', 'node_id', NULL,
	'auto', true, 'max_node', 3,
	'layout', 'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63',
	'cluster_name', 'c9901', 'host', 'host9901', 'port', 5432,
	'system_identifier', 9901, 'start_id', 'q1', 'secret', rpad('q1', 32, '#'),
	'predecessor', NULL, 'promoted', false, 'lease_ms', 600000,
	'takeover_ms', 5000, 'max_lead_ms', 1000, 'last_id', NULL)
$$;

-- The request itself
SELECT pg_temp.req(NULL);
SELECT pg_temp.req('[1, 2]');
SELECT pg_temp.req('"claim"');
-- its version: missing, not a number, not whole, too new, impossible
SELECT pg_temp.req(pg_temp.claim_req() - 'version');
SELECT pg_temp.req(pg_temp.claim_req() || '{"version": "1"}');
SELECT pg_temp.req(pg_temp.claim_req() || '{"version": 1.5}');
SELECT pg_temp.req(pg_temp.claim_req() || '{"version": 2}');
SELECT pg_temp.req(pg_temp.claim_req() || '{"version": 99999999999999999999}');
SELECT pg_temp.req(pg_temp.claim_req() || '{"version": 0}');
-- its operation: missing, not a string, unknown
SELECT pg_temp.req(pg_temp.claim_req() - 'op');
SELECT pg_temp.req(pg_temp.claim_req() || '{"op": ["claim"]}');
SELECT pg_temp.req(pg_temp.claim_req() || '{"op": "retire"}');
-- a field unknown (the caller's role comes from its session, never from
-- a field), missing
SELECT pg_temp.req(pg_temp.claim_req() || '{"role": "postgres"}');
SELECT pg_temp.req(pg_temp.claim_req() || '{"p_node_id": 1}');
SELECT pg_temp.req(pg_temp.claim_req() - 'last_id');
SELECT pg_temp.req('{"version": 1, "op": "release"}');
-- a field of the wrong JSON type, for each kind of parameter
SELECT pg_temp.req(pg_temp.claim_req() || '{"node_id": "1"}');
SELECT pg_temp.req(pg_temp.claim_req() || '{"node_id": 1.5}');
SELECT pg_temp.req(pg_temp.claim_req() || '{"node_id": 2147483648}');
SELECT pg_temp.req(pg_temp.claim_req() || '{"lease_ms": 1e30}');
SELECT pg_temp.req(pg_temp.claim_req() || '{"system_identifier": "9901"}');
SELECT pg_temp.req(pg_temp.claim_req() || '{"auto": "true"}');
SELECT pg_temp.req(pg_temp.claim_req() || '{"auto": 1}');
SELECT pg_temp.req(pg_temp.claim_req() || '{"layout": 7}');
SELECT pg_temp.req(pg_temp.claim_req() || '{"host": {"name": "h"}}');
SELECT pg_temp.req(pg_temp.claim_req() || '{"start_id": ["q1"]}');
SELECT pg_temp.req(pg_temp.claim_req() || '{"op": "reassert", "held_until": "soon"}');
SELECT pg_temp.req(pg_temp.claim_req() || '{"op": "reassert", "held_until": 1}');
SELECT pg_temp.req('{"version": 1, "op": "pool_report", "node_id": 1, "system_identifier": 1, "start_id": "s", "secret": "s", "pool": "p", "first": [1], "last": [5]}');
SELECT pg_temp.req('{"version": 1, "op": "pool_report", "node_id": 1, "system_identifier": 1, "start_id": "s", "secret": "s", "pool": ["p"], "first": [null], "last": [5]}');
SELECT pg_temp.req('{"version": 1, "op": "pool_report", "node_id": 1, "system_identifier": 1, "start_id": "s", "secret": "s", "pool": ["p"], "first": ["1"], "last": [5]}');
SELECT pg_temp.req('{"version": 1, "op": "pool_report", "node_id": 1, "system_identifier": 1, "start_id": "s", "secret": "s", "pool": [1], "first": [1], "last": [5]}');
SELECT pg_temp.req('{"version": 1, "op": "pool_report", "node_id": 1, "system_identifier": 1, "start_id": "s", "secret": "s", "pool": [["p"]], "first": [1], "last": [5]}');

-- Good requests: the positional function's rows, by column name; one
-- value as "value".  A claim answers as the positional claim does.
SELECT r -> 'version' AS version, r #>> '{rows,0,result}' AS result,
	   (r #>> '{rows,0,node_id}')::integer = c.node_id AS same_node
  FROM pg_temp.req(pg_temp.claim_req()) r,
	   snowid_registry_claim(NULL, true, 3,
			'epoch 2025-01-01 00:00:00.000000+00, tick 1000us, node_bits 2, sequence_bits 12, id_bits 63',
			'c9901', 'host9901', 5432, 9901, 'q1', rpad('q1', 32, '#'), NULL,
			false, 600000, 5000, 1000, NULL) c;
SELECT pg_temp.req('{"version": 1, "op": "release", "node_id": 3, "start_id": "nobody", "secret": "nobody##########################", "last_id": null}');
-- A whole number written with a fraction of zeros (or an exponent) is the
-- same JSON number: taken as the integer (2.1 refused 1.0 and 3.0 as "not
-- whole", found by the registry fuzzer); a fraction that is not all zeros
-- is still refused.
SELECT pg_temp.req('{"version": 1.0, "op": "release", "node_id": 3.00, "start_id": "nobody", "secret": "nobody##########################", "last_id": 20e-1}');
SELECT pg_temp.req('{"version": 1, "op": "release", "node_id": 3.000000000000000000001, "start_id": "nobody", "secret": "nobody##########################", "last_id": null}');
SELECT pg_temp.req('{"version": 1, "op": "pool_grant", "pool": "no such pool", "node_id": 1, "system_identifier": 9901, "start_id": "q1", "secret": "q1##############################", "request": "r1", "want": 10, "held_first": [], "held_last": []}') #> '{rows,0}' ->> 'result';
SELECT pg_temp.req('{"version": 1, "op": "pool_return", "pool": "no such pool", "node_id": 1, "system_identifier": 9901, "start_id": "q1", "secret": "q1##############################", "first_value": 1, "unused_from": 5}');
-- An operation whose function is not snowid's own (here: taken out of the
-- extension, in a transaction rolled back) is called by no request.
BEGIN;
ALTER EXTENSION snowid DROP FUNCTION snowid_pool_return(text, integer, numeric, text, text, bigint, bigint);
SELECT pg_temp.req('{"version": 1, "op": "pool_return", "pool": "no such pool", "node_id": 1, "system_identifier": 9901, "start_id": "q1", "secret": "q1##############################", "first_value": 1, "unused_from": 5}');
ROLLBACK;
-- Errors of the call keep their SQLSTATE, as for a positional call.
SELECT pg_temp.req(pg_temp.claim_req() || '{"layout": "x"}');

-- The request adds no right: the caller needs EXECUTE on the positional
-- function, as before.
CREATE ROLE regress_req_stranger;
SET ROLE regress_req_stranger;
SELECT pg_temp.req(pg_temp.claim_req());
RESET ROLE;
DROP ROLE regress_req_stranger;
