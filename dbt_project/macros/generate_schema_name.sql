{#- Custom schemas are used verbatim (staging, marts), not dbt's default <target>_<custom>,
    so DataHub URNs and other code can name warehouse.marts.fct_orders directly. -#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {{ (custom_schema_name or target.schema) | trim }}
{%- endmacro %}
