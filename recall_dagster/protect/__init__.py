"""``recall protect``: reliability per dataset on production paths, the untested critical columns, dbt tests to add."""
