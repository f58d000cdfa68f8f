select
    transaction_id,
    ip_risk_score,
    is_emulator,
    session_seconds,
    loaded_at
from {{ ref('stg_device_signals') }}
