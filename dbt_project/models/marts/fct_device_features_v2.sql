select
    transaction_id,
    ip_risk_score,
    is_emulator,
    session_seconds,
    device_trust_score
from {{ ref('stg_device_signals_v2') }}
