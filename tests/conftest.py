"""Test-wide safety: tests run offline and talk to 127.0.0.1 only."""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# `make test` (and CI) draws the same hypothesis examples on every run, so a run under
# load is the same run; HOARE_NIGHTLY=1 draws fresh examples (and tests read it to draw
# more of them) to keep searching. No clock decides a result: no per-example deadline,
# no "too slow" health check (the machines are shared and noisy).
settings.register_profile("ci", derandomize=True, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("nightly", derandomize=False, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("nightly" if os.environ.get("HOARE_NIGHTLY") else "ci")

# `hoare verify` keeps a verdict cache; tests never read or write the checkout's own.
if "HOARE_CACHE_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile

    os.environ["HOARE_CACHE_DIR"] = tempfile.mkdtemp(prefix="hoare-test-cache-")
    atexit.register(shutil.rmtree, os.environ["HOARE_CACHE_DIR"], ignore_errors=True)

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _loopback_only(address: object) -> None:
    if isinstance(address, tuple) and address:
        host = str(address[0])
        try:
            if ipaddress.ip_address(host).is_loopback:
                return
        except ValueError:
            if host == "localhost":
                return
        raise RuntimeError(f"test tried to connect to {address!r}: tests may only use 127.0.0.1")


def _guarded_connect(self: socket.socket, address: object) -> None:
    _loopback_only(address)
    _real_connect(self, address)  # type: ignore[arg-type]  # a test's address, as given


def _guarded_connect_ex(self: socket.socket, address: object) -> int:
    _loopback_only(address)
    return _real_connect_ex(self, address)  # type: ignore[arg-type]  # a test's address, as given


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No real API credentials or endpoints leak into a test; only loopback sockets."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "HOARE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", _guarded_connect_ex)


# Files whose tests run alone, after the parallel phase (tests/against_wheel.py): they
# start servers or process pools, or drive many threads, and would compete for the
# two cores with the other worker.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")

SERIAL_FILES = frozenset({
    "test_faults_threads.py",
    "test_kernel_concurrency.py",
    "test_mypy_gate.py",
    "test_packaging.py",
    "test_stats_postgres.py",
    "test_verifier_bench.py",
    "test_verify_workers.py",
})


# Files whose tests take the longest (a minute or more of one core between them: z3
# under the sanitizer, hypothesis over the pre-flight, child processes): they run first,
# so the parallel phase does not end with one core busy on them and the other idle
# (with ``--dist worksteal`` the shorter tests fill in around them).
LONGEST_FIRST = (
    "test_verifier_fuzz_regressions.py",
    "test_verifier_z3_context.py",
    "test_hostile_api.py",
    "test_verify_isolation.py",
    "test_linear_readers.py",
    "test_verify_cache.py",
    "test_stats_compare.py",
    "test_decoding_capabilities.py",
    "test_early_stop.py",
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the serial files' tests before ``-m`` selects by marker, and put the longest
    files first; refuse a test id that holds a memory address (``<object object at
    0x...>`` from ``ids=repr``): pytest-xdist collects in every worker and stops when the
    ids differ, so an id must be the same in every process (tests/against_wheel.py also
    fixes PYTHONHASHSEED, for set order)."""
    unstable = [item.nodeid for item in items if _ADDRESS.search(item.nodeid)]
    if unstable:
        raise pytest.UsageError("test ids that differ from process to process (a memory "
                                f"address; give stable ids): {unstable[:5]}")
    for item in items:
        if item.path.name in SERIAL_FILES:
            item.add_marker(pytest.mark.serial)
    # the longest files first (LONGEST_FIRST), the same order in every process; the
    # order within a file and of the other files is unchanged (a stable sort)
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def pytest_sessionstart(session: pytest.Session) -> None:
    """Stop a run that would test another `hoare` than it claims: src/, or the installed
    wheel under tests/against_wheel.py (tests/library_under_test.py)."""
    from library_under_test import check_origin

    try:
        where = check_origin()
    except RuntimeError as error:
        raise pytest.UsageError(str(error)) from None
    if os.environ.get("HOARE_TEST_WHEEL"):
        print(where)


@pytest.fixture
def spans() -> Iterator[Any]:
    """An OpenTelemetry SDK in-memory exporter that hoare's spans go to while the test
    runs (``hoare.telemetry.instrument``); skipped without the [otel] extra."""
    sdk = pytest.importorskip("opentelemetry.sdk.trace", reason="the [otel] extra is not "
                              "installed")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from hoare import telemetry

    exporter = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.instrument(tracer_provider=provider)
    try:
        yield exporter
    finally:
        telemetry.uninstrument()
        provider.shutdown()
