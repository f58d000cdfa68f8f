"""``recall ack --json`` and ``recall ack list --json``: the acknowledgements a team keeps, as it keeps them."""

from __future__ import annotations

from recall_dagster.contracts.base import Contract, Part


class AckRecord(Part):
    """An acknowledgement as Recall stores, signs and publishes it: the command's answer is the record itself."""

    id: str
    detector: str
    subject: str
    model: str | None  # a registered model (every version), NAME/VERSION; None: every model
    fingerprints: list[str]  # the evidence it accepted, as each detector identifies it
    reason: str
    by: str
    created_ms: int
    until_ms: int


class Ack(Contract, AckRecord):
    writes: int  # documents that reached the graph
    failures: list[str]  # writes that did not land: `recall ack` again publishes them


class ListedAck(AckRecord):
    in_force: bool
    ignored: str | None  # why it is set aside (untrusted author, too long); None when honoured


class AckList(Contract):
    acknowledgements: list[ListedAck]  # by id
