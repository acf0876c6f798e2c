package dev.kura;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.*;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * pgjdbc against a kura cluster's front door (`kura cluster serve`) holding TPC-H. Runs with
 * -Dkura.cluster=true -Dkura.answers=DIR. pgjdbc sends every statement through the extended
 * protocol, its parameters as $n: each parameterised answer is compared with the same query
 * written with literals and run as a plain statement.
 */
class ClusterJdbcTest {
    @BeforeEach
    void onlyAgainstACluster() {
        assumeTrue(Boolean.parseBoolean(System.getProperty("kura.cluster")), "run with -Dkura.cluster=true");
    }

    private static Connection connect() throws SQLException {
        String port = System.getProperty("kura.port");
        assertNotNull(port, "-Dkura.port is required");
        return DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + port + "/kura", "tester", "");
    }

    private static long literal(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            assertTrue(rs.next(), sql);
            return rs.getLong(1);
        }
    }

    @Test
    void connectsAndReportsTheCluster() throws SQLException {
        try (Connection c = connect();
             Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("select version()")) {
            assertTrue(rs.next());
            assertTrue(rs.getString(1).contains("cluster"), rs.getString(1));
        }
    }

    @Test
    void parameterAndResultTypes() throws SQLException {
        String cols = "select o_orderkey, o_totalprice, o_orderdate, o_orderpriority from orders";
        try (Connection c = connect();
             Statement s = c.createStatement();
             ResultSet want = s.executeQuery(cols + " where o_orderkey = 1");
             PreparedStatement ps = c.prepareStatement(cols + " where o_orderkey = ?")) {
            ps.setInt(1, 1);
            try (ResultSet rs = ps.executeQuery()) {
                ResultSetMetaData md = rs.getMetaData();
                assertEquals(Types.INTEGER, md.getColumnType(1));
                assertEquals(Types.NUMERIC, md.getColumnType(2));
                assertEquals(2, md.getScale(2));
                assertEquals(Types.DATE, md.getColumnType(3));
                assertEquals(Types.VARCHAR, md.getColumnType(4));
                assertTrue(want.next());
                assertTrue(rs.next());
                assertEquals(1, rs.getInt(1));
                assertEquals(want.getBigDecimal(2), rs.getBigDecimal(2));
                assertEquals(want.getDate(3), rs.getDate(3));
                assertEquals(want.getString(4), rs.getString(4));
                assertFalse(rs.next());
            }
        }
    }

    @Test
    void aStatementBoundManyTimes() throws SQLException {
        try (Connection c = connect();
             PreparedStatement ps = c.prepareStatement("select count(*) from lineitem where l_orderkey <= ?")) {
            // More runs than pgjdbc's prepareThreshold (5): the last ones use a named
            // server-side statement, described once and bound many times.
            for (int n = 1; n <= 7; n++) {
                int key = n * 7_000;
                ps.setInt(1, key);
                try (ResultSet rs = ps.executeQuery()) {
                    assertTrue(rs.next());
                    long want = literal(c, "select count(*) from lineitem where l_orderkey <= " + key);
                    assertEquals(want, rs.getLong(1), "run " + n);
                    assertTrue(want > 0);
                }
            }
        }
    }

    @Test
    void textNullAndJoinedParameters() throws SQLException {
        try (Connection c = connect()) {
            try (PreparedStatement ps = c.prepareStatement("select count(*) from customer where c_mktsegment = ?")) {
                ps.setString(1, "BUILDING");
                try (ResultSet rs = ps.executeQuery()) {
                    assertTrue(rs.next());
                    assertEquals(literal(c, "select count(*) from customer where c_mktsegment = 'BUILDING'"), rs.getLong(1));
                }
                ps.setNull(1, Types.VARCHAR);
                try (ResultSet rs = ps.executeQuery()) {
                    assertTrue(rs.next());
                    assertEquals(0, rs.getLong(1));
                }
            }
            // Customers and their orders are split by different keys: the join crosses shards.
            String join = "select count(*), sum(o_totalprice) from customer join orders on c_custkey = o_custkey "
                    + "where c_nationkey = ? and o_orderdate < ?";
            try (PreparedStatement ps = c.prepareStatement(join)) {
                ps.setInt(1, 7);
                ps.setDate(2, Date.valueOf("1995-06-01"));
                try (ResultSet rs = ps.executeQuery()) {
                    assertTrue(rs.next());
                    long want = literal(c, "select count(*) from customer join orders on c_custkey = o_custkey "
                            + "where c_nationkey = 7 and o_orderdate < date '1995-06-01'");
                    assertEquals(want, rs.getLong(1));
                    assertTrue(want > 0);
                }
            }
        }
    }

    @Test
    void tpchQ6WithParameters() throws Exception {
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

    @Test
    void errorsCarrySqlStateAndTheConnectionSurvives() throws SQLException {
        try (Connection c = connect(); Statement s = c.createStatement()) {
            SQLException e = assertThrows(SQLException.class, () -> s.executeQuery("select * from no_such_table"));
            assertEquals("42P01", e.getSQLState());
            e = assertThrows(SQLException.class, () -> s.executeQuery("selec 1"));
            assertEquals("42601", e.getSQLState());
            e = assertThrows(SQLException.class, () -> s.executeQuery("select no_such_column from nation"));
            assertEquals("42703", e.getSQLState());
            assertEquals(25, literal(c, "select count(*) from nation"));
        }
    }

    @Test
    void autocommitOff() throws SQLException {
        try (Connection c = connect()) {
            c.setAutoCommit(false);
            assertEquals(5, literal(c, "select count(*) from region"));
            c.commit();
            try (PreparedStatement ps = c.prepareStatement("select count(*) from nation where n_regionkey = ?")) {
                ps.setInt(1, 1);
                try (ResultSet rs = ps.executeQuery()) {
                    assertTrue(rs.next());
                    assertEquals(5, rs.getLong(1));
                }
            }
            c.rollback();
        }
    }
}
