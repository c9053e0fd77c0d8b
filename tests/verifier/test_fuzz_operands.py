"""Operands in positions where Python's rule is not the obvious one.

The class of bug: a translation that models an operand's use by the obvious rule where
Python has another, so a value Python accepts is modelled as an error or as a different
value. Found by an operand-kind by position matrix (every field kind against every
position), each a bug of its own before this test:

* an item compared inside a container is tried with ``is`` first (``[x] == [x]``,
  ``x in (x,)``, ``[x].count(x)`` hold for a ``nan`` field, one object), but an
  optional float's ``nan`` was compared by ``==`` alone: the pre-flight refused it;
* ``s.startswith(t)`` with a ``tuple[str, ...]`` field was modelled as ``TypeError``
  (it tries each item), with a list literal as fine (Python raises ``TypeError``), and
  a non-str item as raising even after an earlier item matched (Python stops there);
* ``sum``, ``min`` and ``max`` over a field's items added or compared the items past
  its length too, so ``sum(t) == 0`` with ``t: tuple[str, ...]`` raised for ``()``.

The cases come from the fuzzer's own grammar (``Grammar.operand_predicate``, which
``make fuzz`` draws too), judged by the fuzz oracle against real Python and real
pydantic, and every refutation the falsifier logs as a translator bug counts too.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from dataclasses import replace

import pytest
from fuzz.cases import Case, draw_case
from fuzz.models import FieldType
from fuzz.oracle import run_case
from fuzz.predicates import Atom, Grammar

OPERAND_FORMS = {"container-self", "affix", "affix-field", "items"}
CASES = 60


def _chosen(annotation: str, kind: str, values: tuple[object, ...],
            item: FieldType | None = None, features: tuple[str, ...] = ()) -> FieldType:
    return FieldType(annotation, kind, lambda r, p: r.choice(values), optional="None" in
                     annotation, finite=values, item=item, features=features)


# the operands the matrix found wrong, added to every drawn case: the drawn field types
# do not always hold them (a float field that may be nan, a tuple of str)
NAN_FIELD = _chosen("float | None", "float", (None, float("nan"), 0.0, 1.5))
TUPLE_FIELD = _chosen("tuple[str, ...]", "list", ((), ("a",), ("", "b"), ("ab", "a")),
                      _chosen("str", "str", ("", "a", "b")), ("tuple:str",))


def _operand_case(seed: int) -> Case:
    """The case of ``seed`` with the two fields above added, and its post-conditions
    replaced by operand predicates over them and one of its own fields."""
    case = draw_case(seed)
    inp = replace(case.inp, fields=[*case.inp.fields, ("nanf", NAN_FIELD),
                                    ("tags", TUPLE_FIELD)])
    atoms = [Atom(f"i.{name}", t) for name, t in inp.fields] + \
        [Atom(f"o.{name}", t) for name, t in case.out.fields]
    rng = random.Random(seed)
    covered: Counter[str] = Counter()
    grammar = Grammar(rng, atoms, case.constants, case.pool, covered, 2)
    targets = [Atom("i.nanf", NAN_FIELD), Atom("i.tags", TUPLE_FIELD), rng.choice(atoms)]
    posts = [grammar.operand_predicate(atom.text, atom.ftype) for atom in targets]
    return replace(case, inp=inp, pres=[], posts=posts, stage2=None, method=None,
                   bound=False, covered=covered)


def test_operands_where_python_has_its_own_rule_agree_with_python(
        caplog: pytest.LogCaptureFixture) -> None:
    """Every verdict of ``hoare verify`` and every pre-flight answer on these cases
    holds for real Python on generated values, and the falsifier refutes none (failed
    before: ``[i.nanf] == [i.nanf]`` refused for ``nan``; ``'ab'.startswith(i.t)``
    said ``fail`` for ``t=('a',)``; ``sum(i.t) == 0`` refuted for ``t=()``), and the
    production reaches every form, so a form dropped from the grammar fails here."""
    covered: Counter[str] = Counter()
    contradictions = []
    ran = 0
    seed = 0
    with caplog.at_level(logging.WARNING):
        while ran < CASES:
            seed += 1
            case = _operand_case(seed)
            result = run_case(case, value_seed=seed)
            if result.skipped is not None:  # a model pydantic refuses: not a verifier case
                continue
            ran += 1
            covered.update(case.covered)
            contradictions += [(seed, str(c), result.source) for c in result.contradictions]
            contradictions += [(seed, record.getMessage(), result.source)
                               for record in caplog.records
                               if "translator bug" in record.getMessage()]
            caplog.clear()
    assert not contradictions, "\n\n".join(
        f"seed {seed}: {c}\n{source}" for seed, c, source in contradictions[:3])
    forms = {name.split(":", 1)[1] for name in covered if name.startswith("operand:")}
    assert forms == OPERAND_FORMS, f"forms never drawn: {sorted(OPERAND_FORMS - forms)}"
