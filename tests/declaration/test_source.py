"""One module finds predicate source, for contract definitions and the verifier alike."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hoare.declaration import source
from hoare.declaration import source as verifier_source
from hoare.unmodelled import SourceNotFound, Unmodelled

PAIR = [lambda x: x > 1, lambda x: x < 2]


def single_return(x: int) -> bool:
    """A docstring is not part of the expression."""
    return x > 0 and x < 9


def guarded(x: int) -> None:
    if x < 0:
        raise ValueError("x must not be negative")
    if x > 9:
        raise ValueError(f"x={x} is too large")


def test_lambdas_sharing_a_line_are_told_apart() -> None:
    assert [source.source_expression(fn) for fn in PAIR] == ["x > 1", "x < 2"]


def test_expression_of_a_function_and_its_raise_literals() -> None:
    assert source.source_expression(single_return) == "x > 0 and x < 9"
    assert source.source_expression(guarded) is None
    assert source.raise_literals(guarded) == frozenset({"x must not be negative"})


def test_no_source_is_none_for_definitions_and_an_unmodelled_cause_for_the_verifier() -> None:
    assert source.source_expression(len) is None
    assert source.raise_literals(len) == frozenset()
    with pytest.raises(SourceNotFound, match="not a Python function") as caught:
        source.function_node(len)
    assert isinstance(caught.value, Unmodelled)
    assert verifier_source.function_node is source.function_node


def test_defining_contracts_does_not_import_z3() -> None:
    code = ("import sys, hoare.declaration.conditions, hoare.declaration.source; "
            "print('z3' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "False"
