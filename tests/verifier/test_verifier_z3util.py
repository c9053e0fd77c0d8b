"""The shared z3 helpers: constants of an expression, and independent groups."""

from __future__ import annotations

import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from hoare.verifier.solve.z3util import constant_names, group_by_constants, named_constants

NAMES = [f"c{i}" for i in range(6)]


def _expr(names: list[str]) -> z3.BoolRef:
    if not names:
        return z3.BoolVal(True)
    return z3.Sum(*[z3.Int(n) for n in names]) > 0


def test_constants_skip_values_and_regexes_and_agree() -> None:
    s, x = z3.String("s"), z3.Int("x")
    expr = z3.And(z3.InRe(s, z3.Star(z3.Re("ab"))), x + 1 > z3.IntVal(3),
                  z3.Length(s) == x, z3.BoolVal(True))
    assert constant_names(expr) == frozenset({"s", "x"})
    assert set(named_constants(expr)) == {"s", "x"}
    assert named_constants(expr)["x"].eq(x)
    memo: dict[int, frozenset[str]] = {}
    assert constant_names(expr, memo) == constant_names(expr, memo)
    assert constant_names(z3.IntVal(3) > 2) == frozenset()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from(NAMES), max_size=3, unique=True), max_size=8))
def test_groups_partition_items_into_constant_disjoint_components(
        items: list[list[str]]) -> None:
    groups = group_by_constants(items, frozenset)
    flat = [item for group, _ in groups for item in group]
    assert sorted(map(tuple, flat)) == sorted(map(tuple, items))  # a partition
    for index, (group, names) in enumerate(groups):
        assert names == frozenset().union(*map(frozenset, group))
        if not names:  # the constant-free items come last, together
            assert index == len(groups) - 1 and all(not item for item in group)
        for _, other in groups[index + 1:]:
            assert not names & other
    # connected: inside one group, no proper subset is closed under sharing a name
    for group, _ in groups:
        reached = {0}
        changed = True
        while changed:
            changed = False
            for i, item in enumerate(group):
                if i not in reached and any(set(item) & set(group[j]) for j in reached):
                    reached.add(i)
                    changed = True
        assert len(reached) == len(group) or not any(group)
    # the z3 walk and the grouping together, as the solver uses them
    exprs = [_expr(item) for item in items]
    by_expr = group_by_constants(exprs, constant_names)
    assert [len(g) for g, _ in by_expr] == [len(g) for g, _ in groups]
