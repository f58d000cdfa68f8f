"""The demo estate's raw layer: a deterministic retail-and-payments generator."""

from seed.generate import load_raw

__all__ = ["load_raw"]
