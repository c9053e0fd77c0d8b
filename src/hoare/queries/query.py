"""``Query[T]``: a typed question to a model, held to a contract.

    @dataclass
    class MakeSum(Query[list[int]]):
        '''Find a sub-list of `allowed` whose elements sum to `target`.'''
        allowed: list[int]
        target: int

        post_conditions = [Post(lambda xs, q: sum(xs) == q.target, "the sum is the target")]

    MakeSum([1, 2, 3, 4], 7).run(engine)   # -> list[int], or ContractViolationError

The dataclass is the kernel's input: its ``pre_conditions`` are checked on the
instance, each answer is parsed (a ``ParseError`` is a type violation) and
checked by ``post_conditions`` (``Post(fn)`` gets ``(answer)`` or ``(answer,
query)``); failures are fed back as repair prompts within the remedy budget,
and a query that defines ``fallback(self, outcome)`` degrades to it instead of
raising. The same description is what ``hoare verify`` checks: a query class
is a contract whose input is the query and whose output is ``T``.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
import threading
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, create_model
from pydantic import Field as PydanticField
from pydantic_core import SchemaValidator

from hoare.contracts.binding import bind_predicate
from hoare.declaration.conditions import Post, Pre
from hoare.declaration.description import ContractDescription, declared_conditions
from hoare.declaration.models import TypeSpec, type_spec
from hoare.declaration.revalidation import (
    clean_locations,
    revalidating_validator,
    revalidation_is_forced,
)
from hoare.errors import ContractDefinitionError, safe_text
from hoare.forking import free_in_child
from hoare.kernel import ContractConfig, Policy, Predicate, RetryPolicy, SuccessTracker
from hoare.queries.answers import Response, WrappedParseError
from hoare.queries.best_of_n import AttemptRates
from hoare.queries.parsers import GenericParser, Parser, structured, unalias

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["Mode", "Query", "describe_query"]

T = TypeVar("T")


@dataclass(frozen=True)
class Mode:
    """An answer mode: its parser (None: the query's default) and request settings."""

    parser: Parser[Any] | GenericParser | None = None
    temperature: float | None = None
    max_tokens: int | None = None


class _Described:
    """``Query.__hoare__``: the contract description ``hoare verify`` checks, built on
    first access (the class is a dataclass only once ``@dataclass`` has run, after
    ``__init_subclass__``). Its answers are ``T``'s values only when every answer
    mode's parser returns values of ``T`` as validated from JSON; a user's parse
    function, ``map`` or YAML may return others, so then the answer is ``Any`` (the
    verifier's verdicts about it are ``unknown``, never a false ``fail``)."""

    def __get__(self, instance: object, owner: type) -> ContractDescription:
        description = runtime_of(owner).description
        if _every_parser_bounded(typing.cast("type[Query[Any]]", owner), description.output):
            return description
        return dataclasses.replace(description, output=type_spec(Any))


def _every_parser_bounded(cls: type[Query[Any]], output: TypeSpec) -> bool:
    """Does every answer mode of ``cls`` parse into ``output``'s values (the domain
    the verifier and the pre-flight model)?"""
    from hoare.queries.session import answers_bounded  # the session imports this module

    try:
        modes = cls.__modes__ or {None: Mode()}
        for mode in modes.values():
            chosen = mode.parser or cls.__parser__ or structured
            if isinstance(chosen, GenericParser):
                chosen = chosen.for_type(cls.answer_type())
            if not isinstance(chosen, Parser) or not answers_bounded(chosen, output):
                return False
    except Exception:  # a mode or parser that cannot be read: not known to be bounded
        return False
    return True


class Query(Generic[T]):
    """Base class of queries: a dataclass subclassing ``Query[T]`` (see the module)."""

    __parser__: ClassVar[Parser[Any] | GenericParser | None] = None
    __modes__: ClassVar[Mapping[str | None, Mode] | None] = None
    __system_prompt__: ClassVar[str | None] = None
    __instance_prompt__: ClassVar[str | None] = None
    __templates__: ClassVar[Sequence[str]] = ()
    pre_conditions: ClassVar[Sequence[Pre]] = ()
    post_conditions: ClassVar[Sequence[Post]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if _declared_answer(cls) is None:
            return  # a generic base (Query[T]): not a contract until T is given
        type.__setattr__(cls, "__hoare__", _Described())

    # -- the answer type ----------------------------------------------------------------
    @classmethod
    def answer_type(cls) -> Any:
        """``T`` of ``Query[T]`` (looked up through the bases), its string forward
        references (``Query["Article"]``, ``Query[list["Article"]]``) resolved in the
        module that defines the class, once the class is used."""
        cached = cls.__dict__.get("_hoare_answer_type", _UNRESOLVED)
        if cached is not _UNRESOLVED:
            return cached
        found = _declared_answer(cls)
        if found is None:
            raise ContractDefinitionError(
                f"{cls.__qualname__} must subclass Query[T] with a concrete answer type, "
                f"e.g. class {cls.__name__}(Query[list[int]])")
        owner, answer = found
        resolved = _resolve(owner, answer)
        type.__setattr__(cls, "_hoare_answer_type", resolved)
        return resolved

    def finite_answer_set(self) -> list[Any] | None:
        """Every possible answer, for a ``Literal``, ``Enum`` or ``bool`` answer type."""
        return finite_values(self.answer_type())

    # -- modes and parsers --------------------------------------------------------------
    @classmethod
    def query_modes(cls) -> list[str | None]:
        return list(cls.__modes__ or {None: Mode()})

    def mode_settings(self, mode: str | None) -> Mode:
        modes = type(self).__modes__ or {None: Mode()}
        if mode not in modes:
            raise ValueError(f"{type(self).__name__} has no answer mode {mode!r}; its modes "
                             f"are {list(modes)}")
        return modes[mode]

    def parser_for(self, mode: str | None = None) -> Parser[T]:
        """The parser of ``mode``: the mode's, else ``__parser__``, else ``structured``."""
        chosen = self.mode_settings(mode).parser or type(self).__parser__ or structured
        if isinstance(chosen, GenericParser):
            chosen = chosen.for_type(self.answer_type())
        if not isinstance(chosen, Parser):
            raise ContractDefinitionError(
                f"{type(self).__name__}: a parser must be a hoare.queries Parser, got "
                f"{chosen!r}")
        return chosen

    # -- running --------------------------------------------------------------------------
    def run(self, engine: Any, **policy: Any) -> T:
        """The first answer that parses and satisfies the contract (see ``few_shot`` for
        the options). Without a ``fallback`` method, raises ``ContractViolationError``
        when none does."""
        from hoare.queries.policies import run_query

        return typing.cast(T, run_query(self, engine, **policy))

    async def arun(self, engine: Any, **policy: Any) -> T:
        """``run`` for event loops (the engine's ``acomplete``)."""
        from hoare.queries.policies import arun_query

        return typing.cast(T, await arun_query(self, engine, **policy))


_UNRESOLVED = object()


def _declared_answer(cls: type) -> tuple[type, Any] | None:
    """The class whose bases give ``Query[T]``, and ``T`` as written (None: generic)."""
    for klass in cls.__mro__:
        for base in klass.__dict__.get("__orig_bases__", ()):
            if typing.get_origin(base) is Query:
                (answer,) = typing.get_args(base)
                if isinstance(answer, TypeVar):
                    return None
                return klass, answer
    return None


def _resolve(owner: type, answer: Any) -> Any:
    """``answer`` with its forward references evaluated in ``owner``'s module (and the
    class's own namespace); one that names nothing there is a ContractDefinitionError
    naming it."""
    def holder() -> None:
        """Carries the annotation for ``typing.get_type_hints``."""
    holder.__annotations__ = {"answer": answer}
    module = sys.modules.get(owner.__module__)
    namespace = dict(vars(module)) if module is not None else {}
    try:
        return typing.get_type_hints(holder, globalns=namespace, localns=dict(vars(owner)),
                                     include_extras=True)["answer"]
    except Exception as error:
        raise ContractDefinitionError(
            f"{owner.__qualname__}: cannot resolve the answer type {answer!r} in module "
            f"{owner.__module__}: {safe_text(error, 300)} (define it at the module's top "
            f"level)") from error


# -- finite answer sets ----------------------------------------------------------------

def finite_values(annotation: Any) -> list[Any] | None:
    """The values of a ``Literal``, ``Enum``, ``bool`` (or an ``Optional``/union of them),
    through ``type X = ...`` aliases (``TypeAliasType``)."""
    annotation = unalias(annotation)
    if annotation is bool:
        return [True, False]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return list(annotation)
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return list(typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        values: list[Any] = []
        for arg in typing.get_args(annotation):
            if arg is type(None):
                values.append(None)
                continue
            part = finite_values(arg)
            if part is None:
                return None
            values.extend(part)
        return values
    return None


def answer_text(value: object) -> str:
    """How a finite answer is written by the model: a string as itself, an enum by its
    value (its name if the value is not a string), a bool as true/false."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return value.value if isinstance(value.value, str) else value.name
    if value is None:
        return "null"
    return str(value)


# -- the description and the per-class runtime -------------------------------------------

def _check_dataclass(cls: type) -> None:
    if not dataclasses.is_dataclass(cls):
        raise ContractDefinitionError(
            f"{cls.__qualname__} must be a dataclass: put @dataclass above "
            f"class {cls.__name__}(Query[...])")


def describe_query(cls: type[Query[Any]], config: ContractConfig | None = None
                   ) -> ContractDescription:
    """The contract a query class states: input the query, output ``T``."""
    _check_dataclass(cls)
    answer = cls.answer_type()
    name = f"{cls.__module__}:{cls.__qualname__}"
    output = _output_spec(cls, answer)
    input_spec = TypeSpec(cls, fields_model(cls), wrapped=False)

    def forward(self: object, query: Any) -> Any:  # what verify reads: input -> output
        raise NotImplementedError
    forward.__annotations__ = {"query": cls, "return": answer}
    pre = declared_conditions(cls, "pre_conditions", Pre, "pre")
    post = declared_conditions(cls, "post_conditions", Post, "post")
    has_fallback = callable(getattr(cls, "fallback", None))
    config = config or ContractConfig(
        policy=Policy.OBSERVE if has_fallback else Policy.ENFORCE,
        retry=RetryPolicy(tries=3, delay=0.0, jitter=0.0))
    return ContractDescription(cls, name, config, False, False, forward, "query", input_spec,
                               output, None, None, None, pre, post, "errors", "types")


def fields_model(cls: type) -> type[BaseModel]:
    """A pydantic model with the dataclass's init fields, annotations, defaults and
    pydantic config: the set of values pydantic validates a query's fields into (what
    ``hoare verify`` models; a query is validated from its fields, see
    ``QueryRuntime.validate``)."""
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception as error:
        raise ContractDefinitionError(
            f"cannot resolve the annotations of {cls.__qualname__}: {safe_text(error, 400)}"
        ) from error
    fields: dict[str, Any] = {}
    for item in dataclasses.fields(cls):
        if not item.init:
            continue
        if item.default is not dataclasses.MISSING:
            default: Any = item.default
        elif item.default_factory is not dataclasses.MISSING:
            default = PydanticField(default_factory=item.default_factory)
        else:
            default = ...
        fields[item.name] = (hints.get(item.name, Any), default)
    declared: ConfigDict = getattr(cls, "__pydantic_config__", None) or ConfigDict()
    config = ConfigDict(**declared)
    model: type[BaseModel] = create_model(cls.__name__, __config__=config,
                                          __module__=cls.__module__, **fields)
    return model


def _output_spec(cls: type, answer: Any) -> TypeSpec:
    """The answer type as the verifier and structured output see it: without
    ``WrappedParseError`` (a parse error returned as a value is not an answer the
    post-conditions check); a type pydantic cannot validate (``Response[...]``, read
    by its own parser) is modelled as ``Any``, so its checks are ``unknown``."""
    args = typing.get_args(answer)
    if typing.get_origin(answer) in (typing.Union, types.UnionType) \
            and WrappedParseError in args:
        rest = tuple(a for a in args if a is not WrappedParseError)
        answer = rest[0] if len(rest) == 1 else typing.Union[rest]  # noqa: UP007
    if typing.get_origin(answer) is Response or answer is Response:
        return type_spec(Any)
    try:
        return type_spec(answer)
    except TypeError as error:
        raise ContractDefinitionError(f"{cls.__qualname__}: the answer type "
                                      f"{safe_text(error, 400)}") from error


class QueryRuntime:
    """What running a query class needs, prepared once per class."""

    def __init__(self, cls: type[Query[Any]]) -> None:
        self.cls = cls
        self.description = describe_query(cls)
        self.tracker = SuccessTracker()
        self.rates = AttemptRates()  # per-attempt figures for num_completions="auto"
        self.pre = tuple(bind_predicate(s, None) for s in self.description.pre)
        self.post = tuple(_skip_wrapped(bind_predicate(s, None)) for s in self.description.post)
        self.input: TypeSpec = self.description.input
        self.output: TypeSpec = self.description.output
        self.adapter: TypeAdapter[Query[Any]] = TypeAdapter(cls)
        self._validator: SchemaValidator | None = None

    def validate(self, query: object) -> Query[Any]:
        """The query with its fields validated by pydantic (a dataclass instance is not
        validated when it is made): the input the contract runs on. As a contract's
        input (``TypeSpec.validate``), every model and dataclass instance in a field is
        validated again, however it was built (``declaration/revalidation.py``)."""
        if not isinstance(query, self.cls):
            raise TypeError(f"expected a {self.cls.__name__}, got {type(query).__name__}")
        fields = init_fields(query)
        if not revalidation_is_forced():  # as TypeSpec.validate: validate the dump
            fields = self.description.input.model.model_construct(**fields).model_dump(
                round_trip=True, warnings=False)
        validator = self._validator
        if validator is None:
            validator = self._validator = revalidating_validator(self.adapter.core_schema)[0]
        try:
            return typing.cast("Query[Any]", validator.validate_python(fields))
        except ValidationError as error:
            raise clean_locations(error) from None


def init_fields(query: object) -> dict[str, Any]:
    """The values of a query's ``init`` fields, by name: what pydantic validates and the
    verifier models. Every query class is a dataclass (``describe_query`` checks it)."""
    instance = typing.cast("DataclassInstance", query)  # a query: a dataclass instance
    return {f.name: getattr(query, f.name) for f in dataclasses.fields(instance) if f.init}


def _skip_wrapped(predicate: Predicate) -> Predicate:
    """A ``WrappedParseError`` answer has nothing a post-condition could check."""
    check = predicate.check
    if predicate.uses_context:
        def check2(value: object, context: object) -> object:
            return True if isinstance(value, WrappedParseError) else check(value, context)
        return dataclasses.replace(predicate, check=check2)

    def check1(value: object) -> object:
        return True if isinstance(value, WrappedParseError) else check(value)
    return dataclasses.replace(predicate, check=check1)


_RUNTIMES_LOCK = threading.Lock()
free_in_child(sys.modules[__name__], _RUNTIMES_LOCK)  # held while one is built


def runtime_of(cls: type) -> QueryRuntime:
    """The class's runtime, built once (also from many threads at once)."""
    found = cls.__dict__.get("__hoare_query_runtime__")
    if found is None:
        with _RUNTIMES_LOCK:
            found = cls.__dict__.get("__hoare_query_runtime__")
            if found is None:
                found = QueryRuntime(cls)
                type.__setattr__(cls, "__hoare_query_runtime__", found)
    return typing.cast(QueryRuntime, found)


def fallback_of(query: object) -> Callable[[Any], Any] | None:
    method = getattr(query, "fallback", None)
    return method if callable(method) else None
