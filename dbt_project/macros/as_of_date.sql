{#- The date that day counts are measured against: var('as_of') when given, else today.
    Passing as_of makes dim_customers reproducible across days. -#}
{% macro as_of_date() -%}
    {%- set as_of = var('as_of', none) -%}
    {%- if as_of -%} date '{{ as_of }}' {%- else -%} current_date {%- endif -%}
{%- endmacro %}
