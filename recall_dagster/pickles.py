"""Pickles that only the code which wrote them reads back, and only when this home's key signed them.

Recall keeps some of its own objects between runs (the last scan's closures, a
shard's part of a scan) as pickles: they are written and read by this package
alone, and a pickle of objects whose classes have changed since would load as
something else.  Each is stamped with a fingerprint of the source of the
modules that define what it holds, and one stamped by other code is refused.

Unpickling runs whatever the bytes say, so a file planted in ``RECALL_HOME`` by
anyone who can write there would run code on the next scan.  Every pickle is
therefore signed (HMAC-SHA256) with a key kept beside the state it signs,
readable by its owner alone, and nothing is unpickled before its signature is
checked: a file that fails the check is not read (one line says so), which costs
what a missing one costs, a full read.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import pickle
import secrets
import stat
from pathlib import Path
from types import ModuleType
from typing import Any

from recall_dagster.collector import paused
from recall_dagster.errors import ConfigError

KEY_FILE = "state.key"
_KEY_BYTES = 32
_MAC_BYTES = hashlib.sha256().digest_size

log = logging.getLogger(__name__)


def fingerprint(*modules: ModuleType) -> str:
    """The source of ``modules`` (every module of a package): what decides the shape of the objects they
    define."""
    digest = hashlib.sha256()
    for module in modules:
        where = Path(str(module.__file__))
        for source in sorted(where.parent.glob("*.py")) if hasattr(module, "__path__") else [where]:
            digest.update(f"{module.__name__}.{source.name}".encode() + source.read_bytes())
    return digest.hexdigest()


class Signer:
    """Signs and checks the pickles kept under one state folder, with the key ``<state>/state.key``.

    The key is made on first use, owner-only. One another user could have
    written or read (not owned by this user, or open to group or others) is
    replaced: everything it signed is then read afresh.
    """

    def __init__(self, state_dir: str | os.PathLike[str]) -> None:
        self.path = Path(state_dir) / KEY_FILE
        self._key: bytes | None = None

    @property
    def key(self) -> bytes:
        if self._key is None:
            self._key = self._trusted() or self._made()
        return self._key

    def _trusted(self) -> bytes | None:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return None
        except OSError as err:  # a link in its place, or unreadable: not a key of ours
            log.warning("the state key %s cannot be read safely (%s): replacing it", self.path, err.strerror)
            return None
        with os.fdopen(fd, "rb") as handle:
            held = os.fstat(handle.fileno())
            key = handle.read(_KEY_BYTES + 1)
        if held.st_uid != os.getuid() or stat.S_IMODE(held.st_mode) & 0o077 or len(key) != _KEY_BYTES:
            log.warning("the state key %s is not this user's alone: replacing it, kept state is read afresh",
                        self.path)
            return None
        return key

    def _made(self) -> bytes:
        key = secrets.token_bytes(_KEY_BYTES)
        temporary = self.path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(key)
            os.replace(temporary, self.path)
        except OSError as err:
            temporary.unlink(missing_ok=True)
            raise ConfigError(f"cannot keep the state key at {self.path}: {err.strerror}; check RECALL_HOME") from err
        return self._trusted() or key  # a key another process made at the same moment wins: both read it

    def sign(self, payload: bytes) -> bytes:
        return hmac.new(self.key, payload, hashlib.sha256).digest() + payload

    def verified(self, blob: bytes) -> bytes | None:
        """The payload of ``blob`` if this key signed it, else None."""
        mac, payload = blob[:_MAC_BYTES], blob[_MAC_BYTES:]
        if len(mac) == _MAC_BYTES and hmac.compare_digest(mac, hmac.new(self.key, payload, hashlib.sha256).digest()):
            return payload
        return None


def stamped(value: Any, stamp: str, signer: Signer) -> bytes:
    return signer.sign(pickle.dumps((stamp, value), protocol=pickle.HIGHEST_PROTOCOL))


def unstamped(blob: bytes, stamp: str, signer: Signer, source: str) -> Any | None:
    """What ``blob`` (read from ``source``) holds, or None when it is unsigned, damaged or was stamped by other
    code. Nothing is unpickled before the signature is checked.

    Loaded with the collector paused (:mod:`recall_dagster.collector`): a
    snapshot of 10,000 closures is millions of new objects, none of them
    garbage, and the collections their allocation would set off cost as much
    as the load itself.
    """
    payload = signer.verified(blob)
    if payload is None:
        log.warning("%s is not signed with this home's state key (another version of Recall wrote it, or "
                    "someone else did): not read, read afresh", source)
        return None
    try:
        with paused():
            found, value = pickle.loads(payload)
    except Exception:  # damaged, truncated, or classes that are gone: not ours to read
        return None
    return value if found == stamp else None


def unsigned(blob: bytes, signer: Signer, source: str) -> Any:
    """One signed pickle read on demand (a kept closure's body or dataset), which a scan cannot do without:
    one that fails its signature stops the command with what to do."""
    payload = signer.verified(blob)
    if payload is None:
        raise ConfigError(f"{source} is not signed with this home's state key: delete it (or "
                          "RECALL_HOME/state/closures) and scan again")
    return pickle.loads(payload)
