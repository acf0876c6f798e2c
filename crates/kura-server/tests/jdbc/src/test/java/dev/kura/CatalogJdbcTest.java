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
 * integer not null, l_comment varchar(44)), index `li_ok` and view `v1`.
 * (getColumns and getIndexInfo are not here: pgjdbc's queries for them use a
 * window function and set-returning functions over arrays that kura lacks.)
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
            assertEquals(List.of("lineitem"), column(md.getTables(null, "public", "%", new String[] {"TABLE"}), "TABLE_NAME"));
            assertEquals(List.of("v1"), column(md.getTables(null, "public", "%", new String[] {"VIEW"}), "TABLE_NAME"));
            ResultSet rs = md.getTables(null, null, "lineitem", null);
            assertTrue(rs.next());
            assertEquals("public", rs.getString("TABLE_SCHEM"));
            assertEquals("TABLE", rs.getString("TABLE_TYPE"));
            assertFalse(rs.next());
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
