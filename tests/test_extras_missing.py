"""Each optional extra, missing, is a clear error naming the extra to install, and the
core library works without it (``hoare[plots]`` is covered in test_stats_plot.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from library_under_test import LIBRARY

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str, *blocked: str) -> subprocess.CompletedProcess[str]:
    prelude = "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in blocked)
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": LIBRARY})


def test_otel_missing() -> None:
    done = _run("""
        from hoare import telemetry
        try:
            telemetry.instrument()
        except ImportError as error:
            print(error)
    """, "opentelemetry")
    assert done.returncode == 0, done.stderr
    assert "pip install 'hoare[otel]'" in done.stdout


def test_sql_missing_warns_and_the_calls_go_on(tmp_path: Path) -> None:
    done = _run("""
        import logging
        logging.basicConfig(level=logging.WARNING)
        import hoare
        from hoare import Contract, LLMDataModel, contract
        from hoare.engines import FunctionEngine

        class Q(LLMDataModel):
            text: str

        class A(LLMDataModel):
            n: int

        @contract()
        class One(Contract[Q, A]):
            prompt = "One."
            def forward(self, q: Q) -> A:
                return self.contract_result

        hoare.configure(stats="postgresql+psycopg://u@127.0.0.1:1/db")
        print(One(engine=FunctionEngine(lambda r: '{"n": 1}'))(Q(text="x")).n)
        hoare.flush_stats()
    """, "sqlalchemy")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"
    assert "pip install 'hoare[sql]'" in done.stderr and "calls are unaffected" in done.stderr
    stats = subprocess.run([sys.executable, "-c", "import sys; sys.modules['sqlalchemy'] = None"
                            "\nfrom hoare.cli import main; sys.exit(main(sys.argv[1:]))",
                            "stats", "--db", "postgresql://u@127.0.0.1:1/db"],
                           capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": LIBRARY})
    assert stats.returncode == 2 and "pip install 'hoare[sql]'" in stats.stderr


def test_the_extras_are_declared() -> None:
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert {"plots", "otel", "sql", "postgres", "queries"} <= set(extras)
    assert extras["queries"] == ["jinja2>=3.1", "pyyaml>=6.0"]
    assert extras["postgres"] == extras["sql"]
