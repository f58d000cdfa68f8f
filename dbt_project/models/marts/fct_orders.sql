select
    o.order_id,
    o.customer_id,
    o.product_id,
    p.category,
    o.quantity,
    o.unit_price,
    o.quantity * o.unit_price as order_amount,
    o.order_date,
    o.ordered_at,
    o.status
from {{ ref('stg_orders') }} as o
join {{ ref('stg_products') }} as p using (product_id)
