select
    product_id,
    product_name,
    category,
    list_price,
    _loaded_at as loaded_at
from {{ source('raw', 'products') }}
