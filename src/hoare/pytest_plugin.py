"""hoare's pytest plugin (entry point ``pytest11``): contract tests offline by default.

* ``pytest --hoare-verify``: ``hoare verify`` on the ``[tool.hoare]`` targets (or
  ``--hoare-verify-target``, repeatable), one test item per contract and pipeline:
  it fails when a check fails (with ``--hoare-strict`` also when one is unknown) and
  says which check and why; an import error is a failing item of its own.
* ``hoare_engine``: a scripted offline engine. ``hoare_engine.push(answer, ...)``
  queues answers (strings, or dicts, lists, pydantic models as JSON); ``.requests``
  holds what the contract asked; an exhausted script fails the test clearly.
* ``@pytest.mark.hoare_live``: a test that needs a real engine; skipped unless
  ``--hoare-live`` is given, so a project's contract tests never send traffic by
  accident.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from hoare.engines.testing import ScriptedEngine
from hoare.errors import HoareError

__all__ = ["ScriptedEngine"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hoare", "hoare contracts")
    group.addoption("--hoare-verify", action="store_true",
                    help="run `hoare verify` on the [tool.hoare] targets as test items")
    group.addoption("--hoare-verify-target", action="append", default=[], metavar="TARGET",
                    help="a target for --hoare-verify (repeatable; default: [tool.hoare] "
                         "targets)")
    group.addoption("--hoare-strict", action="store_true",
                    help="with --hoare-verify, an unknown check fails its item too")
    group.addoption("--hoare-live", action="store_true",
                    help="run the tests marked hoare_live (they use real engines)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "hoare_live: needs a real engine; runs only with "
                                       "--hoare-live")


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    if not config.getoption("--hoare-live"):
        skip = pytest.mark.skip(reason="uses a real engine: run with --hoare-live")
        for item in items:
            if item.get_closest_marker("hoare_live") is not None:
                item.add_marker(skip)
    if config.getoption("--hoare-verify"):
        items.extend(_verify_items(session, config))


def _verify_items(session: pytest.Session, config: pytest.Config) -> list[pytest.Item]:
    from hoare.verifier.project import VerifyError, run_verify

    targets = list(config.getoption("--hoare-verify-target"))
    try:
        outcome = run_verify(targets, format="json", strict=False)
    except VerifyError as error:
        return [HoareVerifyItem.from_parent(session, name="hoare-verify", problem=str(error))]
    report = outcome.report
    strict = bool(config.getoption("--hoare-strict"))
    items: list[pytest.Item] = []
    for group in (report.contracts, report.pipelines):
        for contract in group:
            failing = [c for c in contract.checks if c.ignored is None and
                       (c.status == "fail" or (strict and c.status == "unknown"))]
            problem = "\n".join(
                f"{c.status.upper()} {c.subject}: {c.message}" +
                (f"\n    conflict: {' ∧ '.join(c.constraints)}" if c.constraints else "") +
                (f"\n    counterexample: {json.dumps(c.counterexample, default=str)}"
                 if c.counterexample is not None and c.status != "pass" else "") +
                (f"\n    at: {c.file}:{c.line}" if c.file else "")
                for c in failing) or None
            items.append(HoareVerifyItem.from_parent(
                session, name=f"hoare-verify[{contract.name}]", problem=problem))
    for problem_importing in report.errors:
        items.append(HoareVerifyItem.from_parent(
            session, name=f"hoare-verify[import {problem_importing.target}]",
            problem=str(problem_importing)))
    if not items:
        items.append(HoareVerifyItem.from_parent(
            session, name="hoare-verify", problem="no @contract class or Pipeline found in "
                                                  f"{targets or '[tool.hoare] targets'}"))
    return items


class HoareVerifyFailure(HoareError):
    """A contract's checks failed under ``--hoare-verify``."""


class HoareVerifyItem(pytest.Item):
    """One contract or pipeline of ``hoare verify``: passes when no check fails."""

    def __init__(self, *, problem: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.problem = problem

    def runtest(self) -> None:
        if self.problem is not None:
            raise HoareVerifyFailure(self.problem)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        if isinstance(excinfo.value, HoareVerifyFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int | None, str]:
        return "hoare verify", None, self.name


@pytest.fixture
def hoare_engine() -> Iterator[ScriptedEngine]:
    """A scripted offline engine for one test (see ``ScriptedEngine``). A request it
    had no answer for ends that call's stage (a fatal engine error) and fails the test."""
    engine = ScriptedEngine(name="hoare_engine")
    yield engine
    if engine.exhausted:
        pytest.fail(f"hoare_engine: {engine.exhausted} request(s) found no scripted answer "
                    f"({len(engine.requests)} request(s) in all); push more answers",
                    pytrace=False)
