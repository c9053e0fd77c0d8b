"""The per-class runtime (``Runtime``): what a contract class needs at call time,
prepared once at decoration: the input, output and result checks, the decoding schema,
the pre-flight checker, the system prompts, and the call plan (which inputs may skip
the per-call secret walk, ``call_secrets``). ``runtime_of`` finds it on a class or an
instance."""

from __future__ import annotations

import inspect
import logging
import threading
import types
import typing
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import annotated_types
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined, SchemaValidator

from hoare.contracts import configuration
from hoare.contracts.logs import NOT_VALID, REPEATED, log_violation
from hoare.contracts.prompts import DEFAULT_FEEDBACK_CHARS, LRUCache, system_text
from hoare.declaration.description import ContractDescription
from hoare.declaration.models import (
    TypeSpec,
    format_validation_error,
    read_answer,
    redact,
    safe_repr,
    secret_values,
)
from hoare.declaration.revalidation import clean_locations
from hoare.engines.base import Options, Request, Response
from hoare.errors import ContractDefinitionError, InvalidValue, StoppedEarly, safe_text
from hoare.forking import free_in_child
from hoare.kernel import Outcome, Phase, Policy, SuccessTracker, Violation, ViolationKind

if TYPE_CHECKING:  # imported where first used (the pre-flight loads z3)
    from hoare.contracts.early_stop import Plan
    from hoare.verifier.runtime import Preflight

logger = logging.getLogger("hoare")


class Runtime:
    """What a contract class needs at call time, prepared once per class."""

    def __init__(self, description: ContractDescription,
                 handler: Callable[[Outcome], object] | None, options: Options,
                 feedback_chars: int = DEFAULT_FEEDBACK_CHARS,
                 resend: Literal["vary", "stop"] = "vary", stream: bool = False) -> None:
        self.description = description
        self.stream = stream
        self._stop_plan: Plan | None = None  # built at the first stream
        self._stop_planned = False
        self._complete_answers = [0, 0]  # complete streamed answers, their output tokens
        self.config = description.config
        self.handler = handler
        self.options = options
        self.feedback_chars = feedback_chars
        self.resend = resend
        self.tracker = SuccessTracker()
        self.log_violation = partial(log_violation, contract=description.name)
        # keyed by the prompt, which a property may change per call: bounded (LRU)
        self.systems: LRUCache[tuple[str, str], str] = LRUCache(configuration.cache_size())
        self.sources = {(Phase(p.phase), p.id): p for p in (*description.pre, *description.post)}
        self._preflight: Preflight | None = None
        self._decoding: dict[str, Any] | None = None
        self._decoding_lock = threading.Lock()
        free_in_child(self, self._decoding_lock)  # held while a schema is compiled
        self._enforced: dict[str, frozenset[str]] = {}
        self._preflight_ready = False
        self.preflight_choice: bool | str | None = None  # the decorator's; None: configured
        self._definition_hash: str | None = None
        # the call plan (decided once per class): the flat input models whose instances
        # may skip the secret walk (``call_secrets``), whether an act phase runs
        self.flat_input = _flat_model(description.input)
        self.flat_used_input = _flat_model(description.used_input)
        self.has_act = description.act is not None
        self.used_input = description.used_input  # what requests quote, per class
        self.output_name = description.output.name
        # the output model whose instances pass the result check by isinstance alone
        # (not a wrapped native type, which is_instance checks strictly)
        self.output_model = None if description.output.wrapped else description.output.model
        # the compiled validator an answer's bare JSON object goes to, as the output
        # model's own model_validate_json would send it (None: go through the model)
        self.output_json = _json_validator(self.output_model)
        # an input of exactly the declared model goes straight to the validator that
        # TypeSpec.validate would hand it to (found at the first call)
        self.input_model = None if description.input.wrapped else description.input.model
        self.input_validator: SchemaValidator | None = None
        self.input_ready = False

    def definition_hash(self) -> str:
        """A hash of the contract's definition (its class's source, else its shape), so
        that stored statistics of an edited contract are told apart."""
        found = self._definition_hash
        if found is None:
            import hashlib

            try:
                text = inspect.getsource(self.description.cls)
            except (OSError, TypeError):
                d = self.description
                text = repr((d.name, d.input.name, d.output.name,
                             [(p.id, p.message) for p in (*d.pre, *d.post)]))
            found = self._definition_hash = hashlib.sha256(text.encode()).hexdigest()[:16]
        return found

    # -- hooks that do not depend on the instance -------------------------------------
    def check_input(self, raw: object) -> object:
        spec = self.description.input
        if isinstance(raw, Response):  # a pre-remedy answer: JSON text
            return _validate_answer(spec, raw)
        try:
            if type(raw) is self.input_model:  # the common input: exactly the declared model
                if not self.input_ready:  # at the first call, as validate builds it lazily
                    self.input_validator = spec.instance_validator()
                    self.input_ready = True
                validator = self.input_validator
                if validator is not None:  # what spec.validate does with it, inline
                    try:
                        return validator.validate_python(raw)
                    except ValidationError as error:
                        raise clean_locations(error) from None
            return spec.validate(raw)
        except ValidationError as error:
            raise InvalidValue(f"{NOT_VALID}{spec.name}: "
                               f"{format_validation_error(error)}. Pass the contract input as "
                               f"type {spec.name} (or a value pydantic validates as it)") from None

    def check_output(self, raw: object, used: object) -> object:
        if not isinstance(raw, Response):
            raise InvalidValue(f"the engine returned {type(raw).__name__}, not a Response")
        if raw.stopped_early is not None:
            raise StoppedEarly(f"the answer was stopped early: {raw.stopped_early}")
        if self.stream and isinstance(raw.text, str) and self.stop_plan() is not None:
            from hoare.contracts.early_stop import repeated_top_level_key

            repeated = repeated_top_level_key(raw.text)
            if repeated is not None:  # early stop judged its first value (§8.10)
                raise InvalidValue(f"the answer gives the key {repeated!r} twice: give each "
                                   "field once")
        texts = raw.texts
        text = texts[0] if texts else ""  # Response.text, inline: this runs on every answer
        if type(text) is str and text[:1] == "{" and text[-1:] == "}":
            # the common answer, one bare JSON object: read_answer's first candidate is
            # this very text, so validating it first gives what read_answer would (on an
            # error, read_answer searches the text for another candidate, as always)
            try:
                validator = self.output_json
                if validator is not None:
                    return validator.validate_json(text)
                return self.description.output.validate_json(text)
            except ValidationError as error:  # spec.validate_json's error for this text
                return _validate_answer(self.description.output, raw, {text: error})
        return _validate_answer(self.description.output, raw)

    def stop_plan(self) -> Plan | None:
        """What early stopping checks for this contract (None: it cannot be sound)."""
        if not self._stop_planned:
            from hoare.contracts.early_stop import plan_for

            self._stop_plan, self._stop_planned = plan_for(self.description), True
        return self._stop_plan

    def tokens_saved(self, response: Response, request: Request) -> int:
        """An estimate of the output tokens a stopped stream did not read: the mean of
        this contract's complete streamed answers (else ``max_tokens``) minus those read."""
        with self._decoding_lock:
            count, tokens = self._complete_answers
            if response.stopped_early is None:
                self._complete_answers = [count + 1, tokens + response.usage.output_tokens]
                return 0
        typical = tokens / count if count else request.options.max_tokens
        return max(0, round((typical or 0) - response.usage.output_tokens))

    def check_result(self, value: object) -> None:
        model = self.output_model
        if model is not None and isinstance(value, model):  # is_instance's answer, inline
            return
        spec = self.description.output
        if not spec.is_instance(value):
            raise TypeError(f"{self.description.cls.__qualname__}.forward must return "
                            f"{spec.name}, got {type(value).__name__}: "
                            f"{safe_repr(value)[:200]}")

    def decoding_schema(self) -> dict[str, Any] | None:
        """The schema generation requests carry (``@contract(decoding=...)``), compiled
        once: with ``"schema"``, the post-conditions that JSON Schema can say and z3
        proves implied are folded in; a contract whose posts are ignored, or that cannot
        be compiled (said once, at WARNING), gets its type's schema."""
        found = self._decoding
        if found is not None:  # compiled, or the type's: decided once per class
            return found
        mode = self.description.decoding
        if mode == "none":
            return None
        if mode == "types" or self.config.policy is Policy.IGNORE \
                or not self.description.post:
            found = self._decoding = self.description.output.schema
            return found
        with self._decoding_lock:
            found = self._decoding
            if found is None:
                found = self._decoding = self._compile_decoding()
        return found

    def enforced(self, dialect: str) -> frozenset[str]:
        """The post-conditions the schema sent to ``dialect``'s decoder is proved to
        enforce (``hoare schema``), compiled once per dialect; none when it cannot be."""
        found = self._enforced.get(dialect)
        if found is None:
            with self._decoding_lock:
                found = self._enforced.get(dialect)
                if found is None:
                    try:
                        from hoare.verifier.runtime import compile_contract

                        found = frozenset(compile_contract(self.description, dialect).enforced)
                    except Exception:
                        found = frozenset()
                    self._enforced[dialect] = found
        return found

    def provider_faults(self, outcome: Outcome) -> int:
        """Failed post-conditions that the schema the provider decoded with enforces
        (a provider that did not honour its schema, not a model failure)."""
        if self.description.decoding != "schema":
            return 0
        count = 0
        for attempt in outcome.attempts:
            raw = attempt.raw  # an engine's answer: read only when it is a Response
            dialect = raw.decoding if isinstance(raw, Response) else None
            if attempt.phase is not Phase.POST or dialect is None:
                continue
            failed = [v.predicate for v in attempt.violations
                      if v.kind is ViolationKind.PREDICATE]
            if failed:
                enforced = self.enforced(dialect)
                faults = [name for name in failed if name in enforced]
                if faults:
                    REPEATED.warn(logger, self.description.name, "provider fault",
                                  "hoare: %s: the provider's answer fails %s, which the "
                                  "schema it decoded with (%s) enforces: a provider fault",
                                  self.description.name, ", ".join(map(str, faults)),
                                  dialect)
                count += len(faults)
        return count

    def _compile_decoding(self) -> dict[str, Any]:
        try:
            from hoare.verifier.runtime import compile_contract, has_candidates

            if not has_candidates(self.description):
                return self.description.output.schema
            return compile_contract(self.description, "json_schema").schema
        except Exception as error:  # never let the optimisation break a call
            logger.warning("hoare: %s: decoding='schema' could not fold the post-conditions "
                           "(%s); sending the output type's schema", self.description.name,
                           safe_text(error, 300))
            return self.description.output.schema

    def preflight_checker(self) -> Preflight | None:
        """The z3 pre-flight for this class, built on first use (None: not available)."""
        if not self._preflight_ready:
            checker = None
            if self.description.preflight and self.config.policy is not Policy.IGNORE:
                try:
                    from hoare.verifier.runtime import Preflight
                    checker = Preflight.for_description(self.description)
                except Exception as error:  # never let the optimisation break a call
                    logger.warning("hoare: pre-flight disabled for %s: %s",
                                   self.description.name, safe_text(error, 500))
            self._preflight, self._preflight_ready = checker, True
        return self._preflight

    def system(self, prompt: str, task: str) -> str:
        target = self.description.input if task == "repair_input" else self.description.output
        return self.systems.get_or_build((prompt, task), lambda: system_text(
            prompt, target, task, source=self.description.input))

    def shown(self, violation: Violation, secrets: frozenset[str]) -> Violation:
        """The violation as the model may see it: with ``feedback="messages"`` a raised
        predicate's text only when its author wrote it (a ``Pre``/``Post`` message or a
        literal ``raise`` text), else the predicate's message; secrets redacted."""
        message = violation.message
        if (self.description.feedback == "messages" and violation.error_type is not None
                and violation.kind is ViolationKind.PREDICATE):
            source = self.sources.get((violation.phase, violation.predicate or ""))
            if source is None:
                message = "a check failed"
            elif message not in source.author_texts:
                message = source.message
        if secrets:
            message = redact(message, secrets)
        return violation if message == violation.message else replace(violation,
                                                                       message=message)


_NO_SECRETS: frozenset[str] = frozenset()
_ATOMIC = frozenset({str, int, float, bool, type(None), bytes})
"""Exact types whose values are never, nor hold, a ``SecretStr``/``SecretBytes``, a
model or a container: what ``secret_values`` has nothing to look into."""


def _atomic_annotation(annotation: object) -> bool:
    """Is every value pydantic validates for ``annotation`` of an exact atomic type (str,
    int, float, bool, None, bytes), so that a field typed so can never hold a secret?
    Only the exact atomic types, ``Literal`` of atomic values and unions/``Annotated``
    of those: a model (its instance may be a subclass adding a ``SecretStr``), ``Any``,
    ``object``, any other class or a container is not."""
    if annotation is None or annotation in _ATOMIC:
        return True
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return all(type(arg) in _ATOMIC for arg in typing.get_args(annotation))
    if origin is typing.Annotated:
        return _atomic_annotation(typing.get_args(annotation)[0])
    if origin is typing.Union or origin is types.UnionType:
        return all(_atomic_annotation(arg) for arg in typing.get_args(annotation))
    return False


def _flat_model(spec: TypeSpec) -> type | None:
    """The input model whose instances may skip the per-call secret walk, decided once
    per class: every field typed atomic (``_atomic_annotation``), no validator that
    could return another type, no default or factory that is not atomic, no
    ``model_post_init``. None when a field could hold a secret by its type. The types
    alone are not trusted at run time (pydantic passes an instance of the model as is,
    ``model_construct`` or mutated): ``call_secrets`` still checks the values' types."""
    try:
        model = spec.model
        if spec.wrapped or not isinstance(model, type) or not issubclass(model, BaseModel):
            return None
        decorators = model.__pydantic_decorators__
        if model.model_config.get("extra") == "allow":
            return None  # extra fields hold values of any type
        if decorators.validators or decorators.field_validators \
                or decorators.root_validators or decorators.model_validators \
                or model.__pydantic_post_init__ is not None:
            return None
        for field in model.model_fields.values():
            if not _atomic_annotation(field.annotation) or field.default_factory is not None \
                    or (field.default is not PydanticUndefined
                        and type(field.default) not in _ATOMIC) \
                    or any(not isinstance(item, (annotated_types.BaseMetadata, FieldInfo))
                           for item in field.metadata):
                return None
        return model
    except Exception:  # an unusual model: walk its values on every call
        return None


def call_secrets(value: object, flat: type | None) -> frozenset[str]:
    """The secrets in a call's input (``secret_values``), without the walk when the
    value is an instance of exactly the class's flat input model and every value it
    holds is of an exact atomic type (what the walk would skip one by one)."""
    if flat is not None and type(value) is flat and isinstance(value, BaseModel) \
            and not value.__pydantic_extra__ \
            and _ATOMIC.issuperset(map(type, value.__dict__.values())):
        return _NO_SECRETS
    return secret_values(value)


def _validate_answer(spec: TypeSpec, response: Response,
                     refused: dict[str, ValidationError] | None = None) -> object:
    """Parse an engine answer (``read_answer``): the first JSON value in it that
    validates; ``finish_reason=length`` is said when the answer was cut off. ``refused``:
    texts already refused, with their errors (not validated again)."""
    text = response.text
    if not isinstance(text, str):
        raise InvalidValue(f"the answer was {type(text).__name__}, not text: reply with a "
                           "JSON value")
    return read_answer(spec, text, response.finish_reasons[0] if response.finish_reasons
                       else None, refused)


def _json_validator(model: type[BaseModel] | None) -> SchemaValidator | None:
    """``model``'s compiled validator when its ``model_validate_json`` is pydantic's own
    (which only hands the text to it): None for a model that overrides it, or whose
    validator is not built yet."""
    if model is None or not model.__pydantic_complete__:
        return None
    own = getattr(model.model_validate_json, "__func__", None)
    if own is not getattr(BaseModel.model_validate_json, "__func__", None):
        return None
    validator = model.__dict__.get("__pydantic_validator__")
    return validator if isinstance(validator, SchemaValidator) else None


def runtime_of(target: object) -> Runtime:
    """The runtime ``@contract`` gave ``target`` (a contract class or instance)."""
    runtime: Runtime | None = getattr(target, "__hoare_runtime__", None)
    if runtime is None:
        name = target.__qualname__ if isinstance(target, type) else type(target).__qualname__
        raise ContractDefinitionError(f"{name} is not decorated with @contract")
    return runtime
