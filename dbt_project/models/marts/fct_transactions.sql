select
    t.transaction_id,
    t.order_id,
    t.customer_id,
    t.amount,
    t.payment_method,
    t.merchant_category,
    extract(hour from t.occurred_at at time zone 'UTC')::int as hour_of_day,
    o.unit_price,
    round(t.amount / nullif(o.unit_price, 0), 4) as amount_to_price_ratio,
    t.occurred_at
from {{ ref('stg_transactions') }} as t
left join {{ ref('stg_orders') }} as o using (order_id)
