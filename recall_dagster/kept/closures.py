"""A closure the last scan kept, whose body is decoded only when something reads it.

A rescan of 10,000 models that one change reached reads five closures again
and keeps the rest; of those it asks only what a head answers (the model, its
deployments, which datasets and assertions it holds), unless a verdict has to
be judged again.  Decoding every kept closure whole was most of such a rescan
(0.66 s of 1.9 s at 10,000 models), so a snapshot keeps each closure as a
head and a pickled body, and its datasets once each (closures share them):
the body is decoded on first read and its datasets looked up among them.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

from recall_dagster.collector import paused
from recall_dagster.estate.closure import ModelClosure
from recall_dagster.estate.views import Dataset
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


_FIELDS = tuple(f.name for f in dataclasses.fields(ModelClosure))


class KeptClosure(ModelClosure):
    """A :class:`ModelClosure` whose features, feature tables, training runs, datasets and walk are decoded
    when first read.  It equals, and pickles as, the plain closure it stands for."""

    def __init__(self, stored: tuple[Head, Ref], kept: Kept) -> None:  # the head fills the fields
        model, production, deployments, production_versions, dataset_urns, assertion_urns = stored[0]
        self.__dict__.update(
            model=model, urn=model.urn, production=production, deployments=deployments,
            live_deployments=tuple(d for d in deployments if d.live),
            production_versions=production_versions, dataset_urns=dataset_urns, assertion_urns=assertion_urns,
            _stored=stored, _kept=kept,
        )

    def _body(self) -> dict[str, Any]:
        body = self.__dict__.get("_decoded")
        if body is None:
            with paused():
                features, feature_tables, training_runs, parents = self.kept.body(self.stored[1])
                datasets = {u: self.kept[u] for u in self.dataset_urns}
            body = self.__dict__["_decoded"] = {
                "features": features, "feature_tables": feature_tables, "training_runs": training_runs,
                "datasets": datasets, "parents": parents,
            }
        return body

    features = property(lambda self: self._body()["features"])
    feature_tables = property(lambda self: self._body()["feature_tables"])
    training_runs = property(lambda self: self._body()["training_runs"])
    datasets = property(lambda self: self._body()["datasets"])
    parents = property(lambda self: self._body()["parents"])

    def dataset(self, urn: str) -> Dataset:
        """One of its datasets, without decoding the rest of the body (a scan asks a few of every closure)."""
        if "_decoded" in self.__dict__ or urn not in self.dataset_urns:
            return super().dataset(urn)
        return self.kept[urn]

    @property
    def kept(self) -> Kept:
        """The loaded snapshot its body and datasets are read from."""
        return self.__dict__["_kept"]

    @property
    def stored(self) -> tuple[Head, Ref]:
        """Its head and where its body is kept, as the snapshot holds them."""
        return self.__dict__["_stored"]

    def plain(self) -> ModelClosure:
        """The closure it stands for, decoded whole."""
        return ModelClosure(*self._fields())

    def _fields(self) -> tuple:
        return tuple(getattr(self, name) for name in _FIELDS)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ModelClosure):
            return self._fields() == tuple(getattr(other, name) for name in _FIELDS)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # as the plain closure's: its datasets are a dict

    def __reduce__(self) -> tuple:
        return ModelClosure, self._fields()
