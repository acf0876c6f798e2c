-- Selective query (C) of paper 003: customers by name prefix through orders to lineitem
select o.o_orderpriority, sum(l.l_quantity),
       sum(l.l_extendedprice*(1-l.l_discount)*(1+l.l_tax))
from customer c
join orders o on c.c_custkey = o.o_custkey
join lineitem l on o.o_orderkey = l.l_orderkey
where c.c_name like 'Customer#00001%'
group by o.o_orderpriority
order by o.o_orderpriority;
