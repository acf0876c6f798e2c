-- Selective query (B) of paper 003: parts by name prefix joined to lineitem
select p.p_brand, sum(l.l_quantity),
       sum(l.l_extendedprice*(1-l.l_discount)*(1+l.l_tax))
from part p, lineitem l
where p.p_partkey = l.l_partkey and p.p_name like 'goldenrod lavender%'
group by p.p_brand
order by p.p_brand;
