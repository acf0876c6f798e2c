-- Variant of (C) at the paper's selectivity: 'Customer#00001%' picks 10,000 of SF 100's
-- 15 M customers (0.067 %), and the prefix here picks 100 × SF customers (keys 10^r … 2·10^r − 1).
select o.o_orderpriority, sum(l.l_quantity),
       sum(l.l_extendedprice*(1-l.l_discount)*(1+l.l_tax))
from customer c
join orders o on c.c_custkey = o.o_custkey
join lineitem l on o.o_orderkey = l.l_orderkey
where c.c_name like ':1%'
group by o.o_orderpriority
order by o.o_orderpriority;
