// snowid keys through JDBC (Debian's libpostgresql-jdbc-java, pgjdbc 42):
// getGeneratedKeys and INSERT ... RETURNING read the key into a long, exact.
// Run by test/orm/run.sh as a single-file program (java -cp postgresql.jar
// JdbcTest.java); pgjdbc speaks TCP only, so run.sh's server also listens on
// 127.0.0.1 (PGPORT) when this test runs.
import java.sql.*;
import java.util.*;

public class JdbcTest {
    static int failed = 0;
    static Connection c;
    static String keyClass;

    static void check(boolean cond, String name) {
        System.out.println((cond ? "ok - " : "not ok - ") + "jdbc: " + name);
        if (!cond) failed++;
    }

    static boolean notADouble(long k) { return (long) (double) k != k; }

    static String one(String sql, Object... args) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) ps.setObject(i + 1, args[i]);
            try (ResultSet rs = ps.executeQuery()) { return rs.next() ? rs.getString(1) : null; }
        }
    }

    interface Insert { long run(String note) throws SQLException; }

    // insert(note) -> key, retried until the key is one a double cannot hold.
    // A quiet server's key is the first ID of its millisecond, which on node 1
    // ends in 12 zero bits and survives a double unchanged; the table's
    // statement trigger (snowid_orm_busy, made by run.sh) draws IDs just
    // before the key's default, as concurrent inserts would, so that the key
    // has sequence bits set and a client rounding through a double would show.
    static void sameKey(String how, Insert insert) throws SQLException {
        long got = 0; String note = null; int tries;
        for (tries = 1; tries <= 200; tries++) {
            note = how + "." + tries;
            got = insert.run(note);
            if (notADouble(got)) break;
        }
        // the row found by its note, not by the key
        String text = one("SELECT id::text FROM jd_items WHERE note = ?", note);
        String code = one("SELECT snowid_to_text(id) FROM jd_items WHERE note = ?", note);
        check(got > (1L << 53) && notADouble(got),
              how + ": the key " + got + " is above 2^53, not exact as a double (try " + tries + ")");
        check(Long.toString(got).equals(text), how + ": RETURNING " + got + " = stored id::text " + text);
        String back = one("SELECT snowid_to_text(?)", got);
        check(back.equals(code), how + ": snowid_to_text of the key sent back " + back + " = stored " + code);
    }

    public static void main(String[] a) throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + System.getenv("PGPORT") + "/" + System.getenv("PGDATABASE");
        c = DriverManager.getConnection(url, System.getenv("PGUSER"), "");
        try (Statement st = c.createStatement()) {
            st.execute("CREATE TABLE jd_items (id bigint PRIMARY KEY DEFAULT snowid_next(), note text UNIQUE);"
                     + "CREATE TRIGGER busy BEFORE INSERT ON jd_items"
                     + " FOR EACH STATEMENT EXECUTE FUNCTION snowid_orm_busy();"
                     + "SELECT snowid_ticket_create('jd_invoice_no', type => 'integer');"
                     + "CREATE TABLE jd_invoices (no integer PRIMARY KEY"
                     + " DEFAULT snowid_ticket_next('public.jd_invoice_no'), note text UNIQUE)");
        }

        // getGeneratedKeys: pgjdbc appends RETURNING "id"
        sameKey("getGeneratedKeys", note -> {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jd_items (note) VALUES (?)", new String[] {"id"})) {
                ps.setString(1, note);
                ps.executeUpdate();
                try (ResultSet rs = ps.getGeneratedKeys()) {
                    rs.next();
                    keyClass = rs.getObject(1).getClass().getName();
                    return rs.getLong(1);
                }
            }
        });
        check("java.lang.Long".equals(keyClass), "getGeneratedKeys: getObject gives a " + keyClass);
        // INSERT ... RETURNING id with executeQuery
        sameKey("RETURNING", note -> {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jd_items (note) VALUES (?) RETURNING id")) {
                ps.setString(1, note);
                try (ResultSet rs = ps.executeQuery()) { rs.next(); return rs.getLong("id"); }
            }
        });

        // a batch of 64 with generated keys: each key its own row's
        List<Long> keys = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO jd_items (note) VALUES (?)", new String[] {"id"})) {
            for (int i = 0; i < 64; i++) { ps.setString(1, "batch-" + i); ps.addBatch(); }
            ps.executeBatch();
            try (ResultSet rs = ps.getGeneratedKeys()) { while (rs.next()) keys.add(rs.getLong(1)); }
        }
        long inexact = keys.stream().filter(JdbcTest::notADouble).count();
        check(keys.size() == 64 && new HashSet<>(keys).size() == 64 && inexact > 0,
              "executeBatch: 64 distinct keys, " + inexact + " not exact as doubles");
        boolean same = true;
        for (int i = 0; i < keys.size(); i++)
            same &= keys.get(i).toString().equals(one("SELECT id::text FROM jd_items WHERE note = ?", "batch-" + i));
        check(same, "executeBatch: each generated key is its row's");

        // what a key mapped to a double (a float or a JSON number) becomes
        long k = keys.stream().filter(JdbcTest::notADouble).findFirst().get();
        try (PreparedStatement ps = c.prepareStatement("SELECT id FROM jd_items WHERE id = ?")) {
            ps.setLong(1, k);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                double d = rs.getDouble(1);
                check(rs.getLong(1) == k && (long) d != k,
                      "getLong gives " + k + "; getDouble gives " + String.format("%.0f", d));
            }
        }

        // the ticket default: an integer key
        List<Integer> nos = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement("INSERT INTO jd_invoices (note) VALUES (?)", new String[] {"no"})) {
            for (int i = 0; i < 3; i++) {
                ps.setString(1, "inv-" + i);
                ps.executeUpdate();
                try (ResultSet rs = ps.getGeneratedKeys()) { rs.next(); nos.add(rs.getInt(1)); }
            }
        }
        check(nos.get(0) >= 1 && nos.get(0) < nos.get(1) && nos.get(1) < nos.get(2),
              "ticket: 3 increasing integer keys " + nos);
        same = true;
        for (int i = 0; i < 3; i++)
            same &= nos.get(i).toString().equals(one("SELECT no::text FROM jd_invoices WHERE note = ?", "inv-" + i));
        check(same, "ticket: each generated key is its row's stored no");
        c.close();
        System.exit(failed == 0 ? 0 : 1);
    }
}
