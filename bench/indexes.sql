-- The secondary indexes of the benchmark, built by every system that has them
-- (PostgreSQL, SQLite, kura): the keys and the join/selection attributes of the
-- selective queries (A)-(D) of paper 003, which evaluates with "indexes on every
-- join/selection attribute". B+trees everywhere; one statement per index.
CREATE INDEX lineitem_partkey ON lineitem (l_partkey);
CREATE INDEX lineitem_orderkey ON lineitem (l_orderkey);
CREATE INDEX orders_orderkey ON orders (o_orderkey);
CREATE INDEX orders_custkey ON orders (o_custkey);
CREATE INDEX customer_custkey ON customer (c_custkey);
CREATE INDEX customer_name ON customer (c_name);
CREATE INDEX part_partkey ON part (p_partkey);
CREATE INDEX part_name ON part (p_name);
CREATE INDEX partsupp_part_supp ON partsupp (ps_partkey, ps_suppkey);
CREATE INDEX supplier_suppkey ON supplier (s_suppkey);
CREATE INDEX nation_nationkey ON nation (n_nationkey);
