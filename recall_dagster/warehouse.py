"""The team's warehouse as its dbt profile reaches it: where Recall counts rows and reruns a training query.

A dbt team has already told dbt how to reach its warehouse, so asking again
(``lifecycle.row_counts``, ``impact.evaluation.query.connection``) is a chore
and a second place to get wrong. Recall reads the profile dbt reads, resolved
the way dbt resolves it (``--profiles-dir``, else ``DBT_PROFILES_DIR``, the
project, ``~/.dbt``; the target from ``DBT_TARGET`` or the profile's own;
``env_var(...)`` filled in from the environment), and turns the target into a
SQLAlchemy URL. Explicit connections still win: the profile is the last
connection tried. An adapter Recall cannot turn into a URL, or a profile it
cannot read, is a reason shown where a count is skipped, never a guess.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from recall_dagster.config.warehouse import Warehouse
from recall_dagster.errors import ConfigError


@dataclass(frozen=True)
class DbtTarget:
    """One output of a dbt profile, its values rendered."""

    project_dir: Path
    target_dir: Path  # where dbt writes its artifacts
    profile: str
    name: str
    output: Mapping[str, Any]  # as written: a value is rendered when it is read, so init never needs a secret
    environ: Mapping[str, str] = field(default_factory=dict)

    @property
    def platform(self) -> str:
        """DataHub's platform name for the adapter (``dbt-postgres`` writes ``postgres`` datasets)."""
        return str(self.value("type"))

    def raw(self, *keys: str) -> Any:
        """The first of ``keys`` the output sets, as the profile writes it."""
        return next((self.output[k] for k in keys if self.output.get(k) not in (None, "")), None)

    def value(self, *keys: str) -> str | None:
        """The first of ``keys`` the output sets, with dbt's ``env_var`` filled in."""
        raw = self.raw(*keys)
        return None if raw is None else str(_render(raw, self.environ))

    @property
    def database(self) -> str | None:
        """The first part of DataHub's dataset names for this target (the dbt source's default)."""
        value = self.value("database", "dbname", "project")
        path = self.value("path") if self.platform == "duckdb" else None
        if value is None and path not in (None, ":memory:"):
            value = Path(str(path)).stem  # dbt-duckdb names the catalog after the file
        return value


def dbt_target(
    project_dir: Path, profiles_dir: Path | None = None, target: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> DbtTarget:
    """The output dbt itself would use for this project, or a ConfigError naming what is missing."""
    env = os.environ if environ is None else environ
    project_file = project_dir / "dbt_project.yml"
    project = _yaml(project_file)
    profile_name = project.get("profile")
    if not profile_name:
        raise ConfigError(f"{project_file} names no profile")
    env_dir = env.get("DBT_PROFILES_DIR")
    for folder in (profiles_dir, Path(env_dir) if env_dir else None, project_dir, Path.home() / ".dbt"):
        if folder is None or not (folder / "profiles.yml").exists():
            continue
        profiles = _yaml(folder / "profiles.yml")
        profile = profiles.get(profile_name)
        if not isinstance(profile, Mapping):
            raise ConfigError(f"{folder / 'profiles.yml'} has no profile {profile_name!r}")
        name = str(target or env.get("DBT_TARGET") or _render(profile.get("target") or "dev", env))
        output = (profile.get("outputs") or {}).get(name)
        if not isinstance(output, Mapping) or "type" not in output:
            raise ConfigError(f"{folder / 'profiles.yml'}: profile {profile_name!r} has no output {name!r} with a type")
        return DbtTarget(project_dir, project_dir / str(project.get("target-path") or "target"),
                         str(profile_name), name, dict(output), env)
    raise ConfigError(f"no profiles.yml holds profile {profile_name!r} (give --profiles-dir or DBT_PROFILES_DIR)")


def warehouse_target(warehouse: Warehouse, environ: Mapping[str, str] | None = None) -> DbtTarget | None:
    """The configured project's target; None when no dbt project is named (config or ``DBT_PROJECT_DIR``)."""
    env = os.environ if environ is None else environ
    project = warehouse.dbt_project or env.get("DBT_PROJECT_DIR")
    if not project:
        return None
    profiles = Path(warehouse.profiles_dir).expanduser() if warehouse.profiles_dir else None
    return dbt_target(Path(project).expanduser(), profiles, warehouse.target, env)


def sqlalchemy_url(target: DbtTarget) -> str:
    """A SQLAlchemy URL reaching the target's warehouse; a ConfigError for an adapter without one."""
    from sqlalchemy.engine import URL

    kind, text = target.platform, target.value
    if kind in ("postgres", "redshift"):
        url = URL.create("postgresql+psycopg2", username=text("user"), password=text("password", "pass"),
                         host=text("host"), port=int(text("port") or (5439 if kind == "redshift" else 5432)),
                         database=text("dbname", "database"))
    elif kind == "duckdb":
        path = text("path") or ":memory:"
        if path == ":memory:":
            raise ConfigError(f"dbt target {target.name!r} is an in-memory DuckDB: nothing outlives dbt's run")
        resolved = Path(path) if Path(path).is_absolute() else target.project_dir / path
        return f"duckdb:///{resolved}"
    elif kind == "snowflake":
        query = {k: v for k in ("warehouse", "role") if (v := text(k))}
        url = URL.create("snowflake", username=text("user"), password=text("password"), host=text("account"),
                         database=f"{text('database')}/{text('schema')}", query=query)
    elif kind == "bigquery":
        keyfile = text("keyfile")
        url = URL.create("bigquery", host=text("project", "database"), database=text("dataset", "schema"),
                         query={"credentials_path": keyfile} if keyfile else {})
    else:
        raise ConfigError(f"dbt adapter {kind!r} of target {target.name!r}: Recall knows no SQLAlchemy URL for it; "
                          "name the connection in lifecycle.row_counts")
    return url.render_as_string(hide_password=False)


def warehouse_connection(warehouse: Warehouse, environ: Mapping[str, str] | None = None
                         ) -> tuple[tuple[str, ...], str | None, str]:
    """(globs over ``platform:name`` for the target's tables, its URL or None, why not); ((), None, "") when no
    dbt project is configured. The dbt source names each model twice, the warehouse table and the dbt node
    (``dbt:<database>.<schema>.<table>``); both are relations of this warehouse."""
    try:
        target = warehouse_target(warehouse, environ)
        if target is None:
            return (), None, ""
        database = target.database
        tail = f"{database.lower()}.*" if database else "*"
        globs = (f"{target.platform}:{tail}", f"dbt:{tail}")
    except ConfigError as err:
        return ("*",), None, f"dbt profile: {err}"
    try:
        return globs, sqlalchemy_url(target), ""
    except ConfigError as err:
        return globs, None, f"dbt profile: {err}"


class _Marked(str):
    """A value a dbt filter marked: ``as_number``, ``as_bool`` and ``as_native`` ask for a Python literal,
    ``as_text`` for the text as written (dbt's native rendering, which its profiles go through)."""

    want: str = "text"


_FILTERS = {f"as_{want}": type(f"_As{want.title()}", (_Marked,), {"want": want})
            for want in ("text", "number", "bool", "native")}


def _native(nodes: list[Any], value: str) -> Any:
    """What dbt makes of a rendered profile value: one marked node becomes the literal it asks for (a number
    that is not one is an error, as in dbt), anything else stays what the template produced."""
    if len(nodes) != 1:
        return "".join(str(node) for node in nodes)
    node = nodes[0]
    if not isinstance(node, _Marked) or node.want == "text":
        return str(node) if isinstance(node, _Marked) else node
    try:
        result = ast.literal_eval(node)
    except (ValueError, SyntaxError, MemoryError):
        result = str(node)
    is_number = isinstance(result, (int, float)) and not isinstance(result, bool)
    if node.want == "number" and not is_number or node.want == "bool" and not isinstance(result, bool):
        raise ConfigError(f"the dbt profile value {value!r} gives {str(node)!r}, which is not a {node.want}")
    return result


def _render(value: Any, env: Mapping[str, str]) -> Any:
    """A profile value rendered as dbt renders it: ``env_var`` from the environment, dbt's ``as_number``,
    ``as_bool``, ``as_native`` and ``as_text`` filters; other values as written."""
    if not isinstance(value, str) or "{{" not in value:
        return value
    from jinja2 import StrictUndefined
    from jinja2.nativetypes import NativeCodeGenerator
    from jinja2.sandbox import SandboxedEnvironment

    missing = object()

    def env_var(name: str, default: Any = missing) -> Any:
        if name in env:
            return env[name]
        if default is missing:
            raise ConfigError(f"the dbt profile reads env_var({name!r}), which is not set")
        return default

    class NativeSandbox(SandboxedEnvironment):
        code_generator_class = NativeCodeGenerator  # keeps each node's type, so a filter's mark survives

    jinja = NativeSandbox(undefined=StrictUndefined)
    jinja.filters.update(_FILTERS)
    try:
        template = jinja.from_string(value)
        nodes = list(template.root_render_func(template.new_context({"env_var": env_var})))
    except ConfigError:
        raise
    except Exception as err:  # any template dbt could render but we cannot is a reason, not a crash
        raise ConfigError(f"the dbt profile value {value!r} cannot be rendered: {err}") from None
    return _native(nodes, value)


def _yaml(path: Path) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path} does not exist") from None
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path} is not readable YAML: {err}") from None
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path} is not a YAML mapping")
    return loaded
