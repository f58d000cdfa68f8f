select
    transaction_id,
    order_id,
    customer_id,
    amount,
    currency,
    payment_method,
    merchant_category,
    occurred_at,
    _loaded_at as loaded_at
from {{ source('raw', 'transactions') }}
