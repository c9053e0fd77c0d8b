"""Every reason the verifier answers ``unknown``: the tree rooted at ``Unmodelled``,
defined in ``hoare.unmodelled`` (standard library only) and re-exported here."""

from ..unmodelled import (
    BindError,
    Opaque,
    SourceNotFound,
    Unmodelled,
    Unrepresentable,
    WitnessError,
)

__all__ = [
    "BindError",
    "Opaque",
    "SourceNotFound",
    "Unmodelled",
    "Unrepresentable",
    "WitnessError",
]
