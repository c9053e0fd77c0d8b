"""A secret is redacted in every form a text shows it in (spec §8.4).

A predicate's message quotes a secret as ``repr``/``ascii`` (``f"{key!r}"``), JSON
(``json.dumps``) or UTF-8 bytes write it: escaped, it holds no copy of the raw text
(``pa\\nss`` for ``pa<newline>ss``), so matching the raw text alone let it through.
A text is also often cut short before it is redacted (``format_validation_error``'s 117
characters, ``safe_text``'s limit): the start of a secret before the cut is redacted
too. Generated secrets cover quotes, backslashes, controls, non-ASCII, lone
surrogates and U+10FFFF.
"""

from __future__ import annotations

import json
import logging
import traceback
from collections.abc import Callable

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, PrivateAttr, SecretBytes, SecretStr

from hoare import Contract, LLMDataModel, contract
from hoare.declaration.models import CUT_MARKS, redact, secret_values
from hoare.engines import FunctionEngine

FORMS: dict[str, Callable[[str], str]] = {
    "raw": lambda text: text,
    "repr": repr,
    "ascii": ascii,
    "json": json.dumps,
    "json_unicode": lambda text: json.dumps(text, ensure_ascii=False),
    "utf8_bytes": lambda text: repr(text.encode("utf-8", "surrogatepass")),
}

secret_texts = st.text(
    alphabet=st.one_of(st.sampled_from("'\"\\\n\t\r\x00\x7f\u202e\U0010ffff\ud800\udfffé"),
                       st.characters()),
    min_size=6, max_size=24)


def _unquoted(quoted: str) -> str:
    """A ``repr``/JSON form without its quotes (and a byte string's ``b``)."""
    if quoted[:2] in ("b'", 'b"'):
        return quoted[2:-1]
    return quoted[1:-1] if quoted[:1] in ("'", '"') else quoted


def _shown_forms(text: str) -> set[str]:
    """The forms of ``text`` a reader would recognise it by."""
    return {_unquoted(form(text)) for form in FORMS.values()}


class Holder(BaseModel):
    items: list[object] = []
    key: SecretStr | None = None


@settings(max_examples=200, deadline=None)
@given(secret=secret_texts.filter(lambda text: "*" not in text),  # not the mask's own
       form=st.sampled_from(sorted(FORMS)),
       where=st.sampled_from(["field", "list", "dict", "bytes"]))
def test_every_form_of_a_secret_is_redacted(secret: str, form: str, where: str) -> None:
    """Inside a model field, a list, a dict's tuple, or as a ``SecretBytes``."""
    if where == "bytes":
        raw = secret.encode("utf-8", "surrogatepass")
        secrets = secret_values([SecretBytes(raw)])
        quoted = repr(raw)
    else:
        holder = {"field": Holder(key=SecretStr(secret)),
                  "list": Holder(items=[1, [SecretStr(secret)]]),
                  "dict": {"k": (SecretStr(secret),)}}[where]
        secrets = secret_values(holder)
        quoted = FORMS[form](secret)
    text = redact(f"refused {quoted} at once", secrets)
    assert _unquoted(quoted) not in text, text


@settings(max_examples=200, deadline=None)
@given(secret=st.text(alphabet="abcdefgh", min_size=6, max_size=30),
       before=st.text(alphabet="xyz ", max_size=20), cut=st.integers(1, 30),
       mark=st.sampled_from([*CUT_MARKS, ""]))
def test_the_start_of_a_secret_before_a_cut_is_redacted(secret: str, before: str, cut: int,
                                                          mark: str) -> None:
    """A text cut inside a secret keeps no start of it: before a cut mark at any
    length, at the text's end from 4 characters on."""
    cut = min(cut, len(secret) - 1)
    text = redact(f"{before}{secret[:cut]}{mark}", frozenset({secret}))
    kept = text[:len(text) - len(mark)] if mark else text
    shortest = 1 if mark else 4
    assert not any(kept.endswith(secret[:size]) for size in range(shortest, cut + 1)), text


class Keyed(LLMDataModel):
    key: SecretStr


class Short(LLMDataModel):
    text: str = Field(max_length=5)


@contract(policy="enforce", remedy_retry_params={"tries": 1, "delay": 0})
class Quoting(Contract[Keyed, Short]):
    """Its pre-condition quotes the secret in the form the test picks."""

    prompt = "p"
    form = "repr"

    def pre(self, value: Keyed) -> bool:
        raise ValueError("refused key " + FORMS[self.form](value.key.get_secret_value()))

    def forward(self, value: Keyed) -> Short:
        return Short(text="f")


class _Captured(logging.Handler):
    """Every record of the ``hoare`` loggers, at DEBUG, while in use."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(self.format(record))
        if record.exc_info:
            self.texts.append("".join(traceback.format_exception(*record.exc_info)))

    def __enter__(self) -> _Captured:
        logger = logging.getLogger("hoare")
        self.level = logger.level
        logger.addHandler(self)
        logger.setLevel(logging.DEBUG)
        return self

    def __exit__(self, *_: object) -> None:
        logger = logging.getLogger("hoare")
        logger.removeHandler(self)
        logger.setLevel(self.level)


def _everything_shown(instance: Contract[Keyed, Short], error: BaseException,
                      logs: str) -> str:
    outcome = instance.contract_outcome
    assert outcome is not None
    return "\n".join([
        "".join(traceback.format_exception(error)), repr(error.args), logs,
        *(violation.message for violation in outcome.violations),
        *(violation.message for attempt in outcome.attempts
          for violation in (*attempt.violations, *attempt.feedback))])


@settings(max_examples=60, deadline=None)
@given(secret=secret_texts.filter(lambda text: "*" not in text),
       form=st.sampled_from(sorted(FORMS)))
def test_a_contract_shows_no_form_of_its_input_secret(secret: str, form: str) -> None:
    """A secret the texts hold anyway (``Secret``, a word of their own) is no leak: the
    same call with another secret tells."""
    def everything_shown(key: str) -> str:
        instance = Quoting(engine=FunctionEngine(lambda request: '{"text": "t"}'))
        instance.form = form
        with _Captured() as logs, pytest.raises(Exception) as raised:
            instance(Keyed(key=SecretStr(key)))
        return _everything_shown(instance, raised.value, "\n".join(logs.texts))

    forms = _shown_forms(secret)
    assume(not any(part in everything_shown("zq" * 8) for part in forms))
    leaked = {part for part in forms if part in everything_shown(secret)}
    assert not leaked, leaked


@contract(policy="enforce", remedy_retry_params={"tries": 1, "delay": 0})
class Echoed(Contract[Keyed, Short]):
    """The engine echoes the secret in an answer that fails its type: the error quotes
    the answer cut at 117 characters, inside the secret."""

    prompt = "p"

    def forward(self, value: Keyed) -> Short:
        return Short(text="f")


@settings(max_examples=40, deadline=None)
@given(padding=st.integers(80, 116), secret=st.text(alphabet="QVWXZ", min_size=30,
                                                   max_size=40))
def test_an_answer_cut_inside_a_secret_shows_no_start_of_it(padding: int,
                                                           secret: str) -> None:
    answer = json.dumps({"text": "y" * padding + secret})
    instance = Echoed(engine=FunctionEngine(lambda request: answer))
    with _Captured() as logs, pytest.raises(Exception) as raised:
        instance(Keyed(key=SecretStr(secret)))
    shown = _everything_shown(instance, raised.value, "\n".join(logs.texts))
    assert secret[:4] not in shown, shown


class Private(BaseModel):
    visible: int = 0
    _token: SecretStr = PrivateAttr(default=SecretStr("private-default-secret"))
    _other: object = PrivateAttr(default=None)


class PrivateHolder(LLMDataModel):
    inner: Private = Private()
    many: list[Private] = []


@settings(max_examples=60, deadline=None)
@given(secret=st.text(alphabet="KLMNP", min_size=8, max_size=16),
       where=st.sampled_from(["default", "set", "nested list"]))
def test_a_secret_in_a_private_attribute_is_found(secret: str, where: str) -> None:
    """A model's private attributes (``PrivateAttr``) hold values a predicate may quote
    though no dump shows them: the walk reads them too."""
    private = Private()
    if where == "set":
        private._other = [SecretStr(secret)]
    expected = secret if where == "set" else "private-default-secret"
    holder = PrivateHolder(many=[private]) if where == "nested list" else private
    assert expected in secret_values(holder)
