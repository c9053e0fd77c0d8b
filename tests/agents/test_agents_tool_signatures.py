"""A tool's schema and its calls follow the function's real signature, with Python as
the oracle: generated signatures (positional-only, keyword-only, ``*args``/``**kwargs``,
parameter names pydantic reserves or hides: ``model_config``, ``model_dump``, ``_x``,
``__x``, ``self``; defaults JSON cannot carry: ``nan``, ``inf``, bytes) and generated
argument dicts. The agent runs a call exactly when Python binds it, the tool receives
what a direct call would, and the schema names every parameter and is strict JSON.

Failing before: a parameter named ``self`` collided with ``Tool.__call__``'s own, a
positional-only parameter was passed by keyword (every call failed), ``model_config``
and ``model_dump`` made ``tool()`` raise, ``_x``/``__x`` were missing from the schema,
``nan`` defaults made the schema invalid JSON, a partial's and a callable object's
hints were lost, and a tool with ``**kwargs`` refused every argument."""

from __future__ import annotations

import functools
import inspect
import json
import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hoare.agents import ContractAgent, EventType, tool
from hoare.agents.actions import tool_call_action
from hoare.engines import Response, ToolCall
from hoare.engines.testing import ScriptedEngine

NAMES = ["x", "self", "model_config", "model_dump", "model_fields", "schema", "json",
         "copy", "_x", "__x", "args", "kwargs", "validate", "dict", "mro", "title"]
DEFAULTS = [0, "d", None, math.nan, math.inf, -math.inf, -0.0, b"\xff", [1]]
KINDS = [inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD,
         inspect.Parameter.KEYWORD_ONLY]


@st.composite
def signatures(draw: st.DrawFn) -> inspect.Signature:
    names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=5))
    kinds = sorted(draw(st.lists(st.sampled_from(KINDS), min_size=len(names),
                                 max_size=len(names))), key=KINDS.index)
    parameters: list[inspect.Parameter] = []
    defaulted = False
    for name, kind in zip(names, kinds, strict=True):
        # Python: after a defaulted positional parameter, every positional one has one
        must = defaulted and kind is not inspect.Parameter.KEYWORD_ONLY
        if must or draw(st.booleans()):
            default = draw(st.sampled_from(DEFAULTS))
            defaulted = defaulted or kind is not inspect.Parameter.KEYWORD_ONLY
        else:
            default = inspect.Parameter.empty
        annotation = draw(st.sampled_from([inspect.Parameter.empty, int, str, float,
                                           bytes, "int", "list[int]"]))
        parameters.append(inspect.Parameter(name, kind, default=default,
                                            annotation=annotation))
    if draw(st.booleans()):
        position = sum(p.kind is not inspect.Parameter.KEYWORD_ONLY for p in parameters)
        parameters.insert(position, inspect.Parameter("rest", inspect.Parameter.VAR_POSITIONAL))
    if draw(st.booleans()):
        parameters.append(inspect.Parameter("options", inspect.Parameter.VAR_KEYWORD))
    return inspect.Signature(parameters)


def function_of(signature: inspect.Signature) -> Any:
    """A real function with ``signature``, returning what it was bound to."""
    namespace: dict[str, Any] = {"DEFAULTS": DEFAULTS, "inspect": inspect}
    text = []
    for parameter in signature.parameters.values():
        piece = str(parameter.replace(annotation=inspect.Parameter.empty,
                                      default=inspect.Parameter.empty))
        if parameter.annotation is not inspect.Parameter.empty:
            hint = parameter.annotation
            piece += f": {hint.__name__ if isinstance(hint, type) else repr(hint)}"
        if parameter.default is not inspect.Parameter.empty:
            piece += f" = DEFAULTS[{DEFAULTS.index(parameter.default)}]"
        text.append(piece)
    pieces = []
    previous = None
    for parameter, piece in zip(signature.parameters.values(), text, strict=True):
        if previous is inspect.Parameter.POSITIONAL_ONLY and \
                parameter.kind is not inspect.Parameter.POSITIONAL_ONLY:
            pieces.append("/")
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY and \
                previous not in (inspect.Parameter.KEYWORD_ONLY,
                                 inspect.Parameter.VAR_POSITIONAL):
            pieces.append("*")
        pieces.append(piece)
        previous = parameter.kind
    if previous is inspect.Parameter.POSITIONAL_ONLY:
        pieces.append("/")
    exec(f"def generated({', '.join(pieces)}):\n"
         f"    return {{**inspect.currentframe().f_locals}}\n", namespace)
    made = namespace["generated"]
    assert inspect.signature(made).parameters.keys() == signature.parameters.keys()
    return made


def by_position(function: Any, arguments: dict[str, Any]
                ) -> tuple[list[Any], dict[str, Any]]:
    """A call by name as Python takes it: the leading positional-only arguments given,
    by position, the rest by name."""
    positional = []
    rest = dict(arguments)
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind is not parameter.POSITIONAL_ONLY or parameter.name not in rest:
            break
        positional.append(rest.pop(parameter.name))
    return positional, rest


def python_binds(function: Any, arguments: dict[str, Any]) -> bool:
    """Does Python take this call (``by_position``)?"""
    positional, rest = by_position(function, arguments)
    try:
        inspect.signature(function).bind(*positional, **rest)
    except TypeError:
        return False
    return True


SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(signatures(), st.data())
def test_the_schema_names_every_parameter_and_is_strict_json(
        signature: inspect.Signature, data: st.DataObject) -> None:
    function = function_of(signature)
    schema = tool(function).parameters
    json.dumps(schema, allow_nan=False)  # a real server's JSON: no NaN, no Infinity
    named = [p for p in signature.parameters.values()
             if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    assert list(schema["properties"]) == [p.name for p in named]
    assert schema.get("required", []) == [p.name for p in named if p.default is p.empty]


@SETTINGS
@given(signatures(), st.data())
def test_a_call_runs_exactly_when_python_binds_it(
        signature: inspect.Signature, data: st.DataObject) -> None:
    function = function_of(signature)
    chosen = tool(function)
    pool = [*signature.parameters, "unknown", "other"]
    arguments = {name: data.draw(st.integers(-3, 3), label=name)
                 for name in data.draw(st.lists(st.sampled_from(pool), unique=True))}
    arguments.pop("rest", None)  # *args is never named by a model
    binds = python_binds(function, arguments)
    _, problem = tool_call_action(chosen.name, json.dumps(arguments),
                                  {chosen.name: chosen})
    assert (problem is None) == binds, (problem, arguments)
    if not binds:
        return
    positional, rest = by_position(function, arguments)
    direct = function(*positional, **rest)
    through_tool = chosen(**arguments)
    assert _same(through_tool, direct)
    # the agent's own loop runs it, and the observation is the tool's result
    engine = ScriptedEngine(Response(texts=("",), tool_calls=(
        ToolCall("c1", chosen.name, json.dumps(arguments)),)), "done")
    result = ContractAgent(engine, [chosen]).run("task")
    observations = [e for e in result.events if e.type is EventType.OBSERVATION]
    assert [e.metadata["raw_result"] for e in observations] and \
        _same(observations[0].metadata["raw_result"], through_tool)


def _same(left: dict[str, Any], right: dict[str, Any]) -> bool:
    """Equal bound values, ``nan`` equal to itself (a default taken as it is)."""
    if left.keys() != right.keys():
        return False
    return all(a is b or a == b or (isinstance(a, float) and math.isnan(a) and
                                    isinstance(b, float) and math.isnan(b))
               for a, b in ((left[k], right[k]) for k in left))


def test_hints_come_through_partials_wrappers_and_callable_objects() -> None:
    def search(query: int, limit: int = 3, *,
               tag: NameNotDefined = None) -> int:  # type: ignore[name-defined]  # noqa: F821  # unresolvable on purpose
        return query

    class Searcher:
        def __call__(self, query: int) -> int:
            return query

    @functools.wraps(search)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return search(*args, **kwargs)

    integer = {"title": "Query", "type": "integer"}
    assert tool(functools.partial(search, limit=1)).parameters["properties"]["query"] == integer
    assert tool(Searcher()).parameters["properties"]["query"] == integer
    assert tool(wrapped).parameters["properties"]["query"] == integer
    # one unresolvable hint leaves only its own parameter untyped
    properties = tool(search).parameters["properties"]
    assert properties["limit"]["type"] == "integer" and "type" not in properties["tag"]


class Opaque:
    """A class pydantic has no schema for."""


def test_a_parameter_pydantic_cannot_describe_is_a_definition_error() -> None:
    import pytest

    from hoare.errors import ContractDefinitionError

    def takes(thing: Opaque) -> int:
        return 0

    chosen = tool(takes)  # a function still: hoare verify finds a plain @pre one
    with pytest.raises(ContractDefinitionError, match="'takes'"):
        chosen.parameters  # noqa: B018  # offered to a model: refused
    with pytest.raises(ContractDefinitionError, match="'takes'"):
        ContractAgent(ScriptedEngine(), [chosen])


def test_hoare_verify_finds_a_plain_pre_function_pydantic_cannot_describe(
        tmp_path: Any) -> None:
    """Failing before: building its ``Tool`` raised, so ``hoare verify`` reported the
    whole module as an import error and checked nothing in it."""
    import subprocess
    import sys
    import textwrap

    (tmp_path / "plain_pre.py").write_text(textwrap.dedent('''
        from hoare.agents import pre

        class Opaque:
            a = 1

        @pre(lambda x: x.a > 0, "positive")
        def uses(x: Opaque) -> int:
            return 1

        @pre(lambda n: n > 0, "positive")
        def counts(n: int) -> int:
            return n
    '''))
    done = subprocess.run([sys.executable, "-m", "hoare.cli", "verify", "plain_pre.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "import error" not in done.stdout + done.stderr, done.stdout[-1500:]
    assert "2 contract(s)" in done.stdout, done.stdout[-1500:]
