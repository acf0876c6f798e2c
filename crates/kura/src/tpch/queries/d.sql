-- Selective query (D) of paper 003: a six-way join from a narrow customer range
select n.n_name, sum(ps.ps_supplycost), sum(l.l_quantity),
       sum(l.l_extendedprice*(1-l.l_discount)*(1+l.l_tax))
from customer c
join orders o on c.c_custkey = o.o_custkey
join lineitem l on o.o_orderkey = l.l_orderkey
join partsupp ps on l.l_partkey = ps.ps_partkey and l.l_suppkey = ps.ps_suppkey
join supplier s on s.s_suppkey = ps.ps_suppkey
join nation n on s.s_nationkey = n.n_nationkey
where c.c_name like 'Customer#000001%'
group by n.n_name
order by n.n_name;
