// snowid keys through Prisma ORM 7 with the pg driver adapter: a BigInt key
// with @default(dbgenerated("snowid_next()")); create() reads it back with
// RETURNING as a BigInt, the exact key.  run.sh runs `prisma generate` first.
'use strict';
const { PrismaClient } = require('@prisma/client');
const { PrismaPg } = require('@prisma/adapter-pg');
const { check, done, server, notANumber, beyondDouble } = require('../js/check');

const sqls = [];
const prisma = new PrismaClient({ adapter: new PrismaPg(server), log: [{ emit: 'event', level: 'query' }] });
prisma.$on('query', (e) => sqls.push(e.query));

async function main() {
  await prisma.$executeRawUnsafe('CREATE TABLE pr_items (id bigint PRIMARY KEY DEFAULT snowid_next(), note text UNIQUE)');
  await prisma.$executeRawUnsafe('CREATE TRIGGER busy BEFORE INSERT ON pr_items FOR EACH STATEMENT EXECUTE FUNCTION snowid_orm_busy()');
  await prisma.$queryRawUnsafe("SELECT snowid_ticket_create('pr_invoice_no', type => 'integer')::text");
  await prisma.$executeRawUnsafe(`CREATE TABLE pr_invoices (
    no integer PRIMARY KEY DEFAULT snowid_ticket_next('public.pr_invoice_no'), note text UNIQUE)`);

  // the row found by its note, not by the key
  const stored = async (note) => (await prisma.$queryRaw`
    SELECT id::text AS text, snowid_to_text(id) AS code FROM pr_items WHERE note = ${note}`)[0];

  const { got, note, tries } = await beyondDouble('create', async (n) => (await prisma.item.create({ data: { note: n } })).id);
  check(sqls.some((s) => /^INSERT INTO "public"\."pr_items" \("note"\) VALUES \(\$1\) RETURNING "public"\."pr_items"\."id"/.test(s)),
    'prisma: create() leaves id to the default and reads it with RETURNING');
  const row = await stored(note);
  check(typeof got === 'bigint', `prisma: the key is a bigint (${typeof got})`);
  check(got > 2n ** 53n && notANumber(got), `prisma: the key ${got}n is above 2^53, not exact as a Number (try ${tries})`);
  check(got.toString() === row.text, `prisma: RETURNING ${got}n = stored id::text ${row.text}`);
  const back = (await prisma.$queryRaw`SELECT snowid_to_text(${got}) AS code`)[0].code;
  check(back === row.code, `prisma: snowid_to_text of the key sent back ${back} = stored ${row.code}`);
  const found = await prisma.item.findUnique({ where: { id: got } });
  check(found !== null && found.note === note && found.id === got, 'prisma: findUnique({ where: { id: key } }) finds its row');

  // createManyAndReturn: one INSERT ... RETURNING of 64 rows
  const items = await prisma.item.createManyAndReturn({ data: Array.from({ length: 64 }, (_, i) => ({ note: `bulk-${i}` })) });
  const keys = items.map((i) => i.id);
  const inexact = keys.filter(notANumber).length;
  check(new Set(keys).size === 64 && keys.every((k) => typeof k === 'bigint') && inexact > 0,
    `prisma: createManyAndReturn: 64 distinct bigint keys, ${inexact} not exact as Numbers`);
  let same = true;
  for (const i of items) same = same && i.id.toString() === (await stored(i.note)).text;
  check(same, "prisma: createManyAndReturn: each key returned is its row's");

  // the ticket default: integer keys
  const nos = [];
  for (let i = 0; i < 3; i++) nos.push((await prisma.invoice.create({ data: { note: `inv-${i}` } })).no);
  check(nos.every((n) => Number.isInteger(n)) && nos[0] >= 1 && nos[0] < nos[1] && nos[1] < nos[2],
    `prisma: ticket: 3 increasing integer keys ${nos}`);
  const texts = (await prisma.$queryRaw`SELECT no::text AS t FROM pr_invoices ORDER BY no`).map((r) => r.t);
  check(texts.join() === nos.join(), "prisma: ticket: the keys read back are the rows' stored no");
}

main().catch((e) => check(false, `prisma: ${e.stack}`)).finally(() => prisma.$disconnect()).finally(done);
