"""Chat messages for generation and repair attempts.

A corrective prompt is built from scratch for every attempt: the contract's
prompt, the output schema, the input, the *latest* invalid answer and the
errors to fix (the latest attempt's, or all attempts' with
``accumulate_errors``). Nothing else is carried over. The rejected answer and the
errors block are each cut to ``limit`` characters (the prompt says how much was
shown), so an attempt's prompt is bounded whatever the model answered and however
many attempts accumulated errors.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import Generic, Literal, TypeVar

from hoare.declaration.models import TypeSpec
from hoare.engines.base import Message, Response
from hoare.forking import hold_across_fork
from hoare.kernel import Phase, Violation, ViolationKind

__all__ = ["DEFAULT_FEEDBACK_CHARS", "LRUCache", "render_messages", "system_text", "truncate"]

DEFAULT_FEEDBACK_CHARS = 4000  # per block: the rejected answer, the errors to fix

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRUCache(Generic[K, V]):
    """A thread-safe mapping that keeps the ``maxsize`` most recently used entries: for
    caches keyed by values that may change per call (a ``prompt`` property)."""

    def __init__(self, maxsize: int) -> None:
        if isinstance(maxsize, bool) or not isinstance(maxsize, int) or maxsize < 1:
            raise ValueError(f"cache size must be an integer >= 1, got {maxsize!r}")
        self.maxsize = maxsize
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        hold_across_fork(self, self._lock)  # free in a forked child (hoare.forking)

    def __len__(self) -> int:
        return len(self._data)

    def get_or_build(self, key: K, build: Callable[[], V]) -> V:
        """The cached value of ``key``, built (outside the lock) when missing."""
        with self._lock:
            try:
                self._data.move_to_end(key)
                return self._data[key]
            except KeyError:
                pass
        value = build()
        with self._lock:
            self._data[key] = value
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)
        return value


def truncate(text: str, limit: int, keep: Literal["head", "tail"] = "head") -> str:
    """``text`` cut to ``limit`` characters, saying so when it was cut."""
    if len(text) <= limit:
        return text
    note = f"[truncated: {limit} of {len(text)} characters shown]"
    if keep == "tail":
        return f"{note}\n{text[len(text) - limit:]}"
    return f"{text[:limit]}\n{note}"

# Violations the model can act on. An engine failure ("error") says nothing about the
# previous answer, so it is not shown to the model.
_SHOWN = (ViolationKind.TYPE, ViolationKind.PREDICATE)


def input_fields_text(source: TypeSpec) -> str:
    """``- name: description`` for each input field that has one (SymbolicAI's prompts
    carry the input model's field descriptions as well as the output's); empty when
    none has, or the input is a native type."""
    if source.wrapped:
        return ""
    lines = []
    for name, info in source.model.model_fields.items():
        if info.description:
            lines.append(f"- {info.alias or name}: {' '.join(info.description.split())}")
    return "\n".join(lines)


def system_text(prompt: str, target: TypeSpec, task: str,
                source: TypeSpec | None = None) -> str:
    """The system message of a stage (cached per contract by the caller). ``source``:
    the input type, whose field descriptions say what the input means."""
    if task == "repair_input":
        goal = (
            "The input below violates the contract's pre-conditions. Repair the INPUT: "
            "change as little as possible so that every listed problem is fixed."
        )
        schema_intro = f"Answer with one JSON value that conforms to this input schema " \
                       f"({target.name}):"
    else:
        goal = "Produce the output for the input below."
        schema_intro = f"Answer with one JSON value that conforms to this output schema " \
                       f"({target.name}):"
    fields = input_fields_text(source) if source is not None and task != "repair_input" \
        else ""
    meaning = f"The input's fields ({source.name}):\n{fields}\n" if fields and source else ""
    return (
        f"{prompt.strip()}\n\n{goal}\n{meaning}{schema_intro}\n{target.schema_json}\n"
        "Reply with the JSON only, no prose and no markdown fence."
    )


def _previous_text(previous: object) -> str | None:
    if isinstance(previous, Response):
        return previous.text
    return None


def _errors_block(feedback: Iterable[Violation], accumulated: bool) -> str:
    shown = [v for v in feedback if v.kind in _SHOWN]
    if not shown:
        return ""
    if not accumulated:
        return "\n".join(f"- {v.message}" for v in shown)
    lines: list[str] = []
    current = None
    for violation in shown:
        if violation.attempt != current:
            current = violation.attempt
            label = "the original input" if current == 0 else f"attempt {current}"
            lines.append(f"Problems with {label}:")
        lines.append(f"- {violation.message}")
    return "\n".join(lines)


def render_messages(system: str, phase: Phase, input_json: str, input_name: str,
                    feedback: Iterable[Violation], previous: object,
                    accumulated: bool, limit: int = DEFAULT_FEEDBACK_CHARS
                    ) -> tuple[Message, ...]:
    """The messages of one attempt (see the module docstring for what goes in)."""
    errors = _errors_block(feedback, accumulated)
    if errors:  # accumulated errors: the latest matter most, keep the end
        errors = truncate(errors, limit, "tail" if accumulated else "head")
    previous_text = _previous_text(previous)
    if previous_text is not None:
        previous_text = truncate(previous_text, limit)
    if phase is Phase.PRE:
        body = f"Input to repair ({input_name}):\n{input_json}"
        if previous_text is not None:
            body += f"\n\nYour previous repair attempt:\n{previous_text}"
        if errors:
            body += f"\n\nProblems to fix:\n{errors}"
        return Message("system", system), Message("user", body)
    body = f"Input ({input_name}):\n{input_json}"
    if errors and previous_text is not None:
        body += (f"\n\nYour previous answer was rejected:\n{previous_text}\n\n"
                 f"Problems to fix:\n{errors}\n\n"
                 "Return a corrected JSON answer that fixes every problem above.")
    elif errors:
        body += f"\n\nAvoid these problems:\n{errors}"
    return Message("system", system), Message("user", body)
