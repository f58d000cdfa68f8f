"""Create ``.venv`` and install the project into it: uv when it works, pip when it does not.

Why: `make demo` and `make test` start by installing some 250 pinned packages, which pip does in minutes
and uv in a fraction of that (docs/operations.md, "Fresh clone"). uv is not on a bare machine, so a pinned
uv wheel is installed with the venv's own pip into ``.venv/.uv``, outside the project's environment. uv does
not read pip's configuration, so the package-index settings pip has on this machine (``pip config list``:
its files and PIP_* variables) are passed to uv as its own flags. ``constraints.txt`` stays the one lock
of versions for both installers. If installing uv, or installing with it, fails, pip installs instead and
one line says so. RECALL_INSTALLER=pip or =uv forces one installer (with no fallback).

The demo's DataHub ingestion runs in an environment of its own (``recall ingest``'s, see
``recall_dagster/ingest_env.py``): its sources pin what the demo's stack has moved past. It is made here too,
beside the project's, at ``.venv/ingest/acryl-datahub-<version>``, by the same installer from its own lock,
``constraints-ingest.txt``, and recorded as ``recall ingest`` records what it installed, so the demo's first
ingestion finds it ready.

Run by the Makefile's stamp target: ``python3.12 scripts/install_venv.py .venv``.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable, Mapping, Sequence

UV = "uv==0.13.9"  # the bootstrap installer's own pin; the project's versions live in constraints.txt
PROJECT = ("-c", "constraints.txt", "-e", ".[dev,demo]")
INGEST_LOCK = "constraints-ingest.txt"  # the ingestion environment's lock, apart from the project's
INGEST_EXTRAS = ("dbt", "feast", "mlflow")  # DataHub's sources the demo runs (seed/ingest/recipes.py)
INGEST_RECORD = "recall-installed.json"  # what recall ingest reads to know what an environment holds
INSTALLERS = ("uv", "pip")
# pip's sections that apply to `pip install`, lowest precedence first; PIP_* variables show as ":env:".
SECTIONS = ("global", "install", ":env:")

Run = Callable[[Sequence[str], Mapping[str, str]], None]


class InstallError(Exception):
    """An installer could not install the project."""


def installers(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The installers to try, in order: uv then pip, or the one RECALL_INSTALLER names."""
    forced = environ.get("RECALL_INSTALLER", "").strip().lower()
    if not forced:
        return INSTALLERS
    if forced not in INSTALLERS:
        raise InstallError(f"RECALL_INSTALLER={forced!r}: use one of {', '.join(INSTALLERS)}, or leave it unset")
    return (forced,)


def pip_settings(config_list: str) -> dict[str, str]:
    """pip's settings for `pip install` from ``pip config list``'s lines (``section.key='value'``):
    a PIP_* variable over the [install] section over [global], as pip itself ranks them."""
    ranked: dict[str, tuple[int, str]] = {}
    for line in config_list.splitlines():
        name, sep, raw = line.partition("=")
        section, dot, key = name.rpartition(".")
        if not (sep and dot) or section not in SECTIONS:
            continue
        rank = SECTIONS.index(section)
        if key not in ranked or rank >= ranked[key][0]:
            ranked[key] = (rank, str(ast.literal_eval(raw)))
    return {key: value for key, (_, value) in ranked.items()}


def uv_index(settings: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """uv's flags and environment for the index settings pip has: the same indexes, local wheel folders,
    constraints, trusted hosts, certificate bundle and timeout. pip takes the best version across all its
    indexes, so uv is told to as well (its default takes the first index that has a package at all)."""
    flags: list[str] = []
    if settings.get("index-url"):
        flags += ["--default-index", settings["index-url"]]
    for url in settings.get("extra-index-url", "").split():
        flags += ["--index", url]
    for place in settings.get("find-links", "").split():
        flags += ["--find-links", place]
    for constraint in settings.get("constraint", "").split():
        flags += ["-c", constraint]
    for host in settings.get("trusted-host", "").split():
        flags += ["--allow-insecure-host", host]
    if _truthy(settings.get("no-index", "")):
        flags.append("--no-index")
    flags += ["--index-strategy", "unsafe-best-match"]
    env: dict[str, str] = {}
    if settings.get("cert"):
        env["SSL_CERT_FILE"] = settings["cert"]
    timeout = settings.get("default-timeout") or settings.get("timeout")
    if timeout:
        env["UV_HTTP_TIMEOUT"] = timeout
    return flags, env


def _truthy(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


def install(venv: Path, environ: Mapping[str, str], run: Run, config_list: Callable[[], str],
            say: Callable[[str], None], lock: str | None = None) -> str:
    """Install the project into ``venv``, then the ingestion environment beside it when ``lock`` (the text of
    ``constraints-ingest.txt``) is given, with the first installer that succeeds; returns its name."""
    chosen = installers(environ)
    for name, instead in zip(chosen, chosen[1:]):
        try:
            _install_with(name, venv, environ, run, config_list, lock)
            return name
        except InstallError as err:
            say(f"install_venv: {name} failed ({err}); installing with {instead} instead")
    _install_with(chosen[-1], venv, environ, run, config_list, lock)
    return chosen[-1]


def ingestion_env(venv: Path, lock: str) -> Path:
    """Where ``recall ingest``'s code looks for the environment of the acryl-datahub the lock pins, when its
    root is ``venv/ingest`` (``IngestEnv.path``)."""
    pins = [line.partition("==")[2].strip() for line in lock.splitlines() if line.startswith("acryl-datahub==")]
    if len(pins) != 1:
        raise InstallError(f"{INGEST_LOCK} pins no acryl-datahub version (one `acryl-datahub==` line)")
    return venv / "ingest" / f"acryl-datahub-{pins[0]}"


def _install_with(name: str, venv: Path, environ: Mapping[str, str], run: Run, config_list: Callable[[], str],
                  lock: str | None) -> None:
    python = str(venv / "bin" / "python")
    ingest = ingestion_env(venv, lock) if lock is not None else None
    requirement = ("-c", INGEST_LOCK, f"acryl-datahub[{','.join(INGEST_EXTRAS)}]=={ingest.name.rpartition('-')[2]}"
                   ) if ingest else ()
    if ingest and not (ingest / "bin" / "python").exists():
        run([sys.executable, "-m", "venv", str(ingest)], environ)
    if name == "pip":
        run([python, "-m", "pip", "install", "-q", "--upgrade", "pip"], environ)
        run([python, "-m", "pip", "install", "-q", *PROJECT], environ)
        if ingest:
            run([str(ingest / "bin" / "python"), "-m", "pip", "install", "-q", *requirement], environ)
    else:
        home = venv / ".uv"
        if not (home / f"{UV.replace('==', '-')}.dist-info").exists():  # missing, or another pin's uv
            # -qq: pip warns of every file:// index that has no uv folder; an error still shows
            run([python, "-m", "pip", "install", "-qq", "--only-binary", ":all:", "--upgrade", "--target", str(home),
                 UV], environ)
        flags, env = uv_index(pip_settings(config_list()))
        uv = str(home / "bin" / "uv")
        run([uv, "pip", "install", "-q", "--python", python, *flags, *PROJECT], {**environ, **env})
        if ingest:
            run([uv, "pip", "install", "-q", "--python", str(ingest / "bin" / "python"), *flags, *requirement],
                {**environ, **env})
    if ingest:
        ingest.mkdir(parents=True, exist_ok=True)
        (ingest / INGEST_RECORD).write_text(json.dumps({"extras": sorted(INGEST_EXTRAS), "packages": []}),
                                            encoding="utf-8")


def _run(command: Sequence[str], environ: Mapping[str, str]) -> None:
    done = subprocess.run(list(command), env=dict(environ), check=False)
    if done.returncode != 0:
        raise InstallError(f"`{' '.join(command[:4])} ...` exited {done.returncode}")


def main(argv: Sequence[str]) -> int:
    """``install_venv.py VENV``: create VENV with this Python if missing, then install the project into it."""
    venv = Path(argv[0] if argv else ".venv")
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")

    def config_list() -> str:
        return subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True, text=True,
                              check=False).stdout

    lock = Path(INGEST_LOCK)
    try:
        install(venv, os.environ, _run, config_list, lambda line: print(line, file=sys.stderr),
                lock.read_text(encoding="utf-8") if lock.exists() else None)
    except InstallError as err:
        print(f"install_venv: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
