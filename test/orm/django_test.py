# snowid keys through Django 3.2 (psycopg2): a BigAutoField primary key on a
# table whose column default is snowid_next().  Django leaves an AutoField
# out of the INSERT and reads the key back with RETURNING.  (Django >= 5.0
# would declare it as db_default=Func(function="snowid_next"); 3.2 has no
# db_default.)  Run by test/orm/run.sh (PGHOST, PGPORT, PGUSER, PGDATABASE set).
import os

import django
from django.conf import settings

settings.configure(
    DATABASES={"default": {
        "ENGINE": "django.db.backends.postgresql",
        "HOST": os.environ["PGHOST"],
        "PORT": os.environ["PGPORT"],
        "NAME": os.environ["PGDATABASE"],
        "USER": os.environ["PGUSER"],
    }},
    INSTALLED_APPS=[],
    USE_TZ=True,
)
django.setup()

from django.db import connection, models  # noqa: E402

failed = 0


def check(cond, name):
    global failed
    print(("ok - " if cond else "not ok - ") + "django: " + name, flush=True)
    if not cond:
        failed += 1


class Item(models.Model):
    id = models.BigAutoField(primary_key=True)  # the column's default is snowid_next()
    note = models.TextField(unique=True)

    class Meta:
        app_label = "snowid_orm"
        db_table = "dj_items"
        managed = False


class Invoice(models.Model):
    no = models.AutoField(primary_key=True)  # default snowid_ticket_next('public.dj_invoice_no')
    note = models.TextField(unique=True)

    class Meta:
        app_label = "snowid_orm"
        db_table = "dj_invoices"
        managed = False


with connection.cursor() as cur:
    cur.execute("""
        CREATE TABLE dj_items (id bigint PRIMARY KEY DEFAULT snowid_next(), note text UNIQUE);
        CREATE TRIGGER busy BEFORE INSERT ON dj_items
            FOR EACH STATEMENT EXECUTE FUNCTION snowid_orm_busy();
        SELECT snowid_ticket_create('dj_invoice_no', type => 'integer');
        CREATE TABLE dj_invoices (
            no integer PRIMARY KEY DEFAULT snowid_ticket_next('public.dj_invoice_no'),
            note text UNIQUE);
    """)


def stored(table, key, note):
    """The row found by its note (not by the key): key::text and snowid_to_text(key)."""
    with connection.cursor() as cur:
        cur.execute("SELECT {0}::text, snowid_to_text({0}::bigint) FROM {1} WHERE note = %s"
                    .format(key, table), [note])
        return cur.fetchone()


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


def same_key(got, note, tries, how):
    row = stored("dj_items", "id", note)
    check(type(got) is int, how + ": the key is a Python int (%s)" % type(got).__name__)
    check(got > 2 ** 53 and int(float(got)) != got,
          how + ": the key %d is above 2^53, not exact as a double (try %d)" % (got, tries))
    check(str(got) == row[0], how + ": RETURNING %d = stored id::text %s" % (got, row[0]))
    with connection.cursor() as cur:
        cur.execute("SELECT snowid_to_text(%s)", [got])
        back = cur.fetchone()[0]
    check(back == row[1], how + ": snowid_to_text of the key sent back %s = stored %s"
          % (back, row[1]))


# Model.objects.create: INSERT ... RETURNING "dj_items"."id"
sqls = []


def record(execute, sql, params, many, context):
    sqls.append(sql)
    return execute(sql, params, many, context)


def create(note):
    with connection.execute_wrapper(record):
        return Item.objects.create(note=note).id


def save(note):
    item = Item(note=note)
    item.save()
    return item.pk


got, note, tries = beyond_double(create)
check(any(s.startswith('INSERT INTO "dj_items" ("note")') and 'RETURNING "dj_items"."id"' in s
          for s in sqls), "create() leaves id out of the INSERT and reads it with RETURNING")
same_key(got, note, tries, "objects.create")
check(Item.objects.get(pk=got).note == note, "objects.get(pk=key) finds the row")

# save() of a new object
got, note, tries = beyond_double(save)
same_key(got, note, tries, "save()")

# bulk_create on PostgreSQL sets each object's key (one INSERT ... RETURNING):
# most of the 64 keys of one statement share a millisecond, so are no doubles
items = Item.objects.bulk_create([Item(note="bulk-%d" % i) for i in range(64)])
keys = [it.id for it in items]
check(len(set(keys)) == 64 and all(type(k) is int for k in keys), "bulk_create: 64 distinct int keys")
inexact = sum(int(float(k)) != k for k in keys)
check(inexact > 0, "bulk_create: %d of the 64 keys are not exact as doubles" % inexact)
check(all(str(it.id) == stored("dj_items", "id", it.note)[0] for it in items),
      "bulk_create: each object's key is its own row's")

# the ticket default through an AutoField (integer)
invs = [Invoice.objects.create(note="inv-%d" % i) for i in range(3)]
nos = [i.no for i in invs]
check(nos == sorted(nos) and len(set(nos)) == 3 and nos[0] >= 1,
      "ticket: 3 increasing integer keys %s" % nos)
check(all(str(i.no) == stored("dj_invoices", "no", i.note)[0] for i in invs),
      "ticket: each key read back is its row's stored no")

raise SystemExit(1 if failed else 0)
