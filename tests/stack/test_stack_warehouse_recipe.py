"""The warehouse's own recipe ``recall init`` writes, run as a team runs it (``recall ingest``) against a real
PostgreSQL: DataHub's postgres source finds the warehouse as it is, beside what dbt declares (a view with its
lineage, a table dbt does not build, the column types the warehouse holds)."""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
import yaml
from datahub.metadata.schema_classes import SchemaMetadataClass, UpstreamLineageClass

from recall_dagster.graph import LiteGraph
from seed.stack.warehouse import Warehouse

pytestmark = [pytest.mark.stack, pytest.mark.slow]

BIN = Path(sys.executable).parent


def urn(warehouse: Warehouse, table: str) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:postgres,{warehouse.database}.shop.{table},PROD)"


def test_init_s_postgres_recipe_ingests_the_warehouse_as_it_is(warehouse: Warehouse, tmp_path: Path) -> None:
    conn = warehouse.connect()
    conn.autocommit = True
    with closing(conn), conn.cursor() as cur:
        cur.execute("DROP SCHEMA IF EXISTS shop CASCADE; CREATE SCHEMA shop;"
                    "CREATE TABLE shop.orders (order_id integer, amount numeric(10, 2));"
                    "CREATE VIEW shop.big_orders AS SELECT order_id, amount FROM shop.orders WHERE amount > 100;")
    repo = tmp_path / "repo"
    (repo / "jaffle").mkdir(parents=True)
    (repo / "jaffle" / "dbt_project.yml").write_text("name: jaffle\nprofile: jaffle\nversion: '1.0'\n")
    (repo / "jaffle" / "profiles.yml").write_text(yaml.safe_dump({"jaffle": {"target": "dev", "outputs": {"dev": {
        "type": "postgres", "host": "{{ env_var('PG_HOST') }}", "port": warehouse.port, "user": warehouse.user,
        "pass": "", "dbname": warehouse.database, "schema": "shop"}}}}))
    graph = tmp_path / "datahub.db"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("RECALL_", "MLFLOW_"))},
           "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "PG_HOST": warehouse.host,
           "RECALL_HOME": str(tmp_path / "home"), "RECALL_GRAPH": str(graph), "DATAHUB_TELEMETRY_ENABLED": "false"}

    init = subprocess.run(["recall", "init"], cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert init.returncode == 0, init.stderr
    assert "the postgres recipe reads the warehouse as it is" in init.stderr
    recipe = repo / "recipes" / "postgres.yml"
    assert "${PG_HOST}" in recipe.read_text(), "the profile's env_var stays a variable DataHub expands"
    ingest = subprocess.run(["recall", "ingest", str(recipe)], cwd=repo, env=env, capture_output=True, text=True,
                            timeout=900)
    assert ingest.returncode == 0, ingest.stdout[-3000:] + ingest.stderr[-3000:]

    with closing(LiteGraph(str(graph))) as lite:
        view, table = urn(warehouse, "big_orders"), urn(warehouse, "orders")
        aspects = lite.get_aspects([view, table], [SchemaMetadataClass, UpstreamLineageClass])
    lineage = aspects[view][UpstreamLineageClass.ASPECT_NAME]
    assert [u.dataset for u in lineage.upstreams] == [table], "the view's lineage, from its SQL"
    columns = {f.fieldPath: f.nativeDataType for f in aspects[table][SchemaMetadataClass.ASPECT_NAME].fields}
    assert columns == {"order_id": "INTEGER", "amount": "NUMERIC(10, 2)"}, columns
