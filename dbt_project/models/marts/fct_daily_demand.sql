select
    order_date,
    category,
    sum(quantity) as units_sold,
    sum(order_amount) as revenue,
    round(avg(unit_price), 2) as avg_unit_price,
    count(*) as order_count
from {{ ref('fct_orders') }}
group by order_date, category
