// Why BigInt or the text form: snowid keys are above 2^53, and a JavaScript
// Number holds integers exactly only up to 2^53.  The same 1000 keys read
// three ways through node-postgres: as Numbers (a type parser some apps set,
// and what JSON.parse does) they lose digits and merge; as strings (pg's
// default) and BigInts they are exact.
'use strict';
const pg = require('pg');
const { check, done, server } = require('./check');

const reading = (parse) => new pg.Client({
  ...server,
  types: { getTypeParser: (oid, format) => (oid === 20 ? parse : pg.types.getTypeParser(oid, format)) },
});

async function main() {
  const asText = new pg.Client(server);
  const asNumber = reading(Number);
  const asBigInt = reading(BigInt);
  for (const c of [asText, asNumber, asBigInt]) await c.connect();

  await asText.query(`CREATE TABLE js_many (id bigint PRIMARY KEY DEFAULT snowid_next(), n int);
    INSERT INTO js_many (n) SELECT g FROM generate_series(1, 1000) g`);
  const q = 'SELECT id, id::text AS text FROM js_many ORDER BY id';
  const texts = (await asText.query(q)).rows;
  const numbers = (await asNumber.query(q)).rows.map((r) => r.id);
  const bigints = (await asBigInt.query(q)).rows.map((r) => r.id);

  check(texts.every((r) => r.id === r.text) && new Set(texts.map((r) => r.id)).size === 1000,
    'precision: as strings (pg\'s default) the 1000 keys are exact and distinct');
  check(bigints.every((b, i) => typeof b === 'bigint' && b.toString() === texts[i].text) && new Set(bigints).size === 1000,
    'precision: as BigInts (setTypeParser(20, BigInt)) the 1000 keys are exact and distinct');
  const lost = numbers.filter((x, i) => BigInt(x) !== BigInt(texts[i].text)).length;
  const distinct = new Set(numbers).size;
  check(numbers.every((x) => typeof x === 'number') && lost > 0 && distinct < 1000,
    `precision: as Numbers ${lost} of the 1000 keys lose digits and they merge into ${distinct} values`);

  const i = numbers.findIndex((x, j) => BigInt(x) !== BigInt(texts[j].text));
  const key = texts[i].text;
  check(String(numbers[i]) !== key && Number(key) === numbers[i],
    `precision: key ${key} read as a Number is ${BigInt(numbers[i])} (off by ${BigInt(numbers[i]) - BigInt(key)})`);
  const parsed = JSON.parse(`{"id": ${key}, "code": "${key}"}`);
  check(BigInt(parsed.id) !== BigInt(key) && BigInt(parsed.code) === BigInt(key),
    `precision: JSON.parse of {"id": ${key}} gives ${BigInt(parsed.id)}; the string "${key}" stays exact`);

  const byNumber = (await asText.query('SELECT id FROM js_many WHERE id = $1', [numbers[i]])).rows;
  const byBigInt = (await asText.query('SELECT id FROM js_many WHERE id = $1', [bigints[i]])).rows;
  check(!byNumber.some((r) => r.id === key) && byBigInt.length === 1 && byBigInt[0].id === key,
    `precision: the Number sent back (as "${numbers[i]}") finds ${byNumber.length ? `another row, ${byNumber[0].id}` : 'no row'}; the BigInt finds its row`);
  for (const c of [asText, asNumber, asBigInt]) await c.end();
}

main().catch((e) => check(false, `precision: ${e.stack}`)).finally(done);
