"""The calls the predicate translator models: one handler per builtin, module
function and method, registered in one table (``registry.py``, which documents
how to add a handler and declare its differential coverage).

Families: ``numeric`` (``abs``, ``int``, ``float``, ``bool``, ``math.*``),
``strings`` (``str()`` and ``str`` methods), ``containers`` (``len``, ``all``,
``any``, ``sum``, ``min``, ``max``, ``count``), ``introspection``
(``isinstance``), ``regexes`` (``re.*``). Importing them registers nothing:
``registry.register_all()`` does, where the registry is first needed; anything not
registered is opaque.
"""

from hoare.verifier.translate.calls import containers, introspection, numeric, regexes, strings
from hoare.verifier.translate.calls.registry import (
    CallSite,
    Construct,
    Family,
    Precision,
    function,
    lookup_function,
    lookup_method,
    markdown_table,
    method,
    receiver_kind,
    register_all,
    registered,
    reset,
    table,
)

__all__ = [
    "CallSite",
    "Construct",
    "Family",
    "Precision",
    "containers",
    "function",
    "introspection",
    "lookup_function",
    "lookup_method",
    "markdown_table",
    "method",
    "numeric",
    "receiver_kind",
    "regexes",
    "register_all",
    "registered",
    "reset",
    "strings",
    "table",
]
