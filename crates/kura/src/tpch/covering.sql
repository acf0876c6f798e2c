-- Covering indexes for paper 003's selective queries (A)-(D) and their variants:
-- each stores, beside its key, every column the index plan reads from the table,
-- so the plan reads index leaves only (index-only plans; one page per leaf of
-- entries instead of one page per column per fetched row). kura only (INCLUDE);
-- built in addition to indexes.sql, not part of the default benchmark set.
CREATE INDEX lineitem_partkey_cover ON lineitem (l_partkey) INCLUDE (l_quantity, l_extendedprice, l_discount, l_tax);
CREATE INDEX lineitem_orderkey_cover ON lineitem (l_orderkey) INCLUDE (l_partkey, l_suppkey, l_quantity, l_extendedprice, l_discount, l_tax);
CREATE INDEX orders_custkey_cover ON orders (o_custkey) INCLUDE (o_orderkey, o_orderpriority);
CREATE INDEX customer_name_cover ON customer (c_name) INCLUDE (c_custkey, c_name);
CREATE INDEX partsupp_part_supp_cover ON partsupp (ps_partkey, ps_suppkey) INCLUDE (ps_supplycost);
