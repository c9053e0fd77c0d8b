"""The shapes of calls (schema 5, ``hoare.stats.schema``): what recurs call after call
(who made the call, its outcome, its trials) stored once in ``call_shapes``, and the
ids a back end's calls refer to them by. Apart from the store and the back ends because
both back ends and the writer use it: ``ShapeIds`` keeps, for one open store, the id of
every shape already seen, so that a batch of records costs one dictionary lookup per
record, and a shape is looked up in (or added to) the database once per process.

A shape is found again in the database by its ``fingerprint`` (a hash of its stored
values), never by comparing columns (NULL is not equal to NULL in SQL). Two processes
adding the same shape at once may both add it: two rows with equal values, each call
pointing at one of them, which the ``calls`` view reads alike. Shapes are never
deleted (retention deletes calls): an id a writer keeps stays valid.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any, cast

from hoare.stats.schema import split_row
from hoare.stats.values import TRIALS_AT, PlainBatch, stored_shape

__all__ = ["SHAPES_KEPT", "ShapeIds", "fingerprint"]

SHAPES_KEPT = 4096  # shapes whose id a writer keeps (past it, it starts over)


def fingerprint(shape: Sequence[object]) -> str:
    """The hash a stored shape is found by: of its values' ``repr`` (stable for the
    text, integers, floats, None and bytes a database gives back), so the writer's
    stored values and the same values read back from the store hash alike."""
    text = repr(tuple(shape)).encode("utf-8", "backslashreplace")
    return hashlib.sha256(text).hexdigest()


class ShapeIds:
    """The ids of the shapes of one open store; ``find_or_add`` (the back end's) gives
    the id of a stored shape, adding it when the store has none."""

    def __init__(self, find_or_add: Callable[[tuple[Any, ...]], int]) -> None:
        self.find_or_add = find_or_add
        self._of_records: dict[tuple[Any, ...], int] = {}  # shapes as records hold them
        self._pinned: list[object] = []  # the trials whose id is in a shape known
        self.first_seen = 0  # shapes of records met for the first time (or again, past
        # SHAPES_KEPT): a batch that meets none names no contract the writer has not met
        self._of_stored: dict[tuple[Any, ...], int] = {}  # shapes as stored

    def of_records(self, batch: PlainBatch) -> list[int] | None:
        """The id of each record's shape in ``batch`` (``plain_batch``'s: values of
        exact types, the trials by identity), or None when one is not storable
        unchanged (the batch is then checked record by record). Only plain values are
        hashed and compared: a caller's object never runs here."""
        known = self._of_records
        shapes = batch.shapes()  # one, when the batch has one shape
        ids = list(map(known.get, shapes))
        if None in ids:
            if len(known) + len(shapes) > SHAPES_KEPT:
                known.clear()
                self._pinned.clear()
            for index, shape in enumerate(shapes):
                if shape in known:
                    continue
                trials = batch.trials[index]
                stored = stored_shape((*shape[:TRIALS_AT], trials,
                                       *shape[TRIALS_AT + 1:]))
                if stored is None:
                    return None
                known[shape] = self.of_stored(stored)  # the store's errors: the batch's
                self.first_seen += 1
                self._pinned.append(trials)  # its id stays this tuple's while known
            ids = [known[shape] for shape in shapes]
        found = cast(list[int], ids)  # no None left: every shape is known
        return found * len(batch.ts) if len(found) == 1 else found

    def numbers_of_rows(self, rows: Sequence[tuple[Any, ...]]) -> list[Any]:
        """The ``call_numbers`` values of calls given as rows in ``COLUMNS``' order
        (``clean_record``'s), flat, each row's shape found or added first: what both
        back ends write."""
        values: list[Any] = []
        for row in rows:
            shape, (ts, latency, tokens_in, tokens_out, cost) = split_row(row)
            values += (ts, self.of_stored(shape), latency, tokens_in, tokens_out, cost)
        return values

    def of_stored(self, shape: tuple[Any, ...]) -> int:
        """The id of a shape as stored (``SHAPE_COLUMNS``' values: text, integers, None),
        found in or added to the store once."""
        known = self._of_stored
        found = known.get(shape)
        if found is None:
            found = self.find_or_add(shape)
            if len(known) >= SHAPES_KEPT:
                known.clear()
            known[shape] = found
        return found
