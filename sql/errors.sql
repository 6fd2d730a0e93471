--
-- Every user-facing error of the Snowflake functions.
--
SET timezone = 'UTC';

-- Negative values are never snowids.
SELECT snowid_timestamp(-1);
SELECT snowid_node(-1);
SELECT snowid_sequence(-9223372036854775808);
SELECT * FROM snowid_decode(-42);

-- Timestamps the layout cannot express.
SELECT snowid_from_timestamp('infinity');
SELECT snowid_from_timestamp('-infinity');
SELECT snowid_from_timestamp('2024-12-31 23:59:59.999+00');
SELECT snowid_from_timestamp('2094-09-07 15:47:35.552+00');

-- Batch sizes out of range.
SELECT count(*) FROM snowid_next_batch(0);
SELECT count(*) FROM snowid_next_batch(-5);
SELECT count(*) FROM snowid_next_batch(1000001);

-- NULL in, NULL out (the functions are strict).
SELECT snowid_timestamp(NULL) IS NULL AS ts_null,
       snowid_node(NULL) IS NULL AS node_null,
       snowid_sequence(NULL) IS NULL AS seq_null,
       snowid_from_timestamp(NULL) IS NULL AS from_null,
       (snowid_decode(NULL)).node IS NULL AS decode_null;
SELECT count(*) AS batch_of_null FROM snowid_next_batch(NULL);
