"""Demonstrations: query + answer pairs, for few-shot prompts and for ``DummyModel``.

A demonstration file is YAML (a list of entries) or JSONL (one entry per line);
its JSON schema is ``demonstrations.schema.json`` beside this module. An entry::

    query: MakeSum              # the query class's name
    args: {allowed: [1, 2, 3], target: 5}   # its fields
    answer: [2, 3]              # the answer as a value (written as JSON to the model)
    # or answer_text: "..."     # the answer exactly as the model should write it
    mode: null                  # the answer mode it illustrates (optional)
    tags: [easy]                # for selection (optional)

Delphyne's ``.demo.yaml`` files are read too: a query demonstration ``{query, args,
answers: [{answer, call, structured, mode, label, example, tags, meta,
justification}], demonstration}`` gives one example per answer (``answer`` a string
is the text as written, anything else a value; ``call: [{tool, args}]`` the tool
calls; ``example: false`` keeps it out of few-shot prompts, ``DummyModel`` still
answers with it), and the query demonstrations of a strategy demonstration
``{strategy, args, tests, queries, using, demonstration}`` are read the same way.

Selectors narrow the examples of a few-shot prompt, applied in order:
``with_tags("easy")``, ``most_similar(3)`` (word overlap between the example's
fields and the query's, Jaccard), ``take(2)``.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from hoare.declaration.models import format_validation_error
from hoare.engines.base import Request, Response, ToolCall, Usage
from hoare.errors import FatalEngineError, UsageError
from hoare.forking import hold_across_fork
from hoare.queries.answers import dump_answer
from hoare.queries.extras import require
from hoare.queries.templates import fields_of, yaml_text

__all__ = [
    "SCHEMA_PATH",
    "DemonstrationError",
    "DummyModel",
    "Example",
    "FailingModel",
    "NoDemonstration",
    "Selector",
    "load_demonstrations",
    "most_similar",
    "take",
    "with_tags",
]

SCHEMA_PATH = Path(__file__).with_name("demonstrations.schema.json")
_KEYS = {"query", "args", "answer", "answer_text", "mode", "tags"}


class DemonstrationError(UsageError, ValueError):
    """A demonstration file or entry is malformed (the message says where and what)."""


@dataclass(frozen=True)
class Example:
    """One demonstration: the query (class name and fields) and its answer."""

    query: str
    args: dict[str, Any]
    answer: Any = None
    answer_text: str | None = None
    mode: str | None = None
    tags: tuple[str, ...] = ()
    where: str = field(default="", compare=False)
    tool_calls: tuple[ToolCall, ...] = ()
    example: bool = True
    """False: an answer for ``DummyModel`` only, never shown as a few-shot example."""

    def calls(self) -> tuple[ToolCall, ...]:
        """The tool calls the answer makes."""
        return self.tool_calls

    def text(self) -> str:
        """The answer as the model should write it."""
        if self.answer_text is not None:
            return self.answer_text
        return dump_answer(self.answer)

    def instance_of(self, cls: type) -> Any:
        """The query instance this example is about (its fields validated by pydantic)."""
        try:
            return TypeAdapter(cls).validate_python(self.args)
        except ValidationError as error:
            raise DemonstrationError(f"{self.where}: args do not make a {cls.__name__}: "
                                     f"{format_validation_error(error)}") from None


_ANSWER_KEYS = {"answer", "call", "structured", "mode", "label", "example", "tags", "meta",
                "justification"}
_QUERY_DEMO_KEYS = {"query", "args", "answers", "demonstration"}
_STRATEGY_DEMO_KEYS = {"strategy", "args", "tests", "queries", "using", "demonstration"}


def _keys(data: dict[Any, Any], allowed: set[str], where: str) -> None:
    unknown = [k for k in data if k not in allowed]
    if unknown:
        raise DemonstrationError(f"{where}: unknown key(s) {sorted(map(str, unknown))}; the "
                                 f"keys are {sorted(allowed)}")


def _entries(data: object, where: str) -> list[Example]:
    """The examples of one top-level entry: hoare's, or Delphyne's query or strategy
    demonstration."""
    if isinstance(data, dict) and "strategy" in data:
        _keys(data, _STRATEGY_DEMO_KEYS, where)
        queries = data.get("queries", [])
        if not isinstance(queries, list):
            raise DemonstrationError(f"{where}: 'queries' must be a list of query "
                                     f"demonstrations")
        found: list[Example] = []
        for i, item in enumerate(queries):
            found.extend(_query_demo(item, f"{where} queries[{i}]"))
        return found
    if isinstance(data, dict) and "answers" in data:
        return _query_demo(data, where)
    return [_entry(data, where)]


def _query_demo(data: object, where: str) -> list[Example]:
    """One example per answer of a Delphyne query demonstration."""
    if not isinstance(data, dict):
        raise DemonstrationError(f"{where}: a query demonstration must be a mapping with "
                                 f"'query', 'args' and 'answers', got {type(data).__name__}")
    _keys(data, _QUERY_DEMO_KEYS, where)
    if not isinstance(data.get("query"), str) or not data["query"]:
        raise DemonstrationError(f"{where}: 'query' must be the query class's name")
    args = data.get("args", {})
    if not isinstance(args, dict) or not all(isinstance(k, str) for k in args):
        raise DemonstrationError(f"{where}: 'args' must be a mapping of the query's fields")
    label = data.get("demonstration")
    if label is not None and not isinstance(label, str):
        raise DemonstrationError(f"{where}: 'demonstration' must be a string (a label)")
    answers = data.get("answers")
    if not isinstance(answers, list):
        raise DemonstrationError(f"{where}: 'answers' must be a list of answers")
    return [_answer(data["query"], dict(args), item, f"{where} answers[{i}]")
            for i, item in enumerate(answers)]


def _answer(query: str, args: dict[str, Any], data: object, where: str) -> Example:
    if not isinstance(data, dict):
        raise DemonstrationError(f"{where}: an answer must be a mapping with 'answer', got "
                                 f"{type(data).__name__}")
    _keys(data, _ANSWER_KEYS, where)
    if "answer" not in data:
        raise DemonstrationError(f"{where}: 'answer' is missing")
    structured = data.get("structured", "auto")
    if structured not in ("auto", True):
        raise DemonstrationError(f"{where}: 'structured' must be 'auto' or true")
    for key in ("mode", "label", "justification"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise DemonstrationError(f"{where}: '{key}' must be a string or null")
    example = data.get("example")
    if example is not None and not isinstance(example, bool):
        raise DemonstrationError(f"{where}: 'example' must be true, false or null")
    tags = data.get("tags", [])
    if not (isinstance(tags, list) and all(isinstance(t, str) for t in tags)):
        raise DemonstrationError(f"{where}: 'tags' must be a list of strings")
    meta = data.get("meta")
    if meta is not None and not isinstance(meta, dict):
        raise DemonstrationError(f"{where}: 'meta' must be a mapping or null")
    calls = data.get("call", [])
    if not isinstance(calls, list):
        raise DemonstrationError(f"{where}: 'call' must be a list of tool calls")
    tool_calls = []
    for i, call in enumerate(calls):
        if not (isinstance(call, dict) and set(call) <= {"tool", "args"}
                and isinstance(call.get("tool"), str) and call["tool"]
                and isinstance(call.get("args", {}), dict)):
            raise DemonstrationError(f"{where} call[{i}]: a tool call is a mapping "
                                     f"{{tool: <name>, args: {{...}}}}")
        try:
            arguments = json.dumps(call.get("args", {}), ensure_ascii=False,
                                   allow_nan=False)
        except (TypeError, ValueError) as error:
            raise DemonstrationError(f"{where} call[{i}]: the arguments are not JSON: "
                                     f"{error}") from None
        tool_calls.append(ToolCall(f"call_{i}", call["tool"], arguments))
    answer = data["answer"]
    text = answer if isinstance(answer, str) else None
    if text is None:
        try:  # written as JSON to the model: refuse now what cannot be
            json.dumps(answer, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise DemonstrationError(f"{where}: 'answer' is not a string or a JSON "
                                     f"value: {error}") from None
    return Example(query, args, None if text is not None else answer, text,
                   data.get("mode"), tuple(tags), where, tuple(tool_calls),
                   example is not False)


def _entry(data: object, where: str) -> Example:
    if not isinstance(data, dict):
        raise DemonstrationError(f"{where}: an entry must be a mapping with 'query', 'args' "
                                 f"and 'answer' (or 'answer_text'), got {type(data).__name__}")
    unknown = set(data) - _KEYS
    if unknown:
        raise DemonstrationError(f"{where}: unknown key(s) {sorted(unknown)}; the keys are "
                                 f"{sorted(_KEYS)}")
    if not isinstance(data.get("query"), str) or not data["query"]:
        raise DemonstrationError(f"{where}: 'query' must be the query class's name")
    args = data.get("args", {})
    if not isinstance(args, dict):
        raise DemonstrationError(f"{where}: 'args' must be a mapping of the query's fields")
    if not all(isinstance(k, str) for k in args):
        raise DemonstrationError(f"{where}: 'args' must be a mapping of the query's fields")
    if ("answer" in data) == ("answer_text" in data):
        raise DemonstrationError(f"{where}: give exactly one of 'answer' (a value) and "
                                 f"'answer_text' (the text as written)")
    if "answer" in data:
        try:  # written as JSON to the model: refused now, as a Delphyne entry's answer is
            json.dumps(data["answer"], allow_nan=False)
        except (TypeError, ValueError) as error:
            raise DemonstrationError(f"{where}: 'answer' is not a JSON value: "
                                     f"{error}") from None
    if "answer_text" in data and not isinstance(data["answer_text"], str):
        raise DemonstrationError(f"{where}: 'answer_text' must be a string")
    mode = data.get("mode")
    if mode is not None and not isinstance(mode, str):
        raise DemonstrationError(f"{where}: 'mode' must be a string or null")
    tags = data.get("tags", [])
    if not (isinstance(tags, list) and all(isinstance(t, str) for t in tags)):
        raise DemonstrationError(f"{where}: 'tags' must be a list of strings")
    return Example(data["query"], dict(args), data.get("answer"), data.get("answer_text"),
                   mode, tuple(tags), where)


def load_demonstrations(source: str | Path | Iterable[Example | dict[str, Any]]
                        ) -> list[Example]:
    """Read a YAML or JSONL file (by its suffix: ``.jsonl`` is JSON lines, anything else
    YAML), or take a list of entries (``Example`` or mappings)."""
    if not isinstance(source, (str, Path)):
        found: list[Example] = []
        for i, e in enumerate(source):
            found.extend([e] if isinstance(e, Example) else _entries(e, f"demonstration [{i}]"))
        return found
    path = Path(source)
    try:
        return _read(path)
    except DemonstrationError:
        raise
    except (ValueError, RecursionError) as error:  # a file's numbers and nesting are foreign
        raise DemonstrationError(f"{str(path)[:200]}: cannot be read: {type(error).__name__}: "
                                 f"{str(error)[:200]}") from None


def _read(path: Path) -> list[Example]:
    """The examples of the file at ``path`` (see ``load_demonstrations``)."""
    try:
        if path.exists() and not path.is_file():  # a FIFO would block, a device never end
            raise IsADirectoryError(0, "not a regular file")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as error:  # also a name too long or not encodable
        reason = getattr(error, "strerror", None) or type(error).__name__
        raise DemonstrationError(f"cannot read the demonstration file {str(path)[:200]!r}: "
                                 f"{reason}") from None
    if path.suffix == ".jsonl":
        examples = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as error:
                raise DemonstrationError(f"{path}:{number}: not JSON: {error.msg}") from None
            examples.extend(_entries(data, f"{path}:{number}"))
        return examples
    yaml = require("yaml", "YAML demonstration files")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise DemonstrationError(f"{path}: not YAML: {error}") from None
    if data is None:
        return []
    if not isinstance(data, list):
        raise DemonstrationError(f"{path}: a demonstration file is a list of entries")
    found = []
    for i, item in enumerate(data):
        found.extend(_entries(item, f"{path} entry {i + 1}"))
    return found


# -- selection --------------------------------------------------------------------------

Selector = Callable[[object, list[Example]], list[Example]]


def with_tags(*tags: str) -> Selector:
    """Keep the examples that have every one of ``tags``."""
    wanted = set(tags)
    return lambda query, examples: [e for e in examples if wanted <= set(e.tags)]


def _count(k: object, name: str) -> None:
    """Refuse a ``k`` that is not a whole number >= 0 when the selector is made (a
    ``bool``, a float, ``nan`` would fail, or pass as 1, only when examples are chosen)."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 0:
        raise ValueError(f"{name}({k!r}): k must be a whole number >= 0")


def take(k: int) -> Selector:
    """Keep the first ``k`` examples."""
    _count(k, "take")
    return lambda query, examples: examples[:k]


_WORD = re.compile(r"\w+")


def _words(data: object) -> set[str]:
    return set(_WORD.findall(json.dumps(data, sort_keys=True, default=str).lower()))


def most_similar(k: int) -> Selector:
    """The ``k`` examples whose fields share the most words with the query's (Jaccard
    similarity; ties keep file order)."""
    _count(k, "most_similar")

    def select(query: object, examples: list[Example]) -> list[Example]:
        mine = _words(fields_of(query))

        def score(example: Example) -> float:
            theirs = _words(example.args)
            union = mine | theirs
            return len(mine & theirs) / len(union) if union else 0.0
        ranked = sorted(enumerate(examples), key=lambda p: (-score(p[1]), p[0]))
        return [e for _, e in ranked[:k]]
    return select


def examples_for(query: object, examples: Sequence[Example], mode: str | None,
                 selectors: Sequence[Selector]) -> list[Example]:
    """The examples of ``query``'s class and answer mode, then each selector in turn."""
    name = type(query).__name__
    chosen = [e for e in examples if e.query == name and e.mode == mode and e.example]
    for selector in selectors:
        chosen = list(selector(query, chosen))
    return chosen


# -- engines for tests -------------------------------------------------------------------

class NoDemonstration(FatalEngineError):
    """``DummyModel`` has no demonstration for the query it was asked."""


class DummyModel:
    """An engine answering each query from demonstrations whose ``query`` and ``args``
    are the query's (its class name and fields): n completions cycle through the
    matching answers. A query without a demonstration is a ``NoDemonstration`` error."""

    model = "dummy"

    def __init__(self, examples: str | Path | Iterable[Example | dict[str, Any]]) -> None:
        self.examples = load_demonstrations(examples)
        self._lock = threading.Lock()
        hold_across_fork(self, self._lock)  # free in a forked child (hoare.forking)
        self._served: dict[tuple[str, str], int] = {}

    def _answers(self, request: Request) -> list[Example]:
        query = request.input
        name = type(query).__name__
        args = fields_of(query)
        found = [e for e in self.examples if e.query == name and e.args == args]
        if not found:
            raise NoDemonstration(f"DummyModel has no demonstration for {name} with args "
                                  f"{json.dumps(args, default=str)[:300]}")
        return found

    def complete(self, request: Request) -> Response:
        answers = self._answers(request)
        n = max(1, request.options.n)
        key = (type(request.input).__name__, yaml_text_or_json(request.input))
        with self._lock:
            start = self._served.get(key, 0)
            self._served[key] = start + n
        chosen = tuple(itertools.islice(itertools.cycle(answers), start, start + n))
        return Response(texts=tuple(e.text() for e in chosen),
                        finish_reasons=("stop",) * n, usage=Usage(requests=1),
                        model=self.model, tool_calls=chosen[0].calls())

    async def acomplete(self, request: Request) -> Response:
        return self.complete(request)


def yaml_text_or_json(query: object) -> str:
    try:
        return yaml_text(fields_of(query))
    except ImportError:
        return json.dumps(fields_of(query), sort_keys=True, default=str)


class FailingModel:
    """An engine that never answers (Delphyne's ``DummyModel``): every request is a
    ``FatalEngineError``, so a policy's failure paths can be tested."""

    model = "failing"

    def complete(self, request: Request) -> Response:
        raise FatalEngineError("FailingModel never answers")

    async def acomplete(self, request: Request) -> Response:
        return self.complete(request)
