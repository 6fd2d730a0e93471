// snowid keys through knex 3 (over pg): a bigint key with
// defaultTo(knex.raw('snowid_next()')); insert(...).returning('id') reads it
// back as a string (pg's int8), the exact key.
'use strict';
const Knex = require('knex');
const { check, done, server, notANumber, beyondDouble } = require('./check');

const knex = Knex({ client: 'pg', connection: server, pool: { min: 1, max: 1 } });

async function main() {
  await knex.schema.createTable('kx_items', (t) => {
    t.bigInteger('id').primary().defaultTo(knex.raw('snowid_next()'));
    t.text('note').unique();
  });
  await knex.raw('CREATE TRIGGER busy BEFORE INSERT ON kx_items FOR EACH STATEMENT EXECUTE FUNCTION snowid_orm_busy()');
  const decl = (await knex.raw("SELECT pg_get_expr(adbin, adrelid) AS d FROM pg_attrdef WHERE adrelid = 'kx_items'::regclass")).rows[0].d;
  check(decl === 'snowid_next()', `knex: createTable declared DEFAULT snowid_next() (${decl})`);

  // the row found by its note, not by the key
  const stored = (note) => knex('kx_items').first(knex.raw('id::text AS text'), knex.raw('snowid_to_text(id) AS code'))
    .where({ note });

  const sqls = [];
  const { got, note, tries } = await beyondDouble('insert', async (n) => {
    const rows = await knex('kx_items').insert({ note: n }).returning('id').on('query', (q) => sqls.push(q.sql));
    return rows[0].id;
  });
  check(sqls.some((s) => s === 'insert into "kx_items" ("note") values (?) returning "id"'),
    'knex: insert().returning(\'id\') leaves id to the default and reads it with RETURNING');
  const row = await stored(note);
  check(typeof got === 'string', `knex: the key is a string (${typeof got})`);
  check(BigInt(got) > 2n ** 53n && notANumber(got), `knex: the key ${got} is above 2^53, not exact as a Number (try ${tries})`);
  check(got === row.text, `knex: RETURNING ${got} = stored id::text ${row.text}`);
  const back = (await knex.raw('SELECT snowid_to_text(?::bigint) AS code', [got])).rows[0].code;
  check(back === row.code, `knex: snowid_to_text of the key sent back ${back} = stored ${row.code}`);
  const found = await knex('kx_items').where({ id: got });
  check(found.length === 1 && found[0].note === note, 'knex: where({ id: key }) finds its row');

  // an array insert: one INSERT ... RETURNING of 64 rows
  const rows = await knex('kx_items').insert(Array.from({ length: 64 }, (_, i) => ({ note: `bulk-${i}` })))
    .returning(['id', 'note']);
  const keys = rows.map((r) => r.id);
  const inexact = keys.filter(notANumber).length;
  check(new Set(keys).size === 64 && keys.every((k) => typeof k === 'string') && inexact > 0,
    `knex: array insert: 64 distinct string keys, ${inexact} not exact as Numbers`);
  let same = true;
  for (const r of rows) same = same && r.id === (await stored(r.note)).text;
  check(same, "knex: array insert: each key returned is its row's");
}

main().catch((e) => check(false, `knex: ${e.stack}`)).finally(() => knex.destroy()).finally(done);
