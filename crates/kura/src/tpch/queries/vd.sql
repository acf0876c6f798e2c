-- Variant of (D) at the paper's selectivity: 'Customer#000001%' picks 1,000 of SF 100's
-- 15 M customers (0.0067 %), and the prefix here picks 10 × SF customers (at least one).
select n.n_name, sum(ps.ps_supplycost), sum(l.l_quantity),
       sum(l.l_extendedprice*(1-l.l_discount)*(1+l.l_tax))
from customer c
join orders o on c.c_custkey = o.o_custkey
join lineitem l on o.o_orderkey = l.l_orderkey
join partsupp ps on l.l_partkey = ps.ps_partkey and l.l_suppkey = ps.ps_suppkey
join supplier s on s.s_suppkey = ps.ps_suppkey
join nation n on s.s_nationkey = n.n_nationkey
where c.c_name like ':1%'
group by n.n_name
order by n.n_name;
