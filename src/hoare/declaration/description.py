"""What a contract class declares, read once per class: types, predicates, config.

``describe(cls)`` is shared by the runtime (which builds kernel hooks from it)
and the z3 verifier (which translates the same predicates), so both always
talk about the same contract. Annotations are resolved with
``typing.get_type_hints``, so ``from __future__ import annotations`` works.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from hoare.declaration.conditions import (
    Condition,
    Post,
    Pre,
    is_asynchronous,
    positional_arity,
    raise_literals,
    required_parameters,
    source_expression,
)
from hoare.declaration.models import TypeSpec, type_spec
from hoare.declaration.revalidation import instance_of
from hoare.errors import ContractDefinitionError, safe_text, shown
from hoare.kernel import ContractConfig, Policy

__all__ = ["ContractDefinitionError", "ContractDescription", "PredicateSource", "describe"]


@dataclass(frozen=True, eq=False)
class PredicateSource:
    """One predicate as the user wrote it.

    ``fn`` is the user's function: for a method (``is_method``) it is the plain
    function taking ``self`` first; for a declarative ``Pre``/``Post`` it is the
    condition's callable. ``takes_input``: a post-condition that also receives
    the input actually used. ``author_texts``: the literal texts of the ``raise``
    statements in its source, which ``feedback="messages"`` may show the model.
    """

    id: str
    family: str
    message: str
    fn: Callable[..., object]
    phase: Literal["pre", "post"]
    is_method: bool
    takes_input: bool
    policy: Policy | None
    author_texts: frozenset[str] = frozenset()


@dataclass(frozen=True, eq=False)
class ContractDescription:
    """The static shape of a ``@contract`` class."""

    cls: type
    name: str  # "module:QualName"
    config: ContractConfig
    preflight: bool
    verbose: bool
    forward: Callable[..., object]  # the user's undecorated forward
    input_param: str
    input: TypeSpec
    output: TypeSpec
    act: Callable[..., object] | None
    act_input: TypeSpec | None
    act_output: TypeSpec | None
    pre: tuple[PredicateSource, ...]
    post: tuple[PredicateSource, ...]
    feedback: Literal["errors", "messages"] = "errors"  # what corrective prompts may quote
    # what the engine is asked to decode against: "schema" (the output type with the
    # post-conditions JSON Schema can say folded in), "types" (the type's schema), "none"
    decoding: Literal["schema", "types", "none"] = "schema"

    @property
    def used_input(self) -> TypeSpec:
        """Type of the input the post stage works on: act's output, else the input."""
        return self.act_output or self.input


def _hints(fn: Callable[..., object], where: str,
           localns: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``fn``'s annotations, resolved as Python scopes them: ``localns`` (the names of
    the function the class was defined in) before the module's globals. A string
    annotation, as ``from __future__ import annotations`` makes every one, may name
    a class local to that function."""
    try:
        return typing.get_type_hints(fn, localns=localns or None, include_extras=True)
    except Exception as error:
        raise ContractDefinitionError(
            f"cannot resolve the annotations of {where}: {safe_text(error, 500)}. Make every "
            f"annotated name "
            f"importable from the module that defines it.") from error


def _first_parameter(fn: Callable[..., object], where: str) -> inspect.Parameter:
    """The first positional parameter after ``self`` (the contract input)."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())[1:]
    except Exception as error:  # a callable with no signature, or a foreign one's raised
        raise ContractDefinitionError(
            f"{where} has no signature to read ({type(error).__name__}): define it as "
            f"def forward(self, input: MyInput) -> MyOutput") from None
    for parameter in parameters:
        if parameter.kind in (inspect.Parameter.POSITIONAL_ONLY,
                              inspect.Parameter.POSITIONAL_OR_KEYWORD):
            return parameter
    raise ContractDefinitionError(
        f"{where} needs a first positional parameter after self (the contract input), "
        f"e.g. `def {getattr(fn, '__name__', 'forward')}(self, input: MyInput) -> MyOutput`")


def _annotated_spec(hints: dict[str, Any], key: str, where: str, what: str) -> TypeSpec:
    if key not in hints:
        raise ContractDefinitionError(f"{where} must annotate {what}")
    try:
        return type_spec(hints[key])
    except TypeError as error:
        role = what.split(" (", 1)[0]  # "its return type", without the example
        raise ContractDefinitionError(f"{where}: {role} {safe_text(error, 500)}") from error


def describe(cls: type, config: ContractConfig, *, preflight: bool = True,
             verbose: bool = False, forward: Callable[..., object] | None = None,
             feedback: Literal["errors", "messages"] = "errors",
             decoding: Literal["schema", "types", "none"] = "schema",
             localns: Mapping[str, Any] | None = None) -> ContractDescription:
    """Read a contract class. Raises ``ContractDefinitionError`` naming what to fix.
    ``localns``: the namespace the class was defined in, for its annotations."""
    name = f"{cls.__module__}:{cls.__qualname__}"
    forward = forward or getattr(cls, "forward", None)
    if not callable(forward):
        raise ContractDefinitionError(f"{name} must define forward(self, input, **kwargs)")
    where = f"{cls.__qualname__}.forward"
    hints = _hints(forward, where, localns)
    first = _first_parameter(forward, where)
    input_spec = _annotated_spec(hints, first.name, where,
                                 f"its input parameter {first.name!r} with a type")
    output_spec = _annotated_spec(hints, "return", where, "its return type (-> YourOutput)")

    act = cls.__dict__.get("act") or getattr(cls, "act", None)
    act_input = act_output = None
    if act is not None:
        act_where = f"{cls.__qualname__}.act"
        if is_asynchronous(act):
            raise ContractDefinitionError(
                f"{act_where} is async: act runs synchronously between the pre-conditions "
                f"and generation. Make it a plain def act(self, input: In) -> Out")
        act_hints = _hints(act, act_where, localns)
        act_first = _first_parameter(act, act_where)
        act_input = _annotated_spec(act_hints, act_first.name, act_where,
                                    f"its input parameter {act_first.name!r} with a type")
        act_output = _annotated_spec(act_hints, "return", act_where,
                                     "its return type (the input of the generation step)")

    pre = _method_predicates(cls, "pre") + declared_conditions(cls, "pre_conditions", Pre, "pre")
    post = _method_predicates(cls, "post") + declared_conditions(cls, "post_conditions", Post,
                                                                 "post")
    return ContractDescription(cls, name, config, preflight, verbose, forward, first.name,
                               input_spec, output_spec, act, act_input, act_output, pre, post,
                               feedback, decoding)


def _method_predicates(cls: type, phase: Literal["pre", "post"]) -> tuple[PredicateSource, ...]:
    fn = getattr(cls, phase, None)
    if fn is None:
        return ()
    if isinstance(inspect.getattr_static(cls, phase), (staticmethod, classmethod, property)):
        raise ContractDefinitionError(
            f"{cls.__qualname__}.{phase} must be a plain method: def {phase}(self, value)")
    shape = f"def {phase}(self, value{', input' if phase == 'post' else ''})"
    try:
        arity = positional_arity(fn)
        if arity < 2:
            raise ContractDefinitionError(
                f"{cls.__qualname__}.{phase} must take the value to check as a parameter: "
                f"{shape}")
        takes_input = phase == "post" and arity >= 3
        _check_callable(fn, f"{cls.__qualname__}.{phase}", 3 if takes_input else 2, shape)
    except ContractDefinitionError as error:
        _locate(error, fn)
        raise
    doc = (inspect.getdoc(fn) or "").strip().splitlines()
    message = source_expression(fn) or (doc[0] if doc else "") or \
        f"{cls.__qualname__}.{phase} rejected the value"
    return (PredicateSource(phase, phase, message, fn, phase, True, takes_input, None,
                            raise_literals(fn)),)


def _locate(error: ContractDefinitionError, fn: Callable[..., object]) -> None:
    """Where the user fixes a predicate's definition: its own file and line, set as
    ``error.file``/``error.line`` (``hoare verify`` reports them) and as a traceback
    note, rather than this module's raise."""
    try:
        code = getattr(inspect.unwrap(fn), "__code__", None)
    except Exception:  # a foreign callable's __wrapped__ or __getattr__ may raise
        return
    if getattr(error, "file", None) is None and inspect.iscode(code):
        error.file, error.line = code.co_filename, code.co_firstlineno
        error.add_note(f"the predicate is defined at {code.co_filename}:{code.co_firstlineno}")


def _check_callable(fn: Callable[..., object], where: str, passed: int, shape: str) -> None:
    """A predicate is called synchronously with ``passed`` positional arguments; any
    other shape would fail on every call, so it is a definition error, not a violation."""
    if is_asynchronous(fn):
        raise ContractDefinitionError(
            f"{where} is async: predicates run synchronously, so an async one would never "
            f"be checked. Make it a plain def ({shape})")
    required, keywords = required_parameters(fn)
    if required > passed or keywords:
        extra = f"keyword-only parameter(s) {keywords}" if keywords else \
            f"{required} required positional parameters"
        raise ContractDefinitionError(
            f"{where} has {extra} but is called with {passed} argument(s): give the extra "
            f"parameters a default or use the shape {shape}")


def declared_conditions(cls: type, attribute: str, kind: type[Condition],
                        phase: Literal["pre", "post"]) -> tuple[PredicateSource, ...]:
    """The ``Pre``/``Post`` conditions a class lists in ``attribute`` (``pre_conditions``,
    ``post_conditions``), checked at definition: each a condition of ``kind`` with a
    unique id and a callable shape the kernel can call (contracts and queries share it)."""
    declared = getattr(cls, attribute, ())
    if instance_of(declared, Condition) or not instance_of(declared, (list, tuple)):
        raise ContractDefinitionError(
            f"{cls.__qualname__}.{attribute} must be a list of {kind.__name__}(...) conditions")
    try:  # a list or tuple subclass's own __iter__ is foreign code
        items = list(declared)
    except Exception as error:
        raise ContractDefinitionError(
            f"{cls.__qualname__}.{attribute} cannot be read ({type(error).__name__}): make "
            f"it a plain list of {kind.__name__}(...) conditions") from None
    sources = []
    seen: set[str] = set()
    for index, condition in enumerate(items):
        if not instance_of(condition, kind):
            raise ContractDefinitionError(
                f"{cls.__qualname__}.{attribute}[{index}] must be {kind.__name__}(fn, message), "
                f"got {shown(condition)}")
        pid = condition.id or f"{attribute}[{index}]"
        if pid in seen or pid in ("pre", "post"):
            raise ContractDefinitionError(f"{cls.__qualname__}: duplicate predicate id {pid!r}")
        seen.add(pid)
        where = f"{cls.__qualname__}.{attribute}[{index}]"
        try:
            arity = positional_arity(condition.fn)
            if arity < 1:
                raise ContractDefinitionError(
                    f"{where}: the function must take the value as a parameter")
            takes_input = phase == "post" and arity >= 2
            _check_callable(condition.fn, where, 2 if takes_input else 1,
                            "lambda value, input: ..." if phase == "post"
                            else "lambda value: ...")
        except ContractDefinitionError as error:
            _locate(error, condition.fn)
            raise
        sources.append(PredicateSource(
            pid, condition.family or pid, condition.describe(), condition.fn, phase, False,
            takes_input, condition.effective_policy, raise_literals(condition.fn)))
    return tuple(sources)
