select
    customer_id,
    lower(email) as email,
    full_name,
    country,
    segment,
    signup_at,
    _loaded_at as loaded_at
from {{ source('raw', 'customers') }}
