# snowid keys through ActiveRecord (6.1, ruby-pg): a primary key declared
# in a migration with default: -> { "snowid_next()" }; create reads it back
# with RETURNING.  Run by test/orm/run.sh (PGHOST, PGPORT, PGUSER, PGDATABASE set).
require "active_record"

$failed = 0
def check(cond, name)
  puts "#{cond ? 'ok' : 'not ok'} - activerecord: #{name}"
  $stdout.flush
  $failed += 1 unless cond
end

ActiveRecord::Base.establish_connection(
  adapter: "postgresql", host: ENV["PGHOST"], port: ENV["PGPORT"].to_i,
  database: ENV["PGDATABASE"], username: ENV["PGUSER"]
)
conn = ActiveRecord::Base.connection

ActiveRecord::Migration.verbose = false
ActiveRecord::Schema.define do
  create_table :ar_items, id: :bigint, default: -> { "snowid_next()" } do |t|
    t.text :note, index: { unique: true }
  end
  execute "CREATE TRIGGER busy BEFORE INSERT ON ar_items " \
          "FOR EACH STATEMENT EXECUTE FUNCTION snowid_orm_busy()"
  execute "SELECT snowid_ticket_create('ar_invoice_no', type => 'integer')"
  create_table :ar_invoices, primary_key: :no, id: :integer,
                             default: -> { "snowid_ticket_next('public.ar_invoice_no')" } do |t|
    t.text :note, index: { unique: true }
  end
end

class Item < ActiveRecord::Base
  self.table_name = "ar_items"
end

class Invoice < ActiveRecord::Base
  self.table_name = "ar_invoices"
end

decl = conn.select_value("SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef " \
                         "WHERE adrelid = 'ar_items'::regclass")
check(decl == "snowid_next()", "create_table declared DEFAULT snowid_next() (#{decl})")

# the row found by its note, not by the key: key::text and snowid_to_text(key)
def stored(table, key, note)
  ActiveRecord::Base.connection.select_rows(
    "SELECT #{key}::text, snowid_to_text(#{key}::bigint) FROM #{table} " \
    "WHERE note = #{ActiveRecord::Base.connection.quote(note)}").first
end

# insert(note) -> key, retried until the key is one a double cannot hold.
# A quiet server's key is the first ID of its millisecond, which on node 1
# ends in 12 zero bits and survives a float unchanged; the table's statement
# trigger (snowid_orm_busy, made by run.sh) draws IDs just before the key's
# default, as concurrent inserts would, so that the key has sequence bits set
# and a client rounding through a float would show.  A key that is first of
# its millisecond all the same is retried.
def beyond_double(name)
  got = note = nil
  tries = (1..200).find do |t|
    note = "#{name}.#{t}"
    got = yield note
    got.to_f.to_i != got
  end
  [got, note, tries]
end

def same_key(got, note, tries, how)
  row = stored("ar_items", "id", note)
  check(got.is_a?(Integer), "#{how}: the key is an Integer (#{got.class})")
  check(got > 2**53 && got.to_f.to_i != got,
        "#{how}: the key #{got} is above 2^53, not exact as a double (try #{tries.inspect})")
  check(got.to_s == row[0], "#{how}: RETURNING #{got} = stored id::text #{row[0]}")
  back = ActiveRecord::Base.connection.select_value(
    ActiveRecord::Base.sanitize_sql(["SELECT snowid_to_text(?::bigint)", got]))
  check(back == row[1], "#{how}: snowid_to_text of the key sent back #{back} = stored #{row[1]}")
end

sqls = []
sub = ActiveSupport::Notifications.subscribe("sql.active_record") { |*, p| sqls << p[:sql] }
got, note, tries = beyond_double("create") { |n| Item.create!(note: n).id }
ActiveSupport::Notifications.unsubscribe(sub)
check(sqls.any? { |s| s.start_with?('INSERT INTO "ar_items" ("note")') && s.include?('RETURNING "id"') },
      "create! leaves id out of the INSERT and reads it with RETURNING")
same_key(got, note, tries, "create!")
check(Item.find(got).note == note, "find(key) finds the row")

got, note, tries = beyond_double("save") do |n|
  item = Item.new(note: n)
  item.save!
  item.id
end
same_key(got, note, tries, "save!")

# insert_all with returning: one INSERT of 64 rows; most keys share a
# millisecond, so are no doubles
rows = Item.insert_all((0..63).map { |i| { note: "bulk-#{i}" } }, returning: %w[id note]).to_a
keys = rows.map { |r| r["id"] }
inexact = keys.count { |k| k.to_f.to_i != k }
check(keys.uniq.size == 64 && keys.all? { |k| k.is_a?(Integer) } && inexact.positive?,
      "insert_all(returning:): 64 distinct Integer keys, #{inexact} not exact as doubles")
check(rows.all? { |r| r["id"].to_s == stored("ar_items", "id", r["note"])[0] },
      "insert_all(returning:): each key returned is its row's")

invs = (0..2).map { |i| Invoice.create!(note: "inv-#{i}") }
nos = invs.map(&:no)
check(nos == nos.sort && nos.uniq.size == 3 && nos[0] >= 1 && nos.all? { |n| n.is_a?(Integer) },
      "ticket: 3 increasing Integer keys #{nos}")
check(invs.all? { |i| i.no.to_s == stored("ar_invoices", "no", i.note)[0] },
      "ticket: each key read back is its row's stored no")

exit($failed.zero? ? 0 : 1)
