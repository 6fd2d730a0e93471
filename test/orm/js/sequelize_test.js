// snowid keys through Sequelize 6 (over pg): a BIGINT key with
// defaultValue: Sequelize.literal('snowid_next()'); create() reads it back
// with RETURNING, as a string (Sequelize leaves int8 to pg, which gives a
// string), the exact key.
'use strict';
const { Sequelize, DataTypes } = require('sequelize');
const { check, done, server, notANumber, beyondDouble } = require('./check');

const sequelize = new Sequelize(server.database, server.user, null, {
  dialect: 'postgres', host: server.host, port: server.port, logging: false,
});

const Item = sequelize.define('Item', {
  id: { type: DataTypes.BIGINT, primaryKey: true, defaultValue: Sequelize.literal('snowid_next()') },
  note: { type: DataTypes.TEXT, unique: true },
}, { tableName: 'sq_items', timestamps: false });

const Invoice = sequelize.define('Invoice', {
  no: { type: DataTypes.INTEGER, primaryKey: true,
    defaultValue: Sequelize.literal("snowid_ticket_next('public.sq_invoice_no')") },
  note: { type: DataTypes.TEXT, unique: true },
}, { tableName: 'sq_invoices', timestamps: false });

const one = async (sql, bind) => (await sequelize.query(sql, { bind, plain: true }));

async function main() {
  await one("SELECT snowid_ticket_create('sq_invoice_no', type => 'integer')");
  await sequelize.sync();
  await one('CREATE TRIGGER busy BEFORE INSERT ON sq_items FOR EACH STATEMENT EXECUTE FUNCTION snowid_orm_busy()');
  const decl = (await one("SELECT pg_get_expr(adbin, adrelid) AS d FROM pg_attrdef WHERE adrelid = 'sq_items'::regclass")).d;
  check(decl === 'snowid_next()', `sequelize: sync() declared DEFAULT snowid_next() (${decl})`);

  // the row found by its note, not by the key
  const stored = (table, key, note) => one(
    `SELECT ${key}::text AS text, snowid_to_text(${key}::bigint) AS code FROM ${table} WHERE note = $1`, [note]);
  const sameKey = async ({ got, note, tries }, how) => {
    const row = await stored('sq_items', 'id', note);
    check(typeof got === 'string', `sequelize: ${how}: the key is a string (${typeof got})`);
    check(BigInt(got) > 2n ** 53n && notANumber(got),
      `sequelize: ${how}: the key ${got} is above 2^53, not exact as a Number (try ${tries})`);
    check(got === row.text, `sequelize: ${how}: RETURNING ${got} = stored id::text ${row.text}`);
    const back = (await one('SELECT snowid_to_text($1::bigint) AS code', [got])).code;
    check(back === row.code, `sequelize: ${how}: snowid_to_text of the key sent back ${back} = stored ${row.code}`);
  };

  const sqls = [];
  const res = await beyondDouble('create', async (note) =>
    (await Item.create({ note }, { logging: (sql) => sqls.push(sql) })).id);
  check(sqls.some((s) => /INSERT INTO "sq_items" \("id","note"\) VALUES \(snowid_next\(\),\$1\) RETURNING/.test(s)),
    'sequelize: create() sends the literal snowid_next() and reads the key with RETURNING');
  await sameKey(res, 'create');
  const found = await Item.findByPk(res.got);
  check(found !== null && found.note === res.note && found.id === res.got, 'sequelize: findByPk(key) finds its row');

  // bulkCreate: one INSERT ... RETURNING of 64 rows
  const items = await Item.bulkCreate(Array.from({ length: 64 }, (_, i) => ({ note: `bulk-${i}` })),
    { returning: true });
  const keys = items.map((i) => i.id);
  const inexact = keys.filter(notANumber).length;
  check(new Set(keys).size === 64 && keys.every((k) => typeof k === 'string') && inexact > 0,
    `sequelize: bulkCreate: 64 distinct string keys, ${inexact} not exact as Numbers`);
  let same = true;
  for (const i of items) same = same && i.id === (await stored('sq_items', 'id', i.note)).text;
  check(same, "sequelize: bulkCreate: each key returned is its row's");

  // the ticket default: integer keys, exact as Numbers
  const invs = [];
  for (let i = 0; i < 3; i++) invs.push(await Invoice.create({ note: `inv-${i}` }));
  const nos = invs.map((i) => i.no);
  check(nos.every((n) => Number.isInteger(n)) && nos[0] >= 1 && nos[0] < nos[1] && nos[1] < nos[2],
    `sequelize: ticket: 3 increasing integer keys ${nos}`);
  same = true;
  for (const i of invs) same = same && String(i.no) === (await stored('sq_invoices', 'no', i.note)).text;
  check(same, "sequelize: ticket: each key read back is its row's stored no");
}

main().catch((e) => check(false, `sequelize: ${e.stack}`)).finally(() => sequelize.close()).finally(done);
