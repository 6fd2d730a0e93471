// snowid keys through node-postgres (pg): int8 comes back as a string by
// default; with types.setTypeParser(20, BigInt) as a BigInt.  Either is the
// exact key; a Number is not (precision_test.js).
'use strict';
const pg = require('pg');
const { check, done, server, notANumber, beyondDouble } = require('./check');

async function main() {
  const client = new pg.Client(server);
  await client.connect();
  await client.query(`CREATE TABLE pg_items (id bigint PRIMARY KEY DEFAULT snowid_next(), note text UNIQUE);
    CREATE TRIGGER busy BEFORE INSERT ON pg_items FOR EACH STATEMENT EXECUTE FUNCTION snowid_orm_busy()`);

  // the row found by its note, not by the key
  const stored = async (note) => (await client.query(
    'SELECT id::text AS text, snowid_to_text(id) AS code FROM pg_items WHERE note = $1', [note])).rows[0];
  const sameKey = async ({ got, note, tries }, how) => {
    const row = await stored(note);
    check(BigInt(got) > 2n ** 53n && notANumber(got),
      `pg: ${how}: the key ${got} is above 2^53, not exact as a Number (try ${tries})`);
    check(String(got) === row.text, `pg: ${how}: RETURNING ${got} = stored id::text ${row.text}`);
    const back = (await client.query('SELECT snowid_to_text($1) AS code', [got])).rows[0].code;
    check(back === row.code, `pg: ${how}: snowid_to_text of the key sent back ${back} = stored ${row.code}`);
  };

  // default: int8 as a string
  let res = await beyondDouble('string', async (note) =>
    (await client.query('INSERT INTO pg_items (note) VALUES ($1) RETURNING id', [note])).rows[0].id);
  check(typeof res.got === 'string', `pg: by default RETURNING id is a string (${typeof res.got})`);
  await sameKey(res, 'string');

  // the text form asked for explicitly: the same whatever the parser
  res = await beyondDouble('text', async (note) =>
    (await client.query('INSERT INTO pg_items (note) VALUES ($1) RETURNING id::text AS id', [note])).rows[0].id);
  await sameKey(res, 'RETURNING id::text');
  await client.end();

  // BigInt: a parser for type 20 (int8), set before the connection
  pg.types.setTypeParser(20, BigInt);
  const big = new pg.Client(server);
  await big.connect();
  const { got, note, tries } = await beyondDouble('bigint', async (n) =>
    (await big.query('INSERT INTO pg_items (note) VALUES ($1) RETURNING id', [n])).rows[0].id);
  check(typeof got === 'bigint' && notANumber(got),
    `pg: with setTypeParser(20, BigInt) RETURNING id is a bigint (${typeof got}), ${got}n not exact as a Number (try ${tries})`);
  const row = (await big.query('SELECT id, id::text AS text FROM pg_items WHERE note = $1', [note])).rows[0];
  check(got === row.id && got.toString() === row.text,
    `pg: BigInt: RETURNING ${got}n === SELECT id ${row.id}n, its text ${row.text}`);
  const found = (await big.query('SELECT note FROM pg_items WHERE id = $1', [got])).rows;
  check(found.length === 1 && found[0].note === note, 'pg: BigInt: the key sent back as a parameter finds its row');
  await big.end();
}

main().catch((e) => check(false, `pg: ${e.stack}`)).finally(done);
