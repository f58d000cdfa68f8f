select
    order_id,
    customer_id,
    product_id,
    quantity,
    unit_price,
    status,
    ordered_at,
    (ordered_at at time zone 'UTC')::date as order_date,
    _loaded_at as loaded_at
from {{ source('raw', 'orders') }}
