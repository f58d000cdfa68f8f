"""Create ``.venv`` and install the project into it: uv when it works, pip when it does not.

Why: `make demo` and `make test` start by installing some 250 pinned packages, which pip does in minutes
and uv in a fraction of that (docs/operations.md, "Fresh clone"). uv is not on a bare machine, so a pinned
uv wheel is installed with the venv's own pip into ``.venv/.uv``, outside the project's environment. uv does
not read pip's configuration, so the package-index settings pip has on this machine (``pip config list``:
its files and PIP_* variables) are passed to uv as its own flags. ``constraints.txt`` stays the one lock
of versions for both installers. If installing uv, or installing with it, fails, pip installs instead and
one line says so. RECALL_INSTALLER=pip or =uv forces one installer (with no fallback).

Run by the Makefile's stamp target: ``python3.11 scripts/install_venv.py .venv``.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable, Mapping, Sequence

UV = "uv==0.13.9"  # the bootstrap installer's own pin; the project's versions live in constraints.txt
PROJECT = ("-c", "constraints.txt", "-e", ".[dev,demo]")
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
            say: Callable[[str], None]) -> str:
    """Install the project into ``venv`` with the first installer that succeeds; returns its name."""
    chosen = installers(environ)
    for name, instead in zip(chosen, chosen[1:]):
        try:
            _install_with(name, venv, environ, run, config_list)
            return name
        except InstallError as err:
            say(f"install_venv: {name} failed ({err}); installing with {instead} instead")
    _install_with(chosen[-1], venv, environ, run, config_list)
    return chosen[-1]


def _install_with(name: str, venv: Path, environ: Mapping[str, str], run: Run, config_list: Callable[[], str]) -> None:
    python = str(venv / "bin" / "python")
    if name == "pip":
        run([python, "-m", "pip", "install", "-q", "--upgrade", "pip"], environ)
        run([python, "-m", "pip", "install", "-q", *PROJECT], environ)
        return
    home = venv / ".uv"
    if not (home / f"{UV.replace('==', '-')}.dist-info").exists():  # missing, or another pin's uv
        # -qq: pip warns of every file:// index that has no uv folder; an error still shows
        run([python, "-m", "pip", "install", "-qq", "--only-binary", ":all:", "--upgrade", "--target", str(home), UV],
            environ)
    flags, env = uv_index(pip_settings(config_list()))
    run([str(home / "bin" / "uv"), "pip", "install", "-q", "--python", python, *flags, *PROJECT], {**environ, **env})


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

    try:
        install(venv, os.environ, _run, config_list, lambda line: print(line, file=sys.stderr))
    except InstallError as err:
        print(f"install_venv: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
