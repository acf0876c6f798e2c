-- Variant of (A) at the paper's selectivity: the paper's 8,000 part keys are 0.04 % of
-- SF 100's 20 M parts, and 80 × SF keys select the same fraction at any scale factor.
select sum(l.l_quantity) as sum_qty,
       sum(l.l_extendedprice*(1-l.l_discount)*(1+l.l_tax))
from lineitem l
where l.l_partkey between 1 and :1;
