select
    ordered_at as day,
    count(*) as order_count,
    sum(amount) as revenue
from {{ ref('stg_orders') }}
group by ordered_at
order by ordered_at
