"""``Contract``, the base class of contracted components: its configuration (engine,
options, budget), ``acall``, copies that leave an instance's call state behind, and the
results of the latest call in this thread or task (``contract_result``,
``contract_perf_stats``, …)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from hoare.contracts import configuration
from hoare.contracts.binding import Bound
from hoare.contracts.current import CURRENT_CALL
from hoare.contracts.latest import Latest
from hoare.contracts.lifecycle import begin, finish
from hoare.contracts.runtime import Runtime, runtime_of
from hoare.declaration.description import ContractDescription
from hoare.declaration.models import safe_repr
from hoare.engines.base import Engine, Options
from hoare.engines.budget import Budget, Spend
from hoare.kernel import Outcome, run_async
from hoare.stats.perf import PerfStats

__all__ = ["Contract"]

In = TypeVar("In")  # a contract's input type, for static type checkers only
Out = TypeVar("Out")  # its output type


class Contract(Generic[In, Out]):
    """Base class of contracted components. Subclass it, decorate with ``@contract``,
    and define ``prompt``, ``forward`` and optionally ``pre``, ``act``, ``post``.

    ``Contract[MyInput, MyOutput]`` tells a type checker the call's input and output
    types (``contract_result`` is then a ``MyOutput`` and ``forward`` may return it
    without a cast); plain ``Contract`` works as well, untyped. The types the
    contract validates always come from the annotations of ``forward``.

    ``engine`` (else the configured default) answers generation requests;
    keyword options (``model``, ``temperature``, ``max_tokens``, ``seed``,
    ``timeout``) are passed to it with every request.
    """

    __hoare__: ContractDescription
    __hoare_runtime__: Runtime

    def __init__(self, *args: Any, engine: Engine | None = None,
                 budget: Budget | Spend | None = None, **options: Any) -> None:
        if args:
            raise TypeError(f"{type(self).__qualname__}: unexpected positional arguments "
                            f"{args!r} for Contract.__init__ (it takes engine= and options)")
        try:
            self.__dict__["_hoare_options_value"] = Options(**options) if options else None
        except TypeError:
            valid = ", ".join(Options.__slots__)
            raise TypeError(f"{type(self).__qualname__}: unknown option(s) "
                            f"{sorted(options)}; valid options are {valid}") from None
        if engine is not None and not isinstance(engine, Engine):
            raise TypeError(f"engine must have complete() and acomplete(), got "
                            f"{safe_repr(engine)[:200]}")
        self.__dict__["_hoare_engine_value"] = engine
        if budget is not None and not isinstance(budget, (Budget, Spend)):
            raise TypeError(f"budget must be a hoare.engines.Budget (a cap per call) or a "
                            f"Spend meter (shared), got {safe_repr(budget)[:200]}")
        self.__dict__["_hoare_budget_value"] = budget

    # -- copies --------------------------------------------------------------------------
    def __getstate__(self) -> object:
        """What ``copy.copy``, ``copy.deepcopy`` and ``pickle`` take: the user's
        attributes and the configuration (engine, options, budget), not this instance's
        call state (latest calls, predicates bound to it, timings): a copy starts those
        afresh, so its predicates read the copy's own attributes."""
        state = super().__getstate__()
        if isinstance(state, tuple):  # (__dict__, slot values) of a subclass with slots
            return (_without_call_state(state[0]), *state[1:])
        return _without_call_state(state)

    def __deepcopy__(self, memo: dict[int, Any]) -> Contract[In, Out]:
        """A deep copy of the user's attributes that shares the engine and the budget: a
        client (its connection pool, its locks) and a budget meter are resources."""
        for name in ("_hoare_engine_value", "_hoare_budget_value"):
            shared = self.__dict__.get(name)
            if shared is not None:
                memo.setdefault(id(shared), shared)
        reduced = self.__reduce_ex__(4)
        if isinstance(reduced, str):  # a subclass's own __reduce_ex__ naming a global
            return self
        clone: Contract[In, Out] = reduced[0](*copy.deepcopy(reduced[1], memo))
        memo[id(self)] = clone
        state = reduced[2] if len(reduced) > 2 else None
        if state is not None:
            state = copy.deepcopy(state, memo)
            setstate = getattr(clone, "__setstate__", None)
            if setstate is not None:
                setstate(state)
            else:
                slots: Mapping[str, Any] | None = None
                if isinstance(state, tuple) and len(state) == 2:
                    state, slots = state
                if state:
                    clone.__dict__.update(state)
                for name, value in (slots or {}).items():
                    setattr(clone, name, value)
        return clone

    # -- configuration -----------------------------------------------------------------
    def _hoare_engine(self) -> Engine:
        engine: Engine | None = self.__dict__.get("_hoare_engine_value")
        return engine if engine is not None else configuration.default_engine()

    def _hoare_options(self) -> Options:
        return self.__dict__.get("_hoare_options_value") or self.__hoare_runtime__.options

    def _hoare_latest(self) -> Latest:
        latest: Latest | None = self.__dict__.get("_hoare_latest_value")
        if latest is None:
            # another thread's may win: the loser gives its variable back when collected
            latest = self.__dict__.setdefault("_hoare_latest_value", Latest())
        return latest

    def _hoare_bound(self) -> Bound:
        bound: Bound | None = self.__dict__.get("_hoare_bound_value")
        if bound is None:
            bound = self.__dict__.setdefault("_hoare_bound_value",
                                             Bound(self, self.__hoare_runtime__))
        return bound

    # -- calling -------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Out:
        result: Out = self.forward(*args, **kwargs)  # @contract's forward checks its type
        return result

    def forward(self, *args: Any, **kwargs: Any) -> Any:  # replaced by @contract
        raise NotImplementedError(f"{type(self).__qualname__} must define forward()")

    async def acall(self, *args: Any, **kwargs: Any) -> Out:
        """The contracted call with asynchronous engine I/O and backoff sleeps."""
        call, run = begin(self, args, kwargs)
        token = CURRENT_CALL.set(call)
        try:
            outcome, value = await run_async(run, call.aperform)
        except BaseException as error:
            finish(call, None, error)
            raise
        finally:
            CURRENT_CALL.reset(token)
        finish(call, outcome, None)
        result: Out = value  # the kernel's result check passed: of the output type
        return result

    # -- per-call results (this thread / task's latest call) ----------------------------
    @property
    def contract_outcome(self) -> Outcome | None:
        """The kernel ``Outcome`` of the latest call in this thread or task."""
        return _latest_outcome(self)

    @property
    def contract_successful(self) -> bool:
        outcome = _latest_outcome(self)  # forward reads it on every call
        return bool(outcome and outcome.success)

    @property
    def contract_result(self) -> Out:
        """The validated output of the latest call in this thread or task. ``None`` when
        that call failed (check ``contract_successful`` first, as ``forward`` does):
        typed as the output so that ``forward`` can return it without a cast."""
        outcome = _latest_outcome(self)
        return None if outcome is None else outcome.result  # type: ignore[return-value]  # None: failed

    @property
    def contract_exception(self) -> BaseException | None:
        outcome = self.contract_outcome
        return None if outcome is None else outcome.exception

    def contract_perf_stats(self) -> dict[str, Any]:
        """SymbolicAI's aggregate over every call of this instance: for
        ``input_validation``, ``act_execution``, ``output_validation``,
        ``forward_execution``, ``overhead`` and ``contract_execution`` (the whole
        call, which the others add up to; ``total_execution`` is the same), the
        ``count``, ``total``, ``mean``, ``std``, ``min``, ``max`` (seconds) and
        ``percentage`` of the total time. Under
        ``contract_outcome``, the latest call in this thread or task: time per phase
        (ms), engine calls, remedies, backoff time, token usage summed over attempts,
        and what the call's budget meter spent (requests, tokens, cost), if any."""
        return {**self._hoare_perf().as_dict(), "contract_outcome": self._latest_figures()}

    def _hoare_perf(self) -> PerfStats:
        stats: PerfStats | None = self.__dict__.get("_hoare_perf_value")
        if stats is None:
            stats = self.__dict__.setdefault("_hoare_perf_value", PerfStats())
        return stats

    def _latest_figures(self) -> dict[str, Any]:
        call = self._hoare_latest().get()
        outcome = None if call is None else call.outcome
        if call is None or outcome is None:
            return {}
        phases = {phase: nanos / 1e6 for phase, nanos in outcome.timings_ns.items()}
        return {
            "success": outcome.success,
            "phases_ms": phases,
            "total_ms": sum(phases.values()),
            "generation_attempts": outcome.generation_attempts,
            "pre_remedies": outcome.pre_remedies,
            "post_remedies": outcome.post_remedies,
            "backoff_s": sum(outcome.delays),
            "usage": dict(outcome.usage),
            "spend": None if call.spend is None else call.spend.spent(),
        }

    @classmethod
    def contract_stats(cls) -> dict[str, Any]:
        """Success statistics of this contract class over every call so far (spec §7)."""
        return runtime_of(cls).tracker.snapshot().as_dict()


def _latest_outcome(instance: Contract[Any, Any]) -> Outcome | None:
    """The outcome of ``instance``'s latest call in this thread or task, as
    ``Latest.get`` finds it (inline: forward reads it on every call); None before the
    instance's first call (no ``Latest`` yet) or when that call has no outcome. Inside
    a call of ``instance`` (its forward, predicates, act), that call is the latest."""
    current = CURRENT_CALL.get(None)
    if current is not None and current.instance is instance:
        return current.outcome  # begin made it the latest before setting CURRENT_CALL
    latest: Latest | None = instance.__dict__.get("_hoare_latest_value")
    if latest is None:
        return None
    slot = latest.var.get()
    call = None if slot is None else latest.calls.get(slot.key)
    return None if call is None else call.outcome


_CALL_STATE = frozenset({"_hoare_latest_value", "_hoare_bound_value", "_hoare_perf_value"})
"""An instance's own call state (``Contract.__getstate__``): never copied."""


def _without_call_state(state: object) -> object:
    if isinstance(state, dict) and not _CALL_STATE.isdisjoint(state):
        return {name: value for name, value in state.items() if name not in _CALL_STATE}
    return state
