{#- A column's values lie in [min_value, max_value]: catches a feed that changed its unit or scale. -#}
{% test between(model, column_name, min_value, max_value) %}
select {{ column_name }}
from {{ model }}
where {{ column_name }} < {{ min_value }} or {{ column_name }} > {{ max_value }}
{% endtest %}
