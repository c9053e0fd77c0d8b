"""One fuzz case: a contract module (input and output models, module constants,
pre- and post-conditions), drawn from a seed, rendered as source and loaded
from a file (the verifier reads predicates with ``inspect.getsource``)."""

from __future__ import annotations

import importlib.util
import itertools
import os
import random
import re
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType

from .models import Model, Pool, draw_model
from .predicates import Atom, Constant, Grammar, module_constants

__all__ = ["Case", "draw_case", "load", "unload"]

HEADER = '''import math
import re
from enum import Enum, IntEnum, StrEnum
from typing import Annotated, Generic, Literal, Optional, TypeVar, Union

from pydantic import (BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt,
                      StrictStr, StringConstraints, conint, constr)

from hoare import Contract, Pipeline, Post, Pre, contract

T = TypeVar("T")
'''


@dataclass
class Case:
    """What ``render`` turns into a module; every part can be shrunk on its own."""

    seed: int
    constants: list[Constant]
    inp: Model
    out: Model
    pres: list[str]
    posts: list[str]
    pool: Pool
    covered: Counter[str] = field(default_factory=Counter)
    # a second stage taking ``Out`` (its pre-conditions): the case is then a Pipeline
    stage2: list[str] | None = None
    # the body of a ``def post(self, o, i)`` method predicate (statements), if any
    method: list[str] | None = None
    # the method lives on another object and is passed bound: ``Post(RULES.check)``
    bound: bool = False

    def render(self) -> str:
        defs: list[str] = []
        for model in (self.inp, self.out):
            for d in model.defs():
                if d not in defs:
                    defs.append(d)
        constants = "\n".join(f"{c.name} = {c.source}" for c in self.constants)
        pres = "\n".join(f"        Pre(lambda i: {body}, {f'pre {k}'!r}),"
                         for k, body in enumerate(self.pres))
        posts = []
        for k, body in enumerate(self.posts):
            args = "o, i" if re.search(r"\bi\.", body) else "o"
            posts.append(f"        Post(lambda {args}: {body}, {f'post {k}'!r}),")
        return f'''{HEADER}
{constants}


{chr(10).join(defs)}

{self.inp.source()}

{self.out.source()}
{self._rules()}
@contract(post_remedy=False, on_violation=lambda outcome: None)
class Generated(Contract):
    prompt = "generated"
    pre_conditions = [
{pres}
    ]
    post_conditions = [
{chr(10).join(posts)}{self._bound_post()}
    ]

    def forward(self, input: In) -> Out:
        return self.contract_result
{"" if self.bound else self._method()}{self._stage2()}'''

    def _method(self) -> str:
        if self.method is None:
            return ""
        body = "\n".join(f"        {line}" for line in self.method)
        return f"\n    def post(self, o: Out, i: In) -> Optional[bool]:\n{body}\n"

    def _bound_post(self) -> str:
        """The method as a bound callable of another object (``self`` is bound)."""
        if not self.bound or self.method is None:
            return ""
        return "\n        Post(RULES.check, 'bound method'),"

    def _rules(self) -> str:
        if not self.bound or self.method is None:
            return ""
        # it reads an attribute of its own object (``self.limit``), never of the output
        method = self._method().replace("def post(", "def check(").replace(
            "-> Optional[bool]:\n", "-> Optional[bool]:\n        if self.limit < 0:\n"
            "            return False\n", 1)
        return "\n\nclass Rules:\n    limit = 3\n" + method + "\n\nRULES = Rules()\n"

    def _stage2(self) -> str:
        if self.stage2 is None:
            return ""
        pres = "\n".join(f"        Pre(lambda i: {body}, {f'second pre {k}'!r}),"
                         for k, body in enumerate(self.stage2))
        return f'''

@contract(post_remedy=False, on_violation=lambda outcome: None)
class Second(Contract):
    prompt = "second"
    pre_conditions = [
{pres}
    ]

    def forward(self, input: Out) -> In:
        return self.contract_result


PIPELINE = Pipeline(Generated(), Second())
'''

    def features(self) -> list[str]:
        out = [*self.inp.features, *self.out.features]
        for model in (self.inp, self.out):
            for _n, ftype in model.fields:
                out += ftype.features
        return out

    def without_pre(self, index: int) -> Case:
        return replace(self, pres=[p for k, p in enumerate(self.pres) if k != index])

    def without_post(self, index: int) -> Case:
        return replace(self, posts=[p for k, p in enumerate(self.posts) if k != index])

    def with_pre(self, index: int, body: str) -> Case:
        return replace(self, pres=[body if k == index else p for k, p in enumerate(self.pres)])

    def with_post(self, index: int, body: str) -> Case:
        return replace(self, posts=[body if k == index else p
                                    for k, p in enumerate(self.posts)])

    def with_method(self, lines: list[str] | None) -> Case:
        return replace(self, method=lines)

    def with_stage2(self, bodies: list[str] | None) -> Case:
        return replace(self, stage2=bodies)

    def without_field(self, role: str, name: str) -> Case:
        model = self.inp if role == "i" else self.out
        fields = [(n, t) for n, t in model.fields if n != name]
        smaller = replace(model, fields=fields,
                          parent_fields=min(model.parent_fields, len(fields)))
        return replace(self, inp=smaller) if role == "i" else replace(self, out=smaller)


def draw_case(seed: int) -> Case:
    """The case of ``seed``: the same seed gives the same source in any process."""
    rng = random.Random(seed)
    pool = Pool()
    inp = draw_model(rng, "In", rng.randrange(1, 3))
    out = draw_model(rng, "Out", rng.randrange(1, 4))
    constants = module_constants(rng)
    covered: Counter[str] = Counter()
    in_atoms = [Atom(f"i.{n}", t) for n, t in inp.fields]
    out_atoms = [Atom(f"o.{n}", t) for n, t in out.fields]
    depth = rng.choice([1, 2, 2, 3])
    pre_grammar = Grammar(rng, in_atoms, constants, pool, covered, depth)
    post_grammar = Grammar(rng, out_atoms + (in_atoms if rng.random() < 0.4 else []),
                           constants, pool, covered, depth)
    pres = [pre_grammar.boolean() for _ in range(rng.choice([0, 0, 1, 1, 2]))]
    posts = [post_grammar.boolean() for _ in range(rng.choice([1, 1, 2, 3]))]
    stage2 = None
    if rng.random() < 0.2:  # a pipeline: the composition check
        covered["pipeline"] += 1
        second = Grammar(rng, [Atom(f"i.{n}", t) for n, t in out.fields], constants, pool,
                         covered, depth)
        stage2 = [second.boolean() for _ in range(rng.choice([0, 1, 1, 2]))]
    method = None
    if rng.random() < 0.15:  # a method predicate: guards, a local, an assert, returns
        covered["method predicate"] += 1
        method = [f"if {post_grammar.boolean(1)}:",
                  f"    return {post_grammar.boolean(1)}",
                  f"k = {post_grammar.number(1)}",
                  f"assert {post_grammar.boolean(1)}, 'failed assert'"]
        method.append(rng.choice([f"return k {rng.choice(['<', '==', '>'])} "
                                  f"{post_grammar.number(2)}", "return None", "pass",
                                  "raise ValueError('rejected')"]))
    # one method predicate in five is passed bound, decided by the seed (no draw: the
    # other cases stay as they were)
    bound = method is not None and seed % 5 == 0
    if bound:
        covered["bound method predicate"] += 1
    return Case(seed, constants, inp, out, pres, posts, pool, covered, stage2, method,
                bound)


_DIR = Path(tempfile.mkdtemp(prefix="hoare_fuzz_"))
_COUNTER = itertools.count()


def load(source: str) -> ModuleType:
    """Import ``source`` from a file of its own (``inspect.getsource`` needs one)."""
    name = f"hoare_fuzz_case_{os.getpid()}_{next(_COUNTER)}"
    path = _DIR / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        unload(module)
        raise
    return module


def unload(module: ModuleType) -> None:
    sys.modules.pop(module.__name__, None)
    path = getattr(module, "__file__", None)
    if path:
        Path(path).unlink(missing_ok=True)
