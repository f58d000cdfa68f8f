"""A closure the last scan kept, decoded whole only when something needs it whole.

A rescan of 10,000 models that one change reached reads five closures again
and keeps the rest; of those it asks only what a head answers (the model, its
deployments, which datasets and assertions it holds) and a few datasets,
unless a verdict has to be judged again (:class:`~recall_dagster.estate.closure.Closure`).
Decoding every kept closure's body alone takes 0.84 s at 10,000 models, more
than the whole rescan, so a snapshot keeps each closure as a head and a
pickled body, and its datasets once each (closures share them): a
:class:`KeptClosure` answers from the head, decodes a dataset when asked for
it, and the body only for :meth:`KeptClosure.whole`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

from recall_dagster.collector import paused
from recall_dagster.estate.closure import ModelClosure, ModelNames, live, missing_dataset
from recall_dagster.estate.views import Dataset, Deployment, Model
from recall_dagster.pickles import Signer, unsigned

Head = tuple  # model, production, deployments, production versions, dataset URNs, assertion URNs
Ref = tuple[str, int, int]  # where a blob is kept: a pack file's name, the offset it starts at, its length


def head_and_body(closure: ModelClosure) -> tuple[Head, tuple]:
    """How a snapshot keeps a new ``closure``: a head, and a body to pickle on its own (its datasets apart,
    each on its own too, so a body decodes only its own)."""
    c = closure
    head = (c.model, c.production, c.deployments, c.production_versions, c.dataset_urns, c.assertion_urns)
    return head, (c.features, c.feature_tables, c.training_runs, c.parents)


class Kept:
    """The bodies and datasets of one loaded snapshot's closures, read from where they are kept when first
    asked for; each dataset decoded once and shared by every closure holding it."""

    def __init__(self, read: Callable[[Ref], bytes], tables: Mapping[str, Ref], signer: Signer) -> None:
        self.read = read
        self.tables = tables  # dataset URN -> where it is kept
        self.signer = signer
        self._decoded: dict[str, Dataset] = {}

    def body(self, ref: Ref) -> tuple:
        return self._decode(ref)

    def __getitem__(self, urn: str) -> Dataset:
        dataset = self._decoded.get(urn)
        if dataset is None:
            dataset = self._decoded[urn] = self._decode(self.tables[urn])
        return dataset

    def _decode(self, ref: Ref) -> Any:
        return unsigned(self.read(ref), self.signer, f"the closure snapshot pack {ref[0]}")


class KeptClosure(ModelNames):
    """A closure the last scan kept, as the stages after the read ask it (:class:`~recall_dagster.estate.closure.
    Closure`): the head from the snapshot, one dataset at a time from the snapshot's packs, and the closure itself
    (:meth:`whole`) decoded when a detector must judge it again.  It equals, and pickles as, that closure."""

    __slots__ = ("model", "production", "deployments", "production_versions", "dataset_urns", "assertion_urns",
                 "live_deployments", "stored", "kept", "_whole")

    def __init__(self, stored: tuple[Head, Ref], kept: Kept) -> None:
        model, production, deployments, production_versions, dataset_urns, assertion_urns = stored[0]
        self.model: Model = model
        self.production: bool = production
        self.deployments: tuple[Deployment, ...] = deployments
        self.production_versions: tuple[str, ...] = production_versions
        self.dataset_urns: tuple[str, ...] = dataset_urns
        self.assertion_urns: tuple[str, ...] = assertion_urns
        self.live_deployments = live(deployments)
        self.stored = stored  # its head, and where its body is kept, as the snapshot holds them
        self.kept = kept  # the loaded snapshot its body and datasets are read from
        self._whole: ModelClosure | None = None

    @property
    def urn(self) -> str:
        return self.model.urn

    def dataset(self, urn: str) -> Dataset:
        """One of its datasets, decoding no other (a scan asks a few of every closure)."""
        if self._whole is not None:
            return self._whole.dataset(urn)
        return self.kept[urn] if urn in self.dataset_urns else missing_dataset(urn)

    def whole(self) -> ModelClosure:
        """The closure it stands for, decoded once."""
        if self._whole is None:
            with paused():
                features, feature_tables, training_runs, parents = self.kept.body(self.stored[1])
                datasets = {u: self.kept[u] for u in self.dataset_urns}
            self._whole = ModelClosure(self.model, self.production, features, feature_tables, training_runs,
                                       self.deployments, datasets, self.production_versions, parents)
        return self._whole

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (ModelClosure, KeptClosure)):
            return self.whole() == other.whole()
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # as the closure's it stands for: its datasets are a dict

    def __reduce__(self) -> tuple:
        whole = self.whole()
        return ModelClosure, tuple(getattr(whole, name) for name in _FIELDS)


    def __repr__(self) -> str:
        return f"KeptClosure({self.urn})"


_FIELDS = tuple(f.name for f in dataclasses.fields(ModelClosure))
