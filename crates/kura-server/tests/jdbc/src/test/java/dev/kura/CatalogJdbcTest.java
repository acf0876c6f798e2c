package dev.kura;

import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.sql.*;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * pgjdbc's DatabaseMetaData over kura's system catalogs. Runs with
 * -Dkura.catalog=true on a database holding table `lineitem` (l_orderkey
 * integer not null, l_comment varchar(44), l_extendedprice decimal(15,2),
 * l_shipdate date), index `li_ok`, view `v1`, table `orders` (o_orderkey
 * integer primary key) and `shipments` (s_order references orders, primary
 * key (s_order, s_id), unique index `shipments_sid` on s_id).
 */
class CatalogJdbcTest {
    @BeforeEach
    void onlyWithTheCatalogDatabase() {
        assumeTrue(Boolean.parseBoolean(System.getProperty("kura.catalog")), "run with -Dkura.catalog=true");
    }

    private static Connection connect() throws SQLException {
        String port = System.getProperty("kura.port");
        return DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + port + "/kura", "tester", "");
    }

    private static List<String> column(ResultSet rs, String name) throws SQLException {
        List<String> out = new ArrayList<>();
        while (rs.next()) {
            out.add(rs.getString(name));
        }
        rs.close();
        return out;
    }

    @Test
    void getTablesListsTablesAndViews() throws SQLException {
        try (Connection c = connect()) {
            DatabaseMetaData md = c.getMetaData();
            assertEquals(
                    List.of("lineitem", "orders", "shipments"),
                    column(md.getTables(null, "public", "%", new String[] {"TABLE"}), "TABLE_NAME"));
            assertEquals(List.of("v1"), column(md.getTables(null, "public", "%", new String[] {"VIEW"}), "TABLE_NAME"));
            ResultSet rs = md.getTables(null, null, "lineitem", null);
            assertTrue(rs.next());
            assertEquals("public", rs.getString("TABLE_SCHEM"));
            assertEquals("TABLE", rs.getString("TABLE_TYPE"));
            assertFalse(rs.next());
        }
    }

    @Test
    void getColumnsDescribesEveryColumnInOrder() throws SQLException {
        try (Connection c = connect()) {
            DatabaseMetaData md = c.getMetaData();
            ResultSet rs = md.getColumns(null, "public", "lineitem", "%");
            String[] names = {"l_orderkey", "l_comment", "l_extendedprice", "l_shipdate"};
            int[] types = {Types.INTEGER, Types.VARCHAR, Types.NUMERIC, Types.DATE};
            String[] typeNames = {"int4", "varchar", "numeric", "date"};
            for (int i = 0; i < names.length; i++) {
                assertTrue(rs.next(), "row for " + names[i]);
                assertEquals("lineitem", rs.getString("TABLE_NAME"));
                assertEquals(names[i], rs.getString("COLUMN_NAME"));
                assertEquals(types[i], rs.getInt("DATA_TYPE"), names[i]);
                assertEquals(typeNames[i], rs.getString("TYPE_NAME"), names[i]);
                assertEquals(i + 1, rs.getInt("ORDINAL_POSITION"), names[i]);
                assertEquals(i == 0 ? "NO" : "YES", rs.getString("IS_NULLABLE"), names[i]);
                assertEquals(
                        i == 0 ? DatabaseMetaData.columnNoNulls : DatabaseMetaData.columnNullable,
                        rs.getInt("NULLABLE"),
                        names[i]);
            }
            assertFalse(rs.next());
            rs.close();
            // Sizes: varchar(44) and decimal(15,2).
            rs = md.getColumns(null, "public", "lineitem", "l_comment");
            assertTrue(rs.next());
            assertEquals(44, rs.getInt("COLUMN_SIZE"));
            assertFalse(rs.next());
            rs.close();
            rs = md.getColumns(null, "public", "lineitem", "l_extendedprice");
            assertTrue(rs.next());
            assertEquals(15, rs.getInt("COLUMN_SIZE"));
            assertEquals(2, rs.getInt("DECIMAL_DIGITS"));
            assertFalse(rs.next());
            rs.close();
            // A view's columns, and every table of a pattern with positions per table.
            assertEquals(List.of("l_orderkey"), column(md.getColumns(null, "public", "v1", "%"), "COLUMN_NAME"));
            List<String> all = new ArrayList<>();
            rs = md.getColumns(null, "public", "%", "%");
            while (rs.next()) {
                all.add(rs.getString("TABLE_NAME") + "." + rs.getString("COLUMN_NAME") + ":" + rs.getInt("ORDINAL_POSITION"));
            }
            rs.close();
            assertEquals(
                    List.of("lineitem.l_orderkey:1", "lineitem.l_comment:2", "lineitem.l_extendedprice:3",
                            "lineitem.l_shipdate:4", "orders.o_orderkey:1", "shipments.s_id:1",
                            "shipments.s_order:2", "v1.l_orderkey:1"),
                    all);
        }
    }

    @Test
    void foreignKeysBothWays() throws SQLException {
        try (Connection c = connect()) {
            DatabaseMetaData md = c.getMetaData();
            for (ResultSet rs : new ResultSet[] {
                md.getImportedKeys(null, "public", "shipments"), md.getExportedKeys(null, "public", "orders")
            }) {
                assertTrue(rs.next());
                assertEquals("orders", rs.getString("PKTABLE_NAME"));
                assertEquals("o_orderkey", rs.getString("PKCOLUMN_NAME"));
                assertEquals("shipments", rs.getString("FKTABLE_NAME"));
                assertEquals("s_order", rs.getString("FKCOLUMN_NAME"));
                assertEquals(1, rs.getInt("KEY_SEQ"));
                assertEquals("orders_pkey", rs.getString("PK_NAME"));
                assertEquals("shipments_s_order_fkey", rs.getString("FK_NAME"));
                assertFalse(rs.next());
                rs.close();
            }
            assertFalse(md.getImportedKeys(null, "public", "orders").next());
        }
    }

    /** The rows as "name:column:position" strings, in the order pgjdbc returns them. */
    private static List<String> keyRows(ResultSet rs, String nameCol, String posCol) throws SQLException {
        List<String> out = new ArrayList<>();
        while (rs.next()) {
            out.add(rs.getString(nameCol) + ":" + rs.getString("COLUMN_NAME") + ":" + rs.getInt(posCol));
        }
        rs.close();
        return out;
    }

    /** Key and index listings (pgjdbc reads _pg_expandarray's record), as PostgreSQL 15 answers them. */
    @Test
    void primaryKeysIndexesAndBestRowIdentifier() throws SQLException {
        try (Connection c = connect()) {
            DatabaseMetaData md = c.getMetaData();
            // Key columns in key order, which is not the table's column order.
            assertEquals(List.of("shipments_pkey:s_order:1", "shipments_pkey:s_id:2"),
                keyRows(md.getPrimaryKeys(null, "public", "shipments"), "PK_NAME", "KEY_SEQ"));
            assertEquals(List.of("orders_pkey:o_orderkey:1"),
                keyRows(md.getPrimaryKeys(null, "public", "orders"), "PK_NAME", "KEY_SEQ"));
            assertEquals(List.of(), keyRows(md.getPrimaryKeys(null, "public", "lineitem"), "PK_NAME", "KEY_SEQ"));
            List<String> want = List.of("shipments_pkey:s_order:1", "shipments_pkey:s_id:2", "shipments_sid:s_id:1");
            assertEquals(want, keyRows(md.getIndexInfo(null, "public", "shipments", false, false),
                "INDEX_NAME", "ORDINAL_POSITION"));
            assertEquals(want, keyRows(md.getIndexInfo(null, "public", "shipments", true, false),
                "INDEX_NAME", "ORDINAL_POSITION"));
            ResultSet rs = md.getIndexInfo(null, "public", "lineitem", false, false);
            assertTrue(rs.next());
            assertEquals("li_ok", rs.getString("INDEX_NAME"));
            assertTrue(rs.getBoolean("NON_UNIQUE"));
            assertEquals("A", rs.getString("ASC_OR_DESC"));
            assertEquals(DatabaseMetaData.tableIndexOther, rs.getShort("TYPE"));
            assertFalse(rs.next());
            rs.close();
            assertEquals(List.of(), keyRows(md.getIndexInfo(null, "public", "lineitem", true, false),
                "INDEX_NAME", "ORDINAL_POSITION"));
            List<String> best = column(md.getBestRowIdentifier(null, "public", "shipments",
                DatabaseMetaData.bestRowSession, false), "COLUMN_NAME");
            assertEquals(List.of("s_id", "s_order"), best);
        }
    }

    @Test
    void typesFunctionsAndProcedures() throws SQLException {
        try (Connection c = connect()) {
            DatabaseMetaData md = c.getMetaData();
            List<String> types = column(md.getTypeInfo(), "TYPE_NAME");
            for (String t : List.of("int4", "int8", "numeric", "varchar", "date", "bool")) {
                assertTrue(types.contains(t), t + " in " + types);
            }
            List<String> functions = column(md.getFunctions(null, null, "array%"), "FUNCTION_NAME");
            assertTrue(functions.contains("array_length"), functions.toString());
            assertEquals(List.of(), column(md.getProcedures(null, "public", "%"), "PROCEDURE_NAME"));
        }
    }

    @Test
    void getSchemasListsTheSchemas() throws SQLException {
        try (Connection c = connect()) {
            List<String> schemas = column(c.getMetaData().getSchemas(), "TABLE_SCHEM");
            assertTrue(schemas.contains("public"), schemas.toString());
            assertTrue(schemas.contains("pg_catalog"), schemas.toString());
            assertTrue(schemas.contains("information_schema"), schemas.toString());
        }
    }
}
