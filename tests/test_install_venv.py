"""`make demo` and `make test` install with uv where it works and pip where it does not, from the same
pins and the same package indexes pip is configured with; nothing here touches the network."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import pytest

from scripts.install_venv import InstallError, install, pip_settings, uv_index

# `pip config list` as this kind of machine prints it: /etc/pip.conf, /etc/xdg/pip and PIP_* variables.
MACHINE = """\
:env:.cert='/etc/ssl/certs/ca-certificates.crt'
:env:.default-timeout='180'
:env:.find-links='/opt/wheels'
global.cert='/etc/ssl/certs/ca-certificates.crt'
global.constraint='/etc/xdg/pip/constraints.txt'
global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'
global.find-links='/opt/wheels'
"""


class Machine:
    """Runs nothing: records each command, and fails those of the installers named in ``broken``."""

    def __init__(self, *broken: str) -> None:
        self.broken, self.commands, self.said = broken, [], []

    def run(self, command: Sequence[str], environ: Mapping[str, str]) -> None:
        self.commands.append(list(command))
        if any(name in self._installer(command) for name in self.broken):
            raise InstallError(f"{command[0]} exited 1")

    @staticmethod
    def _installer(command: Sequence[str]) -> str:
        return "uv" if command[0].endswith("/uv") or "uv==" in " ".join(command) else "pip"

    def install(self, environ: Mapping[str, str], venv: Path) -> str:
        return install(venv, environ, self.run, lambda: MACHINE, self.said.append)

    def by(self, installer: str) -> list[list[str]]:
        return [c for c in self.commands if self._installer(c) == installer]


def test_uv_uses_the_indexes_wheels_and_caps_pip_is_configured_with() -> None:
    flags, env = uv_index(pip_settings(MACHINE))
    pairs = list(zip(flags[::2], flags[1::2]))
    assert ("--index", "file:///opt/pypi/simple") in pairs and ("--index", "file:///opt/pypi-more/simple") in pairs
    assert ("--find-links", "/opt/wheels") in pairs
    assert ("-c", "/etc/xdg/pip/constraints.txt") in pairs, "the machine's cap on torch binds uv too"
    assert ("--index-strategy", "unsafe-best-match") in pairs, "the best version across indexes, as pip picks"
    assert env == {"SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt", "UV_HTTP_TIMEOUT": "180"}
    assert "--default-index" not in flags, "no index-url set: uv keeps PyPI, as pip does"


def test_a_pip_variable_wins_over_pip_conf_as_it_does_for_pip() -> None:
    settings = pip_settings(MACHINE + ":env:.index-url='https://mirror.example/simple'\n"
                            "install.index-url='https://install-section.example/simple'\n"
                            "global.index-url='https://global.example/simple'\n"
                            "download.no-index='true'\n")
    flags, _ = uv_index(settings)
    assert flags[flags.index("--default-index") + 1] == "https://mirror.example/simple"
    assert "--no-index" not in flags, "a setting of `pip download` does not apply to an install"


def test_uv_installs_the_project_from_constraints_txt_into_the_venv(tmp_path: Path) -> None:
    machine = Machine()
    assert machine.install({}, tmp_path / ".venv") == "uv"
    bootstrap, project = machine.by("uv")
    assert "--only-binary" in bootstrap and bootstrap[-1].startswith("uv==") and str(tmp_path / ".venv/.uv") in bootstrap
    assert project[:3] == [str(tmp_path / ".venv/.uv/bin/uv"), "pip", "install"]
    assert project[project.index("--python") + 1] == str(tmp_path / ".venv/bin/python")
    assert project[-4:] == ["-c", "constraints.txt", "-e", ".[dev,demo]"]
    assert machine.by("pip") == [] and machine.said == []


def test_a_failed_uv_falls_back_to_pip_and_says_so_in_one_line(tmp_path: Path) -> None:
    machine = Machine("uv")
    assert machine.install({}, tmp_path / ".venv") == "pip"
    assert machine.by("pip")[-1][-4:] == ["-c", "constraints.txt", "-e", ".[dev,demo]"], "the same pins"
    assert len(machine.said) == 1 and "installing with pip instead" in machine.said[0]


def test_recall_installer_pip_never_tries_uv(tmp_path: Path) -> None:
    machine = Machine()
    assert machine.install({"RECALL_INSTALLER": "pip"}, tmp_path / ".venv") == "pip"
    assert machine.by("uv") == [] and machine.said == []


def test_recall_installer_uv_fails_rather_than_fall_back(tmp_path: Path) -> None:
    machine = Machine("uv")
    with pytest.raises(InstallError):
        machine.install({"RECALL_INSTALLER": "uv"}, tmp_path / ".venv")
    assert machine.by("pip") == []


def test_an_unknown_installer_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(InstallError, match="RECALL_INSTALLER='conda'"):
        Machine().install({"RECALL_INSTALLER": "conda"}, tmp_path / ".venv")


def test_a_uv_already_bootstrapped_is_reused_and_another_pins_uv_is_replaced(tmp_path: Path) -> None:
    venv = tmp_path / ".venv"
    (venv / ".uv" / "uv-0.13.9.dist-info").mkdir(parents=True)
    machine = Machine()
    machine.install({}, venv)
    assert [c[:3] for c in machine.by("uv")] == [[str(venv / ".uv/bin/uv"), "pip", "install"]], "no second download"
    (venv / ".uv" / "uv-0.13.9.dist-info").rename(venv / ".uv" / "uv-0.12.0.dist-info")
    machine = Machine()
    machine.install({}, venv)
    bootstrap = machine.by("uv")[0]
    assert "--upgrade" in bootstrap and bootstrap[-1] == "uv==0.13.9", "a bumped pin takes effect in an old .venv"


LOCK = "acryl-datahub==1.7.0.17\nfeast==0.47.0\n"


def test_the_ingestion_environment_is_made_beside_the_project_from_its_own_lock(tmp_path: Path) -> None:
    venv = tmp_path / ".venv"
    machine = Machine()
    assert install(venv, {}, machine.run, lambda: MACHINE, machine.said.append, LOCK) == "uv"
    ingest = venv / "ingest" / "acryl-datahub-1.7.0.17"
    made, *_ = [c for c in machine.commands if c[1:3] == ["-m", "venv"]]
    assert made[-1] == str(ingest)
    *_, project, sources = machine.by("uv")
    assert project[-4:] == ["-c", "constraints.txt", "-e", ".[dev,demo]"]
    assert sources[sources.index("--python") + 1] == str(ingest / "bin" / "python")
    assert sources[-3:] == ["-c", "constraints-ingest.txt", "acryl-datahub[dbt,feast,mlflow]==1.7.0.17"]
    assert "--find-links" in sources, "the same indexes as the project's"


def test_the_ingestion_environment_is_recorded_as_recall_ingest_reads_it(tmp_path: Path) -> None:
    from recall_dagster.ingest_env import IngestEnv

    venv = tmp_path / ".venv"
    machine = Machine()
    install(venv, {}, machine.run, lambda: MACHINE, machine.said.append, LOCK)
    env = IngestEnv(venv / "ingest", "1.7.0.17")
    assert env.installed() == ({"dbt", "feast", "mlflow"}, set()), "the demo's first ingestion installs nothing"


def test_pip_makes_the_ingestion_environment_when_uv_cannot(tmp_path: Path) -> None:
    venv = tmp_path / ".venv"
    machine = Machine("uv")
    assert install(venv, {}, machine.run, lambda: MACHINE, machine.said.append, LOCK) == "pip"
    sources = machine.by("pip")[-1]
    assert sources[0] == str(venv / "ingest" / "acryl-datahub-1.7.0.17" / "bin" / "python")
    assert sources[-3:] == ["-c", "constraints-ingest.txt", "acryl-datahub[dbt,feast,mlflow]==1.7.0.17"]


def test_a_lock_without_one_acryl_datahub_pin_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InstallError, match="pins no acryl-datahub"):
        install(tmp_path / ".venv", {}, Machine().run, lambda: MACHINE, print, "feast==0.47.0\n")


def test_both_locks_pin_the_acryl_datahub_recall_reads_with() -> None:
    """The seed looks for the environment of the acryl-datahub installed beside Recall (seed/ingest/recipes.py):
    the two locks must agree on it, or the demo's first ingestion makes another with pip."""
    root = Path(__file__).resolve().parent.parent
    pins = [{line for line in (root / lock).read_text().splitlines() if line.startswith("acryl-datahub==")}
            for lock in ("constraints.txt", "constraints-ingest.txt")]
    assert pins[0] == pins[1] and len(pins[0]) == 1, pins
