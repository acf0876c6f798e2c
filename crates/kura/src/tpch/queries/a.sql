-- Selective query (A) of paper 003: a range of part keys over lineitem
select sum(l.l_quantity) as sum_qty,
       sum(l.l_extendedprice*(1-l.l_discount)*(1+l.l_tax))
from lineitem l
where l.l_partkey between 1 and 8000;
