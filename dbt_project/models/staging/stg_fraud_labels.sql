select
    transaction_id,
    is_fraud,
    labeled_at
from {{ source('raw', 'fraud_labels') }}
