"""Prompt texts of a query: Jinja templates, class attributes, or the defaults.

For each kind of prompt (``system``, ``instance``, ``repair``, ``more``) the first
that exists wins:

1. a file ``<QueryName>.<kind>.jinja`` next to the query's module, in the folders
   of the class attribute ``__templates__``, or in a folder added with
   ``add_template_folder`` (searched in that order);
2. the class attribute ``__<kind>_prompt__`` (``__system_prompt__``,
   ``__instance_prompt__``, ``__repair_prompt__``, ``__more_prompt__``: a Jinja template
   string, dedented as Delphyne does, so it can be indented with the class body);
3. the default: the docstring (system), the query's fields as YAML (instance),
   a fixed sentence (repair, more).

Templates get the query's fields by name, ``query`` (the instance), ``params``,
``format`` (what the answer must look like), ``mode``, ``available_modes`` and,
for the examples of a few-shot prompt, ``example`` (its number from 1, else None);
a repair template also gets ``error``.

A line holding only ``!<assistant>`` in an instance prompt splits it (Delphyne's
assistant priming): the text after it is sent as an assistant message that the
answer continues, not as text of the user's. A ``FeedbackMessage`` of a chat prefix is
rendered by the ``feedback`` prompt (``feedback`` in the context; by default
Delphyne's "Error. Please try again." with its description).
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any, Literal

from pydantic import TypeAdapter

from hoare.forking import hold_across_fork
from hoare.queries.extras import require

__all__ = ["Kind", "add_template_folder", "render", "template_folders"]

Kind = Literal["system", "instance", "repair", "more", "feedback"]

_FOLDERS: list[Path] = []
_LOCK = threading.Lock()
hold_across_fork(sys.modules[__name__], _LOCK)  # free in a forked child
_ENVIRONMENTS: dict[tuple[Path, ...], Any] = {}

DEFAULT_REPAIR = ("Invalid answer. Please consider the following feedback and try again:"
                  "\n\n{error}")
DEFAULT_MORE = "Good! Can you generate a different answer now?"
DEFAULT_FEEDBACK = 'Error. Please try again.\n\n"""\n{description}\n"""'
"""A ``FeedbackMessage`` of a prefix without a ``feedback`` template (Delphyne's)."""


def add_template_folder(folder: str | Path) -> None:
    """Also look for ``<QueryName>.<kind>.jinja`` files in ``folder`` (all queries)."""
    try:
        path = Path(folder).resolve()
        is_dir = path.is_dir()
    except (OSError, RuntimeError, UnicodeError) as error:  # too long, a loop, a surrogate
        reason = getattr(error, "strerror", None) or type(error).__name__
        raise ValueError(f"template folder {str(folder)[:200]!r} cannot be used: "
                         f"{reason}") from None
    if not is_dir:
        raise ValueError(f"template folder {str(folder)[:200]!r} is not a directory")
    with _LOCK:
        if path not in _FOLDERS:
            _FOLDERS.append(path)


def template_folders(cls: type) -> tuple[Path, ...]:
    """Where the templates of query class ``cls`` are looked up, in order."""
    folders: list[Path] = []
    try:
        folders.append(Path(inspect.getfile(cls)).resolve().parent)
    except (TypeError, OSError):
        pass
    for folder in getattr(cls, "__templates__", ()) or ():
        folders.append(Path(folder).resolve())
    with _LOCK:
        folders.extend(_FOLDERS)
    return tuple(dict.fromkeys(folders))


def _environment(folders: tuple[Path, ...]) -> Any:
    jinja2 = require("jinja2", "prompt templates")
    with _LOCK:
        env = _ENVIRONMENTS.get(folders)
        if env is None:
            env = _ENVIRONMENTS[folders] = jinja2.Environment(
                loader=jinja2.FileSystemLoader([str(f) for f in folders]),
                undefined=jinja2.StrictUndefined, keep_trailing_newline=False,
                autoescape=False, trim_blocks=True, lstrip_blocks=True)
        return env


def _template_file(cls: type, kind: Kind) -> tuple[tuple[Path, ...], str] | None:
    name = f"{cls.__name__}.{kind}.jinja"
    folders = template_folders(cls)
    for folder in folders:
        if (folder / name).is_file():
            return folders, name
    return None


def fields_of(query: object) -> dict[str, Any]:
    """The query's dataclass fields as JSON-compatible values (pydantic's dump), each
    as it is: a ``nan``/``inf`` stays a float where pydantic's JSON mode writes ``null``
    (in a ``list``, a ``dict``, an ``Any``: the prompt would show the model a value the
    query does not hold, and two queries one key); a value pydantic cannot dump (bytes
    that are not UTF-8, an object of a class it has no schema for) is its ``repr``."""
    if not dataclasses.is_dataclass(query):
        return {}
    values = {f.name: getattr(query, f.name) for f in dataclasses.fields(query)}
    return {name: _dumped(value) for name, value in values.items()}


def _dumped(value: object) -> Any:
    """``value`` in pydantic's JSON mode with its non-finite floats kept, else its repr."""
    if value is None:
        return None
    try:
        adapter = TypeAdapter(type(value))
        shown = adapter.dump_python(value, mode="json")
        if not _holds_none(shown):
            return shown  # no null that could stand for a nan: the common case, one dump
        return _non_finite_kept(shown, adapter.dump_python(value, mode="python"))
    except Exception:
        from hoare.declaration.models import safe_repr

        return safe_repr(value)


def _holds_none(shown: Any) -> bool:
    """Is there a ``None`` anywhere in ``shown`` (JSON-mode data)?"""
    stack = [shown]
    while stack:
        item = stack.pop()
        if item is None:
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _non_finite_kept(shown: Any, value: Any, depth: int = 0) -> Any:
    """``shown`` (JSON mode) with each ``None`` that stands for a non-finite float of
    ``value`` (Python mode, the same walk in the same order) put back as that float."""
    if shown is None:
        return value if isinstance(value, float) and not math.isfinite(value) else None
    if depth > 200:  # deeper than any prompt: pydantic's own dump stands
        return shown
    if isinstance(shown, dict) and isinstance(value, dict) and len(shown) == len(value):
        return {key: _non_finite_kept(item, original, depth + 1)
                for (key, item), original in zip(shown.items(), value.values(), strict=True)}
    if isinstance(shown, list) and isinstance(value, (list, tuple)) \
            and len(shown) == len(value):  # a set's two dumps need not share an order
        return [_non_finite_kept(item, original, depth + 1)
                for item, original in zip(shown, value, strict=True)]
    return shown


def yaml_text(data: Any) -> str:
    yaml = require("yaml", "YAML instance prompts")
    return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True)).strip()


def render(query: object, kind: Kind, context: dict[str, Any]) -> str:
    """The ``kind`` prompt of ``query`` with ``context`` (see the module docstring)."""
    cls = type(query)
    fields = ({f.name: getattr(query, f.name) for f in dataclasses.fields(query)}
              if dataclasses.is_dataclass(query) else {})
    variables = {**fields, "query": query, **context}
    found = _template_file(cls, kind)
    if found is not None:
        folders, name = found
        return str(_environment(folders).get_template(name).render(**variables)).strip()
    text = getattr(cls, f"__{kind}_prompt__", None)
    if isinstance(text, str):
        return str(_environment(template_folders(cls)).from_string(
            textwrap.dedent(text).strip()).render(**variables)).strip()
    if kind == "system":
        doc = cls.__doc__ or ""
        if dataclasses.is_dataclass(cls) and doc.startswith(f"{cls.__name__}("):
            doc = ""  # the signature dataclass() writes when a class has no docstring
        system = inspect.cleandoc(doc)
        extra = context.get("format") or ""
        return f"{system}\n\n{extra}".strip()
    if kind == "instance":
        shown = fields_of(query)
        if has_prefix(cls):
            shown.pop("prefix", None)  # sent as messages after the instance prompt
        return yaml_text(shown)
    if kind == "repair":
        return DEFAULT_REPAIR.format(error=context.get("error", ""))
    if kind == "feedback":
        feedback = context.get("feedback")
        description = getattr(feedback, "description", None)
        if not description:
            raise ValueError(f"{cls.__name__}: a FeedbackMessage without a description needs "
                             f"a feedback template ({cls.__name__}.feedback.jinja or "
                             f"__feedback_prompt__)")
        return DEFAULT_FEEDBACK.format(description=description)
    return DEFAULT_MORE


def has_prefix(cls: type) -> bool:
    """The query continues a chat: a dataclass field ``prefix: AnswerPrefix``."""
    found = cls.__dict__.get("_hoare_has_prefix")
    if found is None:
        from hoare.queries.chats import AnswerPrefix

        fields = getattr(cls, "__dataclass_fields__", {})
        found = False
        if "prefix" in fields:
            import typing

            try:
                hint = typing.get_type_hints(cls).get("prefix")
            except Exception:
                hint = None
            found = hint == AnswerPrefix
        type.__setattr__(cls, "_hoare_has_prefix", found)
    return bool(found)


ASSISTANT_PRIMING = "!<assistant>"


def split_roles(text: str) -> list[tuple[Literal["user", "assistant"], str]]:
    """``(role, text)`` of the messages of a rendered instance prompt, as Delphyne splits
    it: at the first line that is ``!<assistant>`` (spaces around allowed), the text
    before is the user's message and the text after primes the assistant's answer;
    with nothing after that line, the prompt is left whole. One pass over the lines."""
    if ASSISTANT_PRIMING not in text:
        return [("user", text)]
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.strip() == ASSISTANT_PRIMING:
            before = "\n".join(lines[:index]).rstrip()
            after = "\n".join(lines[index + 1:]).lstrip()
            if after:
                return [("user", before), ("assistant", after)]
            break
    return [("user", text)]
