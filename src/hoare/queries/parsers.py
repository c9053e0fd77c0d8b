"""Parsers: from an engine's answer (text and tool calls) to a typed value.

A parser either returns a value or raises ``ParseError``. To the kernel a
``ParseError`` is a type violation of the attempt: its message goes back to the
model in the corrective prompt and is counted in the statistics, exactly like
an output that fails its pydantic type in a contract.

Parsers compose (Delphyne's combinators): ``last_code_block.trim.json_as(T)``,
``get_text.map(int)``, ``structured_as(T).validate(check)``,
``json_as(T).wrap_errors()``. A *generic* parser (``structured``,
``last_code_block.yaml``) waits for the query's answer type: ``Query`` applies
it to ``T``.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from hoare.contracts.json_text import fences
from hoare.declaration.models import TypeSpec, format_validation_error, read_answer, type_spec
from hoare.engines.base import ToolCall
from hoare.errors import InvalidValue
from hoare.queries.answers import (
    Answer,
    FinalAnswer,
    ParseError,
    Response,
    ToolRequests,
    WrappedParseError,
)
from hoare.queries.extras import require

__all__ = ["GenericParser", "Parser", "final_tool_call", "final_tool_call_as", "first_word",
           "first_word_as", "get_text", "json_as", "last_code_block", "response_with",
           "structured", "structured_as", "trim", "yaml_as"]

A = TypeVar("A")
B = TypeVar("B")


class Parser(Generic[A]):
    """``parse(answer) -> A`` or ``ParseError``. ``structured``: the type whose JSON
    schema the request asks the provider to decode against (None: free text).
    ``tools``: tool types offered to the model with the request; ``force_tool``: the
    request requires a tool call (``tool_choice: "required"``, as Delphyne's
    ``final_tool_call_as``). ``shows``: the type whose schema the prompt's ``format``
    shows when nothing is decoded against it (``json_as(T)``, ``yaml_as(T)``, ...).
    ``answers``: the type every parsed value is, validated from JSON text (structured,
    JSON, first word, narrowed by ``validate``); None when a step may return anything
    (a user's function, ``map``, YAML's Python objects): the pre-flight's domain is that
    type, so it refuses only for a parser that has one."""

    __slots__ = ("_parse", "answers", "description", "force_tool", "shows", "structured",
                 "tools")

    def __init__(self, parse: Callable[[Answer], A], *, description: str = "",
                 structured: TypeSpec | None = None, tools: tuple[type, ...] = (),
                 force_tool: bool = False, shows: TypeSpec | None = None,
                 answers: TypeSpec | None = None) -> None:
        self._parse = parse
        self.answers = answers
        self.description = description
        self.structured = structured
        self.tools = tools
        self.force_tool = force_tool
        self.shows = shows

    def __repr__(self) -> str:
        return f"Parser({self.description or '?'})"

    def parse(self, answer: Answer | str) -> A:
        """Read ``answer``; any failure is a ``ParseError`` naming what was wrong."""
        if isinstance(answer, str):
            answer = Answer(answer)
        try:
            return self._parse(answer)
        except ParseError:
            raise
        except ValidationError as error:
            raise ParseError(format_validation_error(error)) from None
        except Exception as error:
            raise ParseError(f"{self.description or 'the parser'} failed: "
                             f"{type(error).__name__}: {error}") from error

    def _derived(self, parse: Callable[[Answer], B], what: str, *,
                 structured: TypeSpec | None = None, shows: TypeSpec | None = None,
                 tools: tuple[type, ...] | None = None,
                 answers: TypeSpec | None = None) -> Parser[B]:
        """A parser built on this one, keeping its request settings (schema, tools), not
        its ``answers`` (a step may return anything)."""
        return Parser(parse, description=f"{self.description}.{what}",
                      structured=structured if structured is not None else self.structured,
                      tools=self.tools if tools is None else tools,
                      force_tool=self.force_tool,
                      shows=shows if shows is not None else self.shows, answers=answers)

    def _then(self, step: Callable[[A], B], what: str, *,
              structured: TypeSpec | None = None, shows: TypeSpec | None = None,
              answers: TypeSpec | None = None) -> Parser[B]:
        def parse(answer: Answer) -> B:
            return step(self.parse(answer))
        return self._derived(parse, what, structured=structured, shows=shows,
                             answers=answers)

    def map(self, fn: Callable[[A], B]) -> Parser[B]:
        """Apply ``fn`` to the parsed value; an exception it raises is a ``ParseError``."""
        return self._then(fn, f"map({getattr(fn, '__name__', 'fn')})")

    def validate(self, check: Callable[[A], str | ParseError | None]) -> Parser[A]:
        """Keep the value when ``check`` returns None; a message (or a ``ParseError``)
        rejects it with that message."""
        def step(value: A) -> A:
            verdict = check(value)
            if verdict is None:
                return value
            raise verdict if isinstance(verdict, ParseError) else ParseError(str(verdict))
        return self._then(step, "validate", answers=self.answers)  # only narrows

    def wrap_errors(self) -> Parser[A | WrappedParseError]:
        """Return a ``WrappedParseError`` value instead of failing."""
        def parse(answer: Answer) -> A | WrappedParseError:
            try:
                return self.parse(answer)
            except ParseError as error:
                return WrappedParseError(error)
        return self._derived(parse, "wrap_errors")

    @property
    def response(self) -> GenericParser:
        """This parser's answers as a ``Response`` whose tools are read from the query's
        answer type ``Response[A, Tools]`` (Delphyne's ``Parser.response``)."""
        return GenericParser(lambda t: self.response_with(_tool_types(t)),
                             f"{self.description}.response")

    def response_with(self, tools: Sequence[type]) -> Parser[Response[A, Any]]:
        """A ``Response``: the calls the model made to ``tools`` (each parsed as the tool
        type of that name), else this parser's reading of the answer as the final one.
        This parser's schema, tools (``final_tool_call_as``'s answer tool) and forced
        tool choice are kept: a call to its own tool is the final answer."""
        return response_with(tools, self)

    # -- text steps (for a ``Parser[str]``) ---------------------------------------------
    @property
    def trim(self) -> Parser[str]:
        """Strip surrounding whitespace."""
        return self._then(lambda text: _text(text).strip(), "trim")

    def json_as(self, annotation: Any) -> Parser[Any]:
        """Read the text as JSON (fenced or in prose) validated as ``annotation``."""
        spec = type_spec(annotation)
        return self._then(lambda text: _from_json(spec, _text(text)),
                          f"json_as({spec.name})", shows=spec, answers=spec)

    def yaml_as(self, annotation: Any) -> Parser[Any]:
        """Read the text as YAML validated as ``annotation`` (PyYAML, ``hoare[queries]``)."""
        spec = type_spec(annotation)
        return self._then(lambda text: _from_yaml(spec, _text(text)),
                          f"yaml_as({spec.name})", shows=spec)

    @property
    def json(self) -> GenericParser:
        """``json_as`` of the query's answer type."""
        return GenericParser(self.json_as, f"{self.description}.json")

    @property
    def yaml(self) -> GenericParser:
        """``yaml_as`` of the query's answer type."""
        return GenericParser(self.yaml_as, f"{self.description}.yaml")


class GenericParser:
    """A parser waiting for the answer type: ``for_type(T)`` makes the ``Parser[T]``."""

    __slots__ = ("description", "make")

    def __init__(self, make: Callable[[Any], Parser[Any]], description: str) -> None:
        self.make = make
        self.description = description

    def __repr__(self) -> str:
        return f"GenericParser({self.description})"

    def for_type(self, annotation: Any) -> Parser[Any]:
        """The parser ``make`` builds for ``annotation``; anything else (an async
        ``make``'s coroutine, closed unawaited) is a TypeError naming it."""
        made = self.make(annotation)
        if not isinstance(made, Parser):
            close = getattr(made, "close", None) if inspect.isawaitable(made) else None
            if callable(close):
                close()
            raise TypeError(f"GenericParser {self.description}: make() must return a "
                            f"Parser, got {type(made).__name__}")
        return made

    def wrap_errors(self) -> GenericParser:
        return GenericParser(lambda t: self.make(t).wrap_errors(),
                             f"{self.description}.wrap_errors")

    def response_with(self, tools: Sequence[type]) -> GenericParser:
        """``Parser.response_with`` once the answer type is known."""
        return GenericParser(lambda t: self.make(t).response_with(tools),
                             f"{self.description}.response_with")

    @property
    def response(self) -> GenericParser:
        """For an answer type ``Response[A, Tools]``: this parser for ``A``, with the tools
        of ``Tools`` (one type or a union) offered (Delphyne's ``GenericParser.response``)."""
        return GenericParser(lambda t: self.make(_final_type(t)).response_with(
            _tool_types(t)), f"{self.description}.response")


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise ParseError(f"expected text, the parser before gave {type(value).__name__}")
    return value


def _from_json(spec: TypeSpec, text: str) -> Any:
    """The first JSON value in ``text`` that validates (as contracts read answers)."""
    try:
        return read_answer(spec, text)
    except InvalidValue as error:
        raise ParseError(str(error)) from None


def _from_yaml(spec: TypeSpec, text: str) -> Any:
    yaml = require("yaml", "YAML answers")
    body = _last_block(text, ("yaml", "yml")) or text
    try:
        data = yaml.safe_load(body)
    except yaml.YAMLError as error:
        raise ParseError(f"the answer is not valid YAML: {error}") from None
    except RecursionError:  # PyYAML composes nested nodes recursively
        raise ParseError("the answer's YAML is nested too deep to read: answer with a "
                         "flatter value") from None
    try:
        return spec.validate(data)
    except ValidationError as error:
        raise ParseError(f"the answer is not a valid {spec.name}: "
                         f"{format_validation_error(error)}") from None


def _last_block(text: str, labels: tuple[str, ...] | None = None) -> str | None:
    """The body of the last closed fence (labelled as one of ``labels``, else unlabelled),
    found by ``json_text.fences`` in linear time (a regex was quadratic in a run of
    backticks)."""
    blocks = [(label, body) for label, body, _ in fences(text, closed=True)]
    if labels is not None:
        blocks = [b for b in blocks if b[0] in labels] or [b for b in blocks if not b[0]]
    return blocks[-1][1] if blocks else None


def final_block(text: str) -> str | None:
    """The body of the last complete fenced block, read as Delphyne does when fences are
    unbalanced: any three backticks may open a block (the rest of their line is its
    label) that the next three backticks after that line close; the last opening that
    closes wins. Linear: the last closing fence, the last line break before it, the
    last opening before that line break (no regex retrying each backtick)."""
    closing = text.rfind("```")
    if closing < 0:
        return None
    line_end = text.rfind("\n", 0, closing)
    if line_end < 0:
        return None
    opening = text.rfind("```", 0, line_end)  # its three backticks end by ``line_end``
    if opening < 0:
        return None
    body_start = text.index("\n", opening + 3) + 1
    return text[body_start:text.index("```", body_start)]


def _code_block(answer: Answer) -> str:
    block = final_block(answer.text)
    if block is None:
        raise ParseError("the answer has no code block: put the answer between ``` fences")
    return block


get_text: Parser[str] = Parser(lambda answer: answer.text, description="get_text")
"""The answer's text, as it is."""

trim: Parser[str] = get_text.trim
"""The answer's text without surrounding whitespace."""

last_code_block: Parser[str] = Parser(_code_block, description="last_code_block")
"""The content of the answer's last complete fenced code block (see ``final_block``)."""


def string_literals(annotation: Any) -> tuple[str, ...] | None:
    """The strings of a ``Literal`` of strings (through ``type`` aliases), else None."""
    annotation = unalias(annotation)
    if typing.get_origin(annotation) is not typing.Literal:
        return None
    values = typing.get_args(annotation)
    if not values or not all(isinstance(v, str) for v in values):
        return None
    return typing.cast(tuple[str, ...], values)


def unalias(annotation: Any) -> Any:
    """The value of a ``type X = ...`` alias (``TypeAliasType``, also nested), else the
    annotation itself."""
    for _ in range(100):  # an alias of an alias ...; a cycle is not followed forever
        value = getattr(annotation, "__value__", None) \
            if type(annotation).__name__ == "TypeAliasType" else None
        if value is None:
            return annotation
        annotation = value
    raise TypeError(f"the type alias {annotation!r} does not resolve")


def first_word_as(annotation: Any) -> Parser[Any]:
    """The answer's first word, one of the strings of ``annotation`` (a ``Literal`` of
    strings, Delphyne's ``first_word``)."""
    values = string_literals(annotation)
    if values is None:
        raise TypeError(f"first_word needs a Literal of strings, got {annotation!r}")
    allowed = frozenset(values)

    def parse(answer: Answer) -> str:
        words = answer.text.split(maxsplit=1)
        if not words:
            raise ParseError(f"the answer is empty: answer with one word of "
                             f"{list(values)}")
        if words[0] not in allowed:
            raise ParseError(f"the answer's first word {safe_excerpt(words[0])!r} is not "
                             f"one of {list(values)}")
        return words[0]
    return Parser(parse, description="first_word", answers=type_spec(annotation))


def safe_excerpt(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


first_word = GenericParser(first_word_as, "first_word")
"""``first_word_as`` of the query's answer type."""


def structured_as(annotation: Any) -> Parser[Any]:
    """Provider structured output: the request carries the JSON schema of
    ``annotation`` and the answer's JSON is validated by pydantic."""
    spec = type_spec(annotation)
    return Parser(lambda answer: _from_json(spec, answer.text),
                  description=f"structured_as({spec.name})", structured=spec, shows=spec,
                  answers=spec)


structured = GenericParser(structured_as, "structured")
"""``structured_as`` of the query's answer type (the default parser)."""


def json_as(annotation: Any) -> Parser[Any]:
    """The answer text read as JSON of type ``annotation`` (no schema is requested)."""
    return get_text.json_as(annotation)


def yaml_as(annotation: Any) -> Parser[Any]:
    """The answer text (or its last ```yaml block) read as YAML of type ``annotation``."""
    return get_text.yaml_as(annotation)


def _response_args(annotation: Any) -> tuple[Any, Any]:
    annotation = unalias(annotation)
    if typing.get_origin(annotation) is not Response:
        raise TypeError(f".response needs the answer type Response[A, Tools], got "
                        f"{annotation!r}")
    final, tools = typing.get_args(annotation)
    return final, tools


def _final_type(annotation: Any) -> Any:
    return _response_args(annotation)[0]


def _tool_types(annotation: Any) -> tuple[type, ...]:
    """The tool types of ``Response[A, Tools]``: ``Tools`` or each member of its union."""
    tools = unalias(_response_args(annotation)[1])
    import types as _types

    members = typing.get_args(tools) if typing.get_origin(tools) in (
        typing.Union, _types.UnionType) else (tools,)
    if not all(isinstance(m, type) for m in members):
        raise TypeError(f"the tools of {annotation!r} must be classes (a union of tool "
                        f"types), got {tools!r}")
    return tuple(members)


def _tool_name(tool: type) -> str:
    return str(getattr(tool, "__tool_name__", None) or tool.__name__)


def _offered_name(tool: type) -> str:
    """The name a tool type is offered under, refused (``TypeError``) when a native tool
    call cannot carry it (``NAME_PATTERN``: a provider answers 400 to every request
    offering ``Résumé`` or ``has space``)."""
    from hoare.agents.tool import NAME_PATTERN

    name = _tool_name(tool)
    if not NAME_PATTERN.fullmatch(name):
        raise TypeError(f"the tool name {name!r} of {tool.__qualname__} is not one a native "
                        f"tool call can carry (letters, digits, _ and -, at most 64): "
                        f"set __tool_name__ on the class")
    return name


def tool_spec(tool: type) -> dict[str, Any]:
    """The OpenAI function spec of a tool type (its docstring, its JSON schema)."""
    schema = type_spec(tool).schema
    return {"type": "function", "function": {
        "name": _tool_name(tool), "description": (tool.__doc__ or "").strip(),
        "parameters": schema}}


def _parse_call(call: ToolCall, tools: Sequence[type]) -> Any:
    by_name = {_tool_name(t): t for t in tools}
    tool = by_name.get(call.name)
    if tool is None:
        raise ParseError(f"the model called an unknown tool {call.name!r}; the tools are "
                         f"{sorted(by_name)}")
    try:
        return TypeAdapter(tool).validate_json(call.arguments or "{}")
    except ValidationError as error:
        raise ParseError(f"the arguments of the call to {call.name} are not valid: "
                         f"{format_validation_error(error)}") from None


def final_tool_call_as(annotation: Any) -> Parser[Any]:
    """The answer is given as a call to a tool named after ``annotation`` (the last
    such call); its arguments are validated as ``annotation``. The request offers that
    tool and requires a tool call (``tool_choice: "required"``), as Delphyne does."""
    if not (isinstance(annotation, type) and (issubclass(annotation, BaseModel)
                                              or hasattr(annotation, "__dataclass_fields__"))):
        raise TypeError(f"final_tool_call_as needs a pydantic model or a dataclass, "
                        f"got {annotation!r}")
    _offered_name(annotation)

    def parse(answer: Answer) -> Any:
        calls = [c for c in answer.tool_calls if c.name == _tool_name(annotation)]
        if not calls:
            raise ParseError(f"answer by calling the tool {_tool_name(annotation)!r} with "
                             f"the answer as its arguments")
        return _parse_call(calls[-1], (annotation,))

    return Parser(parse, description=f"final_tool_call_as({_tool_name(annotation)})",
                  tools=(annotation,), force_tool=True, shows=type_spec(annotation))


final_tool_call = GenericParser(final_tool_call_as, "final_tool_call")
"""``final_tool_call_as`` of the query's answer type."""


def response_with(tools: Sequence[type], final: Parser[Any] | None = None
                  ) -> Parser[Response[Any, Any]]:
    """``Response[FinalAnswer | ToolRequests]``: the model's calls to ``tools`` (each
    validated as the tool type of that name) when it made any, else ``final``'s reading
    of the answer (``get_text`` by default). The request offers ``tools`` and
    ``final``'s own tools (a call to one of those is the final answer), keeps
    ``final``'s structured output and its forced tool choice."""
    tools = tuple(tools)
    odd = next((t for t in tools if not isinstance(t, type)), None)
    if odd is not None:
        raise TypeError(f"response_with needs tool classes, got {type(odd).__name__}")
    reader = final or get_text
    names = {_offered_name(t) for t in tools}
    own = {_tool_name(t) for t in reader.tools}
    clash = names & own
    if clash:
        raise TypeError(f"response_with: the tool(s) {sorted(clash)} are both requested "
                        f"tools and the final answer's tool")
    offered = (*tools, *reader.tools)

    def parse(answer: Answer) -> Response[Any, Any]:
        requested = [c for c in answer.tool_calls if c.name not in own]
        if requested:
            calls = tuple(_parse_call(c, tools) for c in requested)
            return Response(answer, ToolRequests(calls))
        return Response(answer, FinalAnswer(reader.parse(answer)))

    return reader._derived(parse, "response_with", tools=offered)
