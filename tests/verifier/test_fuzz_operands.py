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
* ``x is x`` with an optional on both sides was False when it is None (``None is
  None``): the pre-flight answered satisfiable for ``o.flag is not o.flag``;
* ``sum``, ``min`` and ``max`` added or compared every item, present or not: the
  items past a field's length (``sum(t) == 0`` with ``t: tuple[str, ...]`` raised for
  ``()``) and the items a comprehension filtered out
  (``min([v for v in (i.k, 1) if v is not None]) == 1`` raised for ``k=None``).

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

OPERAND_FORMS = {"container-self", "identity-self", "filtered", "affix", "affix-field",
                 "items"}
CASES = 160


def _chosen(annotation: str, kind: str, values: tuple[object, ...],
            item: FieldType | None = None, features: tuple[str, ...] = ()) -> FieldType:
    return FieldType(annotation, kind, lambda r, p: r.choice(values), optional="None" in
                     annotation, finite=values, item=item, features=features)


# the operands the matrix found wrong, added to every drawn case: the drawn field types
# do not always hold them (a float field that may be nan, a tuple of str)
NAN_FIELD = _chosen("float | None", "float", (None, float("nan"), 0.0, 1.5))
TUPLE_FIELD = _chosen("tuple[str, ...]", "list", ((), ("a",), ("", "b"), ("ab", "a")),
                      _chosen("str", "str", ("", "a", "b")), ("tuple:str",))
FLAG_FIELD = _chosen("bool | None", "bool", (None, True, False))  # an output: symbolic


def _operand_cases(seed: int) -> list[Case]:
    """The case of ``seed`` with the fields above added (the output holding only the
    flag), once per target field, its one post-condition an operand predicate over it
    (one each: the pre-flight answers for all post-conditions at once, and another's
    unknown would hide this one's answer)."""
    case = draw_case(seed)
    inp = replace(case.inp, fields=[*case.inp.fields, ("nanf", NAN_FIELD),
                                    ("tags", TUPLE_FIELD)])
    # the output is the flag alone: few enough values that the oracle enumerates them,
    # so a pre-flight "satisfiable" without a passing output is caught too
    out = replace(case.out, fields=[("flag", FLAG_FIELD)], parent_fields=0)
    atoms = [Atom(f"i.{name}", t) for name, t in inp.fields] + \
        [Atom(f"o.{name}", t) for name, t in out.fields]
    rng = random.Random(seed)
    targets = [Atom("i.nanf", NAN_FIELD), Atom("i.tags", TUPLE_FIELD),
               Atom("o.flag", FLAG_FIELD), rng.choice(atoms)]
    cases = []
    for atom in targets:
        covered: Counter[str] = Counter()
        grammar = Grammar(rng, atoms, case.constants, case.pool, covered, 2)
        post = grammar.operand_predicate(atom.text, atom.ftype)
        cases.append(replace(case, inp=inp, out=out, pres=[], posts=[post], stage2=None,
                             method=None, bound=False, covered=covered))
    return cases


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
            for case in _operand_cases(seed):
                result = run_case(case, value_seed=seed)
                if result.skipped is not None:  # a model pydantic refuses: not a case
                    continue
                ran += 1
                covered.update(case.covered)
                contradictions += [(seed, str(c), result.source)
                                   for c in result.contradictions]
                contradictions += [(seed, record.getMessage(), result.source)
                                   for record in caplog.records
                                   if "translator bug" in record.getMessage()]
                caplog.clear()
    assert not contradictions, "\n\n".join(
        f"seed {seed}: {c}\n{source}" for seed, c, source in contradictions[:3])
    forms = {name.split(":", 1)[1] for name in covered if name.startswith("operand:")}
    assert forms == OPERAND_FORMS, f"forms never drawn: {sorted(OPERAND_FORMS - forms)}"
