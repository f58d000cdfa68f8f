select
    customer_id,
    churned,
    as_of_date
from {{ source('raw', 'churn_labels') }}
