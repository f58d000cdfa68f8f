with orders as (
    select
        customer_id,
        count(*) as lifetime_orders,
        sum(quantity * unit_price) filter (where status <> 'returned') as lifetime_spend,
        max(order_date) as last_order_date
    from {{ ref('stg_orders') }}
    where order_date <= {{ as_of_date() }}
    group by customer_id
)

select
    c.customer_id,
    c.email,
    c.country,
    c.segment,
    {{ as_of_date() }} - (c.signup_at at time zone 'UTC')::date as tenure_days,
    coalesce(o.lifetime_orders, 0) as lifetime_orders,
    coalesce(o.lifetime_spend, 0) as lifetime_spend,
    {{ as_of_date() }} - o.last_order_date as days_since_last_order
from {{ ref('stg_customers') }} as c
left join orders as o using (customer_id)
