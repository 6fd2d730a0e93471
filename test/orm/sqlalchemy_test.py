# snowid keys through SQLAlchemy (1.4, psycopg2): the key the ORM reads
# back (RETURNING) must be the stored one, digit for digit.
# Run by test/orm/run.sh (PGHOST, PGPORT, PGUSER, PGDATABASE set).
import os
import uuid

from sqlalchemy import (BigInteger, Column, Integer, MetaData, Table, Text,
                        create_engine, text)
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.orm import Session, declarative_base

failed = 0


def check(cond, name):
    global failed
    print(("ok - " if cond else "not ok - ") + "sqlalchemy: " + name, flush=True)
    if not cond:
        failed += 1


url = "postgresql+psycopg2://{}@/{}?host={}&port={}".format(
    os.environ["PGUSER"], os.environ["PGDATABASE"], os.environ["PGHOST"],
    os.environ["PGPORT"])
engine = create_engine(url, future=True)
Base = declarative_base()


class Item(Base):
    __tablename__ = "sa_items"
    id = Column(BigInteger, primary_key=True, server_default=text("snowid_next()"))
    note = Column(Text, unique=True)


class Invoice(Base):
    __tablename__ = "sa_invoices"
    no = Column(Integer, primary_key=True,
                server_default=text("snowid_ticket_next('public.sa_invoice_no')"))
    note = Column(Text, unique=True)


class Doc(Base):
    __tablename__ = "sa_docs"
    id = Column(UUID(as_uuid=True), primary_key=True,
                server_default=text("snowid_next_uuid()"))
    note = Column(Text, unique=True)


with engine.begin() as conn:
    conn.execute(text("SELECT snowid_ticket_create('sa_invoice_no', type => 'integer')"))
Base.metadata.create_all(engine)
with engine.begin() as conn:
    conn.execute(text("CREATE TRIGGER busy BEFORE INSERT ON sa_items "
                      "FOR EACH STATEMENT EXECUTE FUNCTION snowid_orm_busy()"))
    ddl = conn.execute(text("SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef "
                            "WHERE adrelid = 'sa_items'::regclass")).scalar_one()
check(ddl == "snowid_next()", "create_all declared DEFAULT snowid_next() (%s)" % ddl)


def stored(conn, table, key, note):
    """The row's key found by its note (not by the key): as text and as snowid_to_text."""
    return conn.execute(text("SELECT {0}::text, snowid_to_text({0}) FROM {1} WHERE note = :n"
                             .format(key, table)), {"n": note}).one()


def beyond_double(insert):
    """insert(note) -> key, retried until the key is one a double cannot hold.
    A quiet server's key is the first ID of its millisecond, which on node 1
    ends in 12 zero bits and survives a float unchanged; the table's
    statement trigger (snowid_orm_busy, made by run.sh) draws IDs just
    before the key's default, as concurrent inserts would, so that the key
    has sequence bits set and a client rounding through a float would show.
    A key that is first of its millisecond all the same is retried."""
    for tries in range(1, 201):
        note = "%s.%d" % (insert.__name__, tries)
        got = insert(note)
        if int(float(got)) != got:
            break
    return got, note, tries


def same_key(conn, got, table, note, tries, how):
    row = stored(conn, table, "id", note)
    check(type(got) is int, how + ": the key is a Python int (%s)" % type(got).__name__)
    check(got > 2 ** 53 and int(float(got)) != got,
          how + ": the key %d is above 2^53, not exact as a double (try %d)" % (got, tries))
    check(str(got) == row[0], how + ": RETURNING %d = stored id::text %s" % (got, row[0]))
    back = conn.execute(text("SELECT snowid_to_text(:k)"), {"k": got}).scalar_one()
    check(back == row[1], how + ": snowid_to_text of the key sent back %s = stored %s"
          % (back, row[1]))


# ORM: flush() inserts with RETURNING sa_items.id
with Session(engine) as s:
    def orm_flush(note):
        item = Item(note=note)
        s.add(item)
        s.flush()
        return item.id
    got, note, tries = beyond_double(orm_flush)
    s.commit()
    same_key(s.connection(), got, "sa_items", note, tries, "Session.flush")
    s.expunge_all()
    again = s.get(Item, got)
    check(again is not None and again.note == note, "Session.get(Item, key) finds the row")

# ORM: several objects in one flush, each its own key
with Session(engine) as s:
    items = [Item(note="orm-many-%d" % i) for i in range(3)]
    s.add_all(items)
    s.commit()
    keys = [it.id for it in items]
    check(len(set(keys)) == 3, "add_all: 3 distinct keys")
    conn = s.connection()
    check(all(str(it.id) == stored(conn, "sa_items", "id", it.note)[0] for it in items),
          "add_all: each object's key is its own row's")

# Core: inserted_primary_key and an explicit RETURNING
items_t = Item.__table__
with engine.begin() as conn:
    def core_inserted_pk(note):
        return conn.execute(items_t.insert().values(note=note)).inserted_primary_key[0]

    def core_returning(note):
        return conn.execute(items_t.insert().values(note=note)
                            .returning(items_t.c.id)).scalar_one()
    got, note, tries = beyond_double(core_inserted_pk)
    same_key(conn, got, "sa_items", note, tries, "Core inserted_primary_key")
    got, note, tries = beyond_double(core_returning)
    same_key(conn, got, "sa_items", note, tries, "Core insert().returning(id)")
    # one INSERT of 64 rows: most keys share a millisecond, so are no doubles
    rows = conn.execute(items_t.insert().values([{"note": "multi-%d" % i} for i in range(64)])
                        .returning(items_t.c.id, items_t.c.note)).all()
    inexact = sum(int(float(r.id)) != r.id for r in rows)
    check(len({r.id for r in rows}) == 64 and inexact > 0,
          "Core multi-row insert: 64 distinct keys, %d not exact as doubles" % inexact)
    check(all(str(r.id) == stored(conn, "sa_items", "id", r.note)[0] for r in rows),
          "Core multi-row insert: each key returned is its row's")

# the ticket default: an integer key from snowid_ticket_next
with Session(engine) as s:
    invs = [Invoice(note="inv-%d" % i) for i in range(3)]
    s.add_all(invs)
    s.commit()
    conn = s.connection()
    nos = [i.no for i in invs]
    check(all(type(n) is int for n in nos), "ticket: the keys are Python ints %s" % nos)
    check(nos == sorted(nos) and len(set(nos)) == 3 and nos[0] >= 1,
          "ticket: 3 increasing integer keys %s" % nos)
    check(all(str(i.no) == stored(conn, "sa_invoices", "no", i.note)[0] for i in invs),
          "ticket: each key read back is its row's stored no")

# UUID: snowid_next_uuid() as the default of a uuid key
with Session(engine) as s:
    doc = Doc(note="doc-1")
    s.add(doc)
    s.flush()
    got = doc.id
    s.commit()
    conn = s.connection()
    row = conn.execute(text("SELECT id::text, snowid_from_uuid(id)::text FROM sa_docs "
                            "WHERE note = 'doc-1'")).one()
    check(isinstance(got, uuid.UUID) and str(got) == row[0],
          "uuid: RETURNING %s = stored %s" % (got, row[0]))
    back = conn.execute(text("SELECT snowid_from_uuid(:u)::text"), {"u": got}).scalar_one()
    check(back == row[1], "uuid: the snowid inside the key sent back %s = stored %s"
          % (back, row[1]))

raise SystemExit(1 if failed else 0)
