select
    d.transaction_id,
    d.ip_risk_score,
    d.is_emulator,
    d.session_seconds,
    d.device_trust_score
from {{ ref('stg_device_signals_v2') }} as d
inner join {{ ref('stg_transactions') }} as t using (transaction_id)
