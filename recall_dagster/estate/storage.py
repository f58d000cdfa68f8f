"""Object stores hold paths, not tables: a feature store's offline files, a training job's input channel.

No stock DataHub source has to describe an S3 prefix for a feature to be
healthy: SageMaker's feature store source names a feature group's offline
store (``s3``, the configured ``S3Uri`` without its scheme) beside the Glue
table over it, and a training job names the S3 channels it read, often a
folder below that store. So a path nothing catalogued is a coverage gap, not a
vanished source, and a path below another is the same data read from deeper in.
"""

from __future__ import annotations

OBJECT_STORES = frozenset({"s3", "gcs", "adls", "abs", "hdfs", "file"})
_PREFIX = "urn:li:dataset:(urn:li:dataPlatform:"


def _platform_and_path(urn: str) -> tuple[str, str] | None:
    """(platform, path) of an object-store dataset URN; None for any other URN."""
    if not urn.startswith(_PREFIX):
        return None
    platform, _, rest = urn[len(_PREFIX):].partition(",")
    if platform not in OBJECT_STORES:
        return None
    path = rest.rpartition(",")[0]
    return platform, path.rstrip("/")


def is_object_store(urn: str) -> bool:
    return _platform_and_path(urn) is not None


def same_data(a: str, b: str) -> bool:
    """True when one object-store path lies at or below the other on the same store."""
    left, right = _platform_and_path(a), _platform_and_path(b)
    if left is None or right is None or left[0] != right[0]:
        return False
    shorter, longer = sorted((left[1], right[1]), key=len)
    return longer == shorter or longer.startswith(shorter + "/")
