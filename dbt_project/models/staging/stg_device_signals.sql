select
    transaction_id,
    device_id,
    ip_risk_score,
    is_emulator,
    session_seconds,
    observed_at,
    _loaded_at as loaded_at
from {{ source('raw', 'device_signals') }}
