-- The index set of paper 003's evaluation: every attribute used in TPC-H join
-- conditions and selections — primary keys, foreign keys, the date columns — plus
-- c_name and p_name for the selective queries (A)–(D).
CREATE UNIQUE INDEX region_pk ON region (r_regionkey);
CREATE UNIQUE INDEX nation_pk ON nation (n_nationkey);
CREATE INDEX nation_regionkey ON nation (n_regionkey);
CREATE UNIQUE INDEX supplier_pk ON supplier (s_suppkey);
CREATE INDEX supplier_nationkey ON supplier (s_nationkey);
CREATE UNIQUE INDEX customer_pk ON customer (c_custkey);
CREATE INDEX customer_nationkey ON customer (c_nationkey);
CREATE INDEX customer_name ON customer (c_name);
CREATE UNIQUE INDEX part_pk ON part (p_partkey);
CREATE INDEX part_name ON part (p_name);
CREATE UNIQUE INDEX partsupp_pk ON partsupp (ps_partkey, ps_suppkey);
CREATE INDEX partsupp_partkey ON partsupp (ps_partkey);
CREATE INDEX partsupp_suppkey ON partsupp (ps_suppkey);
CREATE UNIQUE INDEX orders_pk ON orders (o_orderkey);
CREATE INDEX orders_custkey ON orders (o_custkey);
CREATE INDEX orders_orderdate ON orders (o_orderdate);
CREATE UNIQUE INDEX lineitem_pk ON lineitem (l_orderkey, l_linenumber);
CREATE INDEX lineitem_orderkey ON lineitem (l_orderkey);
CREATE INDEX lineitem_partkey ON lineitem (l_partkey);
CREATE INDEX lineitem_suppkey ON lineitem (l_suppkey);
CREATE INDEX lineitem_part_supp ON lineitem (l_partkey, l_suppkey);
CREATE INDEX lineitem_shipdate ON lineitem (l_shipdate);
