"""Held-out pre-flight probes (issue 29): a cached verdict outlives its translation.

The per-input cache held a verdict without the translation it came from. A call that
read the translation before a module constant it bakes in changed (another thread),
finishing after the change had replaced the translation and cleared the cache, stored
its old verdict for the new translation: the same input was then refused under the
new constant although an output passes (``o.text.startswith(PREFIX[0] + i.s)`` with
``PREFIX[0]`` changed from ``"abc"`` to ``""``: ``"zz"`` passes for ``s="zz"``). The
class: a cache entry not tied to what it was computed from. Entries now carry their
translation and are used only by it.

The late thread is simulated deterministically (``_check_input`` on the replaced
translation), then generated interleavings are compared with a fresh checker.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from hoare import Post
from hoare.declaration.description import describe
from hoare.kernel import ContractConfig, Verdict
from hoare.verifier.runtime import preflight


class Query(BaseModel):
    s: str


class Answer(BaseModel):
    text: str = Field(max_length=4)


PREFIX = ["abc"]


def _make() -> preflight.Preflight:
    def forward(self: object, input: Any) -> Any:
        raise NotImplementedError

    forward.__annotations__ = {"input": Query, "return": Answer}
    cls = type("Prefixed", (), {
        "forward": forward, "__module__": __name__,
        "post_conditions": [Post(lambda o, i: o.text.startswith(PREFIX[0] + i.s),
                                 "starts with the prefix and s")]})
    return preflight.Preflight(describe(cls, ContractConfig()))


def _passes(text: str, s: str) -> bool:
    return len(text) <= 4 and text.startswith(PREFIX[0] + s)


def test_a_late_verdict_of_a_replaced_translation_is_not_reused() -> None:
    """Failed before: the last check refused, though "zz" passes."""
    PREFIX[0] = "abc"
    checker = _make()
    assert checker.check(object(), Query(s="")).verdict is Verdict.SATISFIABLE
    old = checker._prepared[()]
    PREFIX[0] = ""
    assert checker.check(object(), Query(s="q")).verdict is Verdict.SATISFIABLE
    late = checker._check_input(old, (), Query(s="zz"))  # the slow thread finishes
    assert late.verdict is Verdict.UNSATISFIABLE  # right for the old constant
    assert _passes("zz", "zz")
    assert checker.check(object(), Query(s="zz")).verdict is Verdict.SATISFIABLE
    PREFIX[0] = "abc"


WORDS = st.sampled_from(["", "a", "ab", "abc", "zz", "é", "xyzw", "q"])


@given(steps=st.lists(st.tuples(WORDS, WORDS, st.booleans()), min_size=1, max_size=6))
@settings(max_examples=40, deadline=None)
def test_generated_interleavings_agree_with_a_fresh_checker(
        steps: list[tuple[str, str, bool]]) -> None:
    """Each step: change the constant, maybe finish a late call on the translation
    from before the change, then check an input: a refusal must hold for real Python
    (no output of at most 4 characters passes), as a fresh checker's does."""
    PREFIX[0] = "abc"
    checker = _make()
    try:
        for prefix, s, late in steps:
            checker.check(object(), Query(s=s))
            old = checker._prepared.get(())
            PREFIX[0] = prefix
            checker.check(object(), Query(s="q"))  # replaces the translation
            if late and old is not None and old.verdict is None:
                checker._check_input(old, (), Query(s=s))
            result = checker.check(object(), Query(s=s))
            if result.verdict is Verdict.UNSATISFIABLE:
                assert not _passes((prefix + s)[:4], s), (prefix, s)
            fresh = _make().check(object(), Query(s=s))
            assert {result.verdict, fresh.verdict} != \
                {Verdict.SATISFIABLE, Verdict.UNSATISFIABLE}
    finally:
        PREFIX[0] = "abc"
