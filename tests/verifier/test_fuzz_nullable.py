"""Optional fields where Python takes ``None`` as well as a value.

The class of bug: a translation that made every use of an optional's ``None`` an error,
where Python accepts it. Hashing one (``None in {'x'}`` is False, not a ``TypeError``)
and using one as a slice bound (``s[:None]`` is ``s``) were modelled as raising, so the
pre-flight refused inputs an output passes for, and ``hoare verify`` said ``fail``.

The cases come from the fuzzer's own grammar (``Grammar.nullable_predicate``, which
``make fuzz`` draws too), every post-condition from that production, judged by the
fuzz oracle against real Python and real pydantic on generated values.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace

from fuzz.cases import Case, draw_case
from fuzz.oracle import run_case
from fuzz.predicates import Atom, Grammar

NULLABLE_FORMS = {"in-set", "tuple-in-set", "eq", "str", "fstring", "bool", "or", "count",
                  "slice"}
CASES = 48


def _nullable_case(seed: int) -> Case | None:
    """The case of ``seed`` with its post-conditions replaced by uses of its optional
    fields where Python takes None; None when it has no optional field."""
    case = draw_case(seed)
    atoms = [Atom(f"i.{name}", t) for name, t in case.inp.fields] + \
        [Atom(f"o.{name}", t) for name, t in case.out.fields]
    optional = [atom for atom in atoms if atom.ftype.optional]
    if not optional:
        return None
    rng = random.Random(seed)
    covered: Counter[str] = Counter()
    grammar = Grammar(rng, atoms, case.constants, case.pool, covered, 2)
    targets = rng.sample(optional, min(2, len(optional)))
    posts = [grammar.nullable_predicate(atom.text, atom.ftype, 1) for atom in targets]
    return replace(case, pres=[], posts=posts, stage2=None, method=None, bound=False,
                   covered=covered)


def test_optional_fields_where_python_takes_none_agree_with_python() -> None:
    """Every verdict of ``hoare verify`` and every pre-flight answer on these cases holds
    for real Python on generated values (failed before: ``i.n0 not in ALLOWED`` with
    ``n0: str | None`` was refused for ``n0=None``), and the production reaches every
    form, so a form dropped from the grammar fails here."""
    covered: Counter[str] = Counter()
    contradictions = []
    ran = 0
    seed = 0
    while ran < CASES:
        seed += 1
        case = _nullable_case(seed)
        if case is None:
            continue
        result = run_case(case, value_seed=seed)
        if result.skipped is not None:  # a model pydantic refuses: not a verifier case
            continue
        ran += 1
        covered.update(case.covered)
        contradictions += [(seed, c, result.source) for c in result.contradictions]
    assert not contradictions, "\n\n".join(
        f"seed {seed}: {c}\n{source}" for seed, c, source in contradictions[:3])
    forms = {name.split(":", 1)[1] for name in covered if name.startswith("nullable:")}
    assert forms == NULLABLE_FORMS, f"forms never drawn: {sorted(NULLABLE_FORMS - forms)}"
