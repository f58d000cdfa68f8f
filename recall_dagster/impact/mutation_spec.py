"""What an impact test replays, as named on a command line or in ``recall.yaml``: ``OP[:ARG]`` and a share of rows.

Kept apart from the operators (:mod:`recall_dagster.impact.mutations`, which
need pandas) because every command reading ``recall.yaml`` checks the mutations
it names, and none of them should pay for pandas to do so.
"""

from __future__ import annotations

from dataclasses import dataclass

from recall_dagster.errors import ConfigError

# The allowlist, in the order the CLI lists it; mutations.OPERATORS implements each.
MUTATIONS = ("null_fraction", "scale", "shift", "clip", "constant", "shuffle", "category_remap", "timezone_shift",
             "type_coercion", "drop")


@dataclass(frozen=True)
class Mutation:
    op: str
    arg: str | None  # the text after ``op:``, parsed by the operator
    fraction: float  # share of rows touched, in [0, 1]

    @property
    def label(self) -> str:
        return f"{self.op}:{self.arg}" if self.arg is not None else self.op


def number_arg(arg: str, op: str) -> float:
    try:
        return float(arg)
    except ValueError:
        raise ConfigError(f"mutation {op}: argument {arg!r} is not a number") from None


def parse_mutation(spec: str, fraction: float | None = None) -> Mutation:
    """``OP[:ARG]`` from the allowlist; ``null_fraction:P`` is P of the rows NULL, other ops touch ``fraction``."""
    op, sep, arg = spec.strip().partition(":")
    if op not in MUTATIONS:
        raise ConfigError(f"unknown mutation {op!r}; known: {', '.join(MUTATIONS)}")
    value = arg if sep else None
    if fraction is not None and not 0 <= fraction <= 1:
        raise ConfigError(f"--fraction {fraction} is not a share in [0, 1]")
    share = 1.0 if fraction is None else fraction
    if op == "null_fraction" and value is not None:
        share = number_arg(value, op)
        if not 0 <= share <= 1:
            raise ConfigError(f"mutation null_fraction:{value}: the share of NULL rows must be in [0, 1]")
        if fraction is not None and fraction != share:
            raise ConfigError(f"null_fraction:{value} and --fraction {fraction} disagree; give one of them")
    return Mutation(op, value, share)
