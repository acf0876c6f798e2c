package dev.kura;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.*;
import java.util.List;
import org.junit.jupiter.api.Test;

/** pgjdbc (extended protocol only) against a running kura server. */
class KuraJdbcTest {
    private static Connection connect() throws SQLException {
        String port = System.getProperty("kura.port");
        assertNotNull(port, "-Dkura.port is required");
        return DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + port + "/kura", "tester", "");
    }

    @Test
    void connectsAndReportsTheServer() throws SQLException {
        try (Connection c = connect()) {
            DatabaseMetaData md = c.getMetaData();
            assertEquals("PostgreSQL", md.getDatabaseProductName());
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("select version()")) {
                assertTrue(rs.next());
                assertTrue(rs.getString(1).contains("kura"), rs.getString(1));
            }
        }
    }

    @Test
    void resultSetTypes() throws SQLException {
        try (Connection c = connect();
             Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("select * from t limit 3")) {
            ResultSetMetaData md = rs.getMetaData();
            assertEquals(Types.INTEGER, md.getColumnType(1));
            assertEquals(Types.BIGINT, md.getColumnType(2));
            assertEquals(Types.NUMERIC, md.getColumnType(3));
            assertEquals(15, md.getPrecision(3));
            assertEquals(2, md.getScale(3));
            assertEquals(Types.DATE, md.getColumnType(4));
            assertEquals(Types.VARCHAR, md.getColumnType(5));
            assertTrue(rs.next());
            assertEquals(1, rs.getInt(1));
            assertEquals(10000000000L, rs.getLong(2));
            assertEquals(new BigDecimal("12.34"), rs.getBigDecimal(3));
            assertEquals(Date.valueOf("1995-03-15"), rs.getDate(4));
            assertEquals("alpha", rs.getString(5));
            assertTrue(rs.getBoolean(8));
            assertTrue(rs.next());
            assertEquals(new BigDecimal("-0.05"), rs.getBigDecimal(3));
        }
    }

    @Test
    void preparedStatementWithParameters() throws SQLException {
        try (Connection c = connect(); PreparedStatement ps = c.prepareStatement("select * from t where i <= ?")) {
            // More runs than pgjdbc's prepareThreshold (5): the last ones use a named
            // server-side statement, described once and bound many times.
            for (int n = 1; n <= 7; n++) {
                ps.setInt(1, (n % 3) + 1);
                int rows = 0;
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) rows++;
                }
                assertEquals((n % 3) + 1, rows, "run " + n);
            }
        }
    }

    @Test
    void castsOnParametersAndTimestamps() throws SQLException {
        try (Connection c = connect();
             PreparedStatement ps = c.prepareStatement(
                 "select ?::int + 1, cast(? as numeric(10,2)), ?::timestamp, ?::timestamp::date")) {
            ps.setString(1, "41");
            ps.setString(2, "3.14159");
            Timestamp ts = Timestamp.valueOf("2024-01-02 03:04:05.123");
            ps.setTimestamp(3, ts);
            ps.setTimestamp(4, ts);
            try (ResultSet rs = ps.executeQuery()) {
                assertEquals(Types.TIMESTAMP, rs.getMetaData().getColumnType(3));
                assertTrue(rs.next());
                assertEquals(42, rs.getInt(1));
                assertEquals(new BigDecimal("3.14"), rs.getBigDecimal(2));
                assertEquals(ts, rs.getTimestamp(3));
                assertEquals(Date.valueOf("2024-01-02"), rs.getDate(4));
            }
        }
        try (Connection c = connect();
             PreparedStatement ps = c.prepareStatement("select i from t where b = ?::bigint")) {
            ps.setString(1, "-7");
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next());
                assertEquals(2, rs.getInt(1));
            }
        }
    }

    @Test
    void errorsCarrySqlStateAndTheConnectionSurvives() throws SQLException {
        try (Connection c = connect(); Statement s = c.createStatement()) {
            SQLException e = assertThrows(SQLException.class, () -> s.executeQuery("select * from no_such_table"));
            assertEquals("42P01", e.getSQLState());
            e = assertThrows(SQLException.class, () -> s.executeQuery("selec 1"));
            assertEquals("42601", e.getSQLState());
            try (ResultSet rs = s.executeQuery("select count(*) from t")) {
                assertTrue(rs.next());
                assertEquals(3, rs.getLong(1));
            }
        }
    }

    @Test
    void transactionsWithAutocommitOff() throws SQLException {
        try (Connection c = connect()) {
            c.setAutoCommit(false);
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("select count(*) from t")) {
                assertTrue(rs.next());
            }
            c.commit();
            c.rollback();
        }
    }

    @Test
    void rollbackDiscardsAndCommitKeeps() throws SQLException {
        try (Connection c = connect(); Connection other = connect();
             Statement s = c.createStatement(); Statement o = other.createStatement()) {
            o.execute("create table tx_jdbc (x integer)");
            c.setAutoCommit(false);
            s.executeUpdate("insert into tx_jdbc values (1)");
            assertEquals(1, count(s, "tx_jdbc"));
            assertEquals(0, count(o, "tx_jdbc"), "uncommitted rows are visible to another session");
            c.rollback();
            assertEquals(0, count(s, "tx_jdbc"), "rollback kept the row");
            try (PreparedStatement ps = c.prepareStatement("insert into tx_jdbc values (?)")) {
                ps.setInt(1, 2);
                ps.executeUpdate();
            }
            c.commit();
            assertEquals(1, count(o, "tx_jdbc"));
            s.executeUpdate("insert into tx_jdbc values (3)");
            SQLException e = assertThrows(SQLException.class, () -> s.executeQuery("select 1 / 0"));
            assertEquals("22012", e.getSQLState());
            e = assertThrows(SQLException.class, () -> s.executeQuery("select 1"));
            assertEquals("25P02", e.getSQLState());
            c.rollback();
            assertEquals(1, count(s, "tx_jdbc"));
        }
    }

    @Test
    void savepointsInListsAndArrayParameters() throws SQLException {
        try (Connection c = connect(); Statement s = c.createStatement()) {
            s.execute("create table sp_jdbc (x integer)");
            c.setAutoCommit(false);
            s.executeUpdate("insert into sp_jdbc values (1)");
            Savepoint sp = c.setSavepoint();
            s.executeUpdate("insert into sp_jdbc values (2)");
            c.rollback(sp);
            s.executeUpdate("insert into sp_jdbc values (3)");
            c.releaseSavepoint(c.setSavepoint("named"));
            c.commit();
            c.setAutoCommit(true);
            assertEquals(2, count(s, "sp_jdbc"));
            try (PreparedStatement ps = c.prepareStatement("select count(*) from t where i in (?, ?, ?)")) {
                ps.setInt(1, 1);
                ps.setInt(2, 3);
                ps.setInt(3, 77);
                try (ResultSet rs = ps.executeQuery()) {
                    assertTrue(rs.next());
                    assertEquals(2, rs.getLong(1));
                }
            }
            try (PreparedStatement ps = c.prepareStatement("select count(*) from t where i = any(?)")) {
                ps.setArray(1, c.createArrayOf("int4", new Integer[] {2, 3, 9}));
                try (ResultSet rs = ps.executeQuery()) {
                    assertTrue(rs.next());
                    assertEquals(2, rs.getLong(1));
                }
            }
            try (PreparedStatement ps = c.prepareStatement("select v from t where v = any(?) order by v")) {
                ps.setArray(1, c.createArrayOf("text", new String[] {"beta", "g", "nope"}));
                try (ResultSet rs = ps.executeQuery()) {
                    assertTrue(rs.next());
                    assertEquals("beta", rs.getString(1));
                    assertTrue(rs.next());
                    assertEquals("g", rs.getString(1));
                    assertFalse(rs.next());
                }
            }
            try (ResultSet rs = s.executeQuery("select array[1, 2, 3]")) {
                assertTrue(rs.next());
                assertArrayEquals(new Integer[] {1, 2, 3}, (Object[]) rs.getArray(1).getArray());
            }
        }
    }

    private static long count(Statement s, String table) throws SQLException {
        try (ResultSet rs = s.executeQuery("select count(*) from " + table)) {
            assertTrue(rs.next());
            return rs.getLong(1);
        }
    }

    /** TPC-H Q6 at SF 0.01 with typed parameters (needs the full SQL engine). */
    @Test
    void tpchQ6WithParameters() throws Exception {
        assumeTrue(Boolean.parseBoolean(System.getProperty("kura.tpch")), "run with -Dkura.tpch=true on TPC-H data");
        String sql = "select sum(l_extendedprice * l_discount) as revenue from lineitem "
                + "where l_shipdate >= ? and l_shipdate < ? and l_discount between ? and ? and l_quantity < ?";
        List<String> answer = Files.readAllLines(Path.of(System.getProperty("kura.answers"), "q06.csv"));
        BigDecimal expected = new BigDecimal(answer.get(1).trim());
        try (Connection c = connect(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setDate(1, Date.valueOf("1994-01-01"));
            ps.setDate(2, Date.valueOf("1995-01-01"));
            ps.setBigDecimal(3, new BigDecimal("0.05"));
            ps.setBigDecimal(4, new BigDecimal("0.07"));
            ps.setInt(5, 24);
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next());
                BigDecimal got = rs.getBigDecimal(1);
                assertTrue(expected.subtract(got).abs().compareTo(new BigDecimal("0.01")) <= 0, "revenue " + got);
            }
        }
    }
}
