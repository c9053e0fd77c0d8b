"""The ``hoare`` command against hostile files and arguments: every case ends with the
documented exit status and one line naming what was wrong, never a traceback, and
nothing is lost.

The classes, each failing before:

* a ``pyproject.toml`` whose bytes are not UTF-8, or whose ``tool`` is not a table
  (a traceback, status 1);
* a number beyond what its consumer takes: ``timeout_ms``/``rlimit`` above 2**32 - 1
  (z3 takes them as unsigned 32-bit integers: 2**32 + 1 ms became a 1 ms limit),
  ``import_timeout`` above ``threading.TIMEOUT_MAX`` (an "internal error" per file);
* an empty argument taken as the default (``hoare verify ""`` verified the current
  directory, ``-o ""`` printed to stdout);
* ``-j N`` starting N worker processes for fewer files;
* the report written over what ``-o`` names by a rename: a symbolic link replaced by a
  file, a FIFO or a device (``/dev/full``) replaced by a regular file;
* standard output that cannot be written (a traceback, status 1: "a check failed").
"""

from __future__ import annotations

import math
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from library_under_test import LIBRARY

from hoare.cli.parser import main
from hoare.verifier.project.config import SOLVER_LIMIT_MAX, ConfigError, load
from hoare.verifier.report import write_report

CONTRACT = '''
from hoare import Contract, Field, LLMDataModel, Post, contract
class In(LLMDataModel):
    n: int = Field(ge=0, le=10)
class Out(LLMDataModel):
    m: int = Field(ge=0, le=10)
@contract()
class Task(Contract):
    prompt = "x"
    post_conditions = (Post(lambda o: o.m > 2, "big"),)
    def forward(self, input: In) -> Out:
        return self.contract_result
'''


def _hoare(*argv: str, cwd: Path, env_extra: dict[str, str] | None = None,
           stdout: IO[str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m hoare`` in ``cwd``; ``stdout``: where its output goes (default: kept)."""
    env = {**os.environ, "PYTHONPATH": LIBRARY, "HOARE_CACHE_DIR": str(cwd / ".cache"),
           "NO_COLOR": "1", **(env_extra or {})}
    env.pop("HOARE_STATS", None)
    return subprocess.run([sys.executable, "-m", "hoare", *argv], cwd=cwd, env=env,
                          stdout=subprocess.PIPE if stdout is None else stdout,
                          stderr=subprocess.PIPE, text=True, timeout=300)


# -- [tool.hoare]: every malformed table is a ConfigError naming the file -------------

_TOML_VALUES = st.one_of(
    st.integers(-2**63, 2**63 - 1).map(str), st.booleans().map(lambda b: str(b).lower()),
    st.sampled_from(["nan", "inf", "-inf", "-0.0", "1e300", "0.5", '""', '"x"', "[]",
                     "[1, 2]", '["a"]', "{}", "{ a = 1 }", "1979-05-27", "'auto'"]))
_KEYS = ["targets", "strict", "timeout_ms", "timeout", "rlimit", "jobs", "exclude",
         "format", "cache", "cache_dir", "ignore", "overrides", "import_timeout",
         "no_such_key"]


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(_KEYS), value=_TOML_VALUES,
       junk=st.binary(min_size=1, max_size=4).filter(lambda b: not _utf8(b)),
       where=st.integers(0, 10**6), tool=st.sampled_from(["3", '"x"', "[1]", "true"]))
def test_a_malformed_table_is_a_config_error(tmp_path: Path, key: str, value: str,
                                              junk: bytes, where: int, tool: str) -> None:
    path = tmp_path / "pyproject.toml"
    text = f"[tool.hoare]\n{key} = {value}\n".encode()
    for body in (text, _insert(text, junk, where), f"tool = {tool}\n".encode()):
        path.write_bytes(body)
        try:
            config = load(path)
        except ConfigError as error:
            assert str(path) in str(error)
            continue
        # accepted: then within what its consumers take
        for limit in (config.timeout_ms, config.rlimit):
            assert limit is None or 0 < limit <= SOLVER_LIMIT_MAX
        assert config.import_timeout is None or \
            0 < config.import_timeout <= threading.TIMEOUT_MAX


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _insert(text: bytes, junk: bytes, where: int) -> bytes:
    """``junk`` inside the line's comment: the file stays TOML but for its encoding."""
    line_end = text.index(b"\n", len(b"[tool.hoare]\n"))
    return text[:line_end] + b" # " + junk * (1 + where % 3) + text[line_end:]


@pytest.mark.parametrize("number", [SOLVER_LIMIT_MAX + 1, 2**32 + 1, 2**63 - 1])
@pytest.mark.parametrize("key", ["timeout_ms", "rlimit"])
def test_solver_limits_beyond_32_bits_are_refused(tmp_path: Path, key: str,
                                                  number: int) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(f"[tool.hoare]\n{key} = {number}\n")
    with pytest.raises(ConfigError, match=key):
        load(path)
    path.write_text(f'[tool.hoare.overrides."m:T"]\n{key} = {number}\n')
    with pytest.raises(ConfigError, match=key):
        load(path)


@settings(max_examples=60, deadline=None)
@given(number=st.one_of(st.integers(SOLVER_LIMIT_MAX + 1, 10**40),
                        st.integers(-10**40, 0)),
       flag=st.sampled_from(["--timeout-ms", "--rlimit"]))
def test_solver_limit_flags_beyond_32_bits_are_usage_errors(number: int, flag: str) -> None:
    assert main(["verify", flag, str(number), "nothing.py"]) == 2


@settings(max_examples=60, deadline=None)
@given(seconds=st.one_of(st.floats(threading.TIMEOUT_MAX * 1.0001, 1e308),
                         st.just(math.inf), st.just(math.nan), st.floats(-1e308, 0)))
def test_import_timeouts_a_wait_cannot_take_are_refused(tmp_path_factory: pytest.TempPathFactory,
                                                        seconds: float) -> None:
    assert main(["verify", "--import-timeout", repr(seconds), "nothing.py"]) == 2
    path = tmp_path_factory.mktemp("p") / "pyproject.toml"
    path.write_text(f"[tool.hoare]\nimport_timeout = {_toml_float(seconds)}\n")
    with pytest.raises(ConfigError, match="import_timeout"):
        load(path)


def _toml_float(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def test_config_errors_end_the_command_with_2_and_no_traceback(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(CONTRACT)
    for body, named in ((b"[tool.hoare]\nstrict = true # \xff\xfe\n", "not valid TOML"),
                        (b"tool = 3\n", "[tool] must be a table"),
                        (b"[tool.hoare]\nimport_timeout = 1e300\n", "import_timeout"),
                        (b"[tool.hoare]\ntimeout_ms = 4294967297\n", "timeout_ms")):
        (tmp_path / "pyproject.toml").write_bytes(body)
        done = _hoare("verify", "m.py", cwd=tmp_path)
        assert done.returncode == 2, (body, done.stdout, done.stderr)
        assert named in done.stderr and "pyproject.toml" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr


# -- arguments --------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["verify", ""], ["verify", "m.py", "  "], ["verify", "m.py", "-o", ""],
    ["verify", "m.py", "--cache-dir", ""], ["verify", "m.py", "--config", ""],
    ["stats", "--db", ""], ["stats", "--db", "x.db", "--plot", ""],
    ["stats", "--db", "x.db", "--contract", ""],
    ["compare", "--db", "", "--baseline", "a", "--candidate", "b"],
    ["compare", "--db", "x.db", "--baseline", "a", "--candidate", "b", "--junit", ""],
    ["schema", ""], ["eval", "", "d.jsonl"], ["eval", "m:T", ""],
    ["eval", "m:T", "d.jsonl", "--engine", ""], ["probe", ""],
    ["probe", "http://127.0.0.1:9/v1", "--out", ""],
])
def test_an_empty_argument_is_a_usage_error(argv: list[str],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "expected a non-empty value" in err and "Traceback" not in err


def test_jobs_beyond_the_files_start_one_worker_per_file(tmp_path: Path) -> None:
    """Every worker process started is counted (a ``sitecustomize`` on the path the
    workers inherit notes each start): ``-j 24`` on one file starts one."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import os, sys\n"
        "if 'hoare.verifier.project.worker' in sys.orig_argv:\n"
        f"    with open({str(tmp_path / 'starts.txt')!r}, 'a') as log:\n"
        "        log.write(f'{os.getpid()}\\n')\n")
    (tmp_path / "m.py").write_text(CONTRACT)
    env = {"PYTHONPATH": os.pathsep.join([str(hook), LIBRARY])}
    for jobs, files in (("24", ["m.py"]), ("auto", ["m.py"])):
        (tmp_path / "starts.txt").write_text("")
        done = _hoare("verify", *files, "-j", jobs, "--no-cache", cwd=tmp_path, env_extra=env)
        assert done.returncode == 0, done.stderr
        assert len((tmp_path / "starts.txt").read_text().split()) == 1, jobs


# -- where the report goes ---------------------------------------------------------------

def test_a_report_follows_a_symbolic_link(tmp_path: Path) -> None:
    target = tmp_path / "artifacts" / "report.sarif"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "report.sarif"
    link.symlink_to(target)
    write_report(str(link), "new\n")
    assert link.is_symlink() and target.read_text() == "new\n"
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "artifacts" / "later.json")
    write_report(str(dangling), "made\n")
    assert dangling.is_symlink() and (tmp_path / "artifacts" / "later.json").read_text() \
        == "made\n"


def test_a_report_is_written_into_a_fifo_not_over_it(tmp_path: Path) -> None:
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    write_report(str(fifo), "through the pipe\n")
    reader.join(30)
    assert got == [b"through the pipe\n"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_full_device_is_an_error_and_stays_a_device(tmp_path: Path) -> None:
    if not Path("/dev/full").exists() or not stat.S_ISCHR(os.stat("/dev/full").st_mode):
        pytest.skip("no /dev/full")
    with pytest.raises(OSError):
        write_report("/dev/full", "x" * 10_000)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_standard_output_that_cannot_be_written_is_status_2(tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    (tmp_path / "m.py").write_text(CONTRACT)
    for argv in (["verify", "m.py"], ["verify", "m.py", "--json"],
                 ["verify", str(tmp_path / "empty_dir_missing"), "--json"]):
        with open("/dev/full", "w") as full:
            done = _hoare(*argv, cwd=tmp_path, stdout=full)
        assert done.returncode == 2, (argv, done.stderr)
        assert "Traceback" not in done.stderr
        assert done.stderr.strip(), argv


def test_an_internal_error_is_one_line_and_status_2(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]
                                                    ) -> None:
    from hoare.cli import parser

    def broken(_args: object) -> int:
        raise ValueError("a bug \x1b[2J")

    monkeypatch.setitem(parser.COMMANDS, "stats", broken)
    assert main(["stats", "--db", "x.db"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: ValueError: a bug \\x1b[2J" in err


def test_a_junit_file_that_cannot_be_written_whole_is_left_as_it_was(tmp_path: Path) -> None:
    """``hoare compare --junit`` on a full disk (a file size limit): status 2 and the
    previous file intact (before, it was truncated: opened for writing in place)."""
    import resource
    import signal
    import time

    from hoare.stats.records import CallRecord
    from hoare.stats.store import StatsStore

    db = tmp_path / "calls.db"
    store = StatsStore(db)
    for label in ("old", "new"):
        for k in range(40):
            store.record(CallRecord(time.time(), "m:C", "h", label, k % 4 != 0, True, 1, 0,
                                    None, None, None, 0.01, 5.0, "E", None, ()))
    store.close()
    previous = "<testsuite name='the last run'/>\n" * 3
    (tmp_path / "junit.xml").write_text(previous)

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a signal
        resource.setrlimit(resource.RLIMIT_FSIZE, (120, 120))

    env = {**os.environ, "PYTHONPATH": LIBRARY, "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "hoare", "compare", "--db", str(db),
                           "--baseline", "old", "--candidate", "new", "--junit",
                           "junit.xml"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300, preexec_fn=small_files)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "junit.xml" in done.stderr and "Traceback" not in done.stderr
    assert (tmp_path / "junit.xml").read_text() == previous


# -- modules hoare schema and hoare eval import in their own process ----------------------

_MODULES = {
    "exits 0": ("import sys\nsys.exit(0)\n", "SystemExit: 0"),
    "exits with text": ("import sys\nsys.exit('bye')\n", "SystemExit: bye"),
    "raises": ("raise RuntimeError('boom at import')\n", "RuntimeError: boom at import"),
    "has a NUL byte": (CONTRACT + "\x00\n", "SyntaxError"),
    "raises in __getattr__": ("def __getattr__(name):\n    raise ValueError('no ' + name)\n",
                              "ValueError: no Task"),
}


@pytest.mark.parametrize("command", [["schema", "m:Task", "--json"],
                                     ["eval", "m:Task", "d.jsonl", "--db", "s.db",
                                      "--json"]])
@pytest.mark.parametrize("module", sorted(_MODULES))
def test_a_module_that_ends_or_fails_at_import_is_an_import_error(
        tmp_path: Path, command: list[str], module: str) -> None:
    """Status 2 naming the module (a ``sys.exit(0)`` at import ended the command with
    status 0 and no output; ``sys.exit('bye')`` with 1, read as a failed gate)."""
    body, named = _MODULES[module]
    (tmp_path / "m.py").write_text(body)
    (tmp_path / "d.jsonl").write_text('{"n": 1}\n')
    done = _hoare(*command, cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "m:Task" in done.stderr and named in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


@pytest.mark.parametrize("command", [["schema", "m:Task", "--json"],
                                     ["eval", "m:Task", "d.jsonl", "--db", "s.db",
                                      "--engine", "m:engine", "--json"]])
def test_what_a_module_prints_stays_out_of_the_json(tmp_path: Path,
                                                    command: list[str]) -> None:
    import json

    noisy = ("print('NOISE at import {')\n" + CONTRACT.replace(
        "        return self.contract_result",
        "        print('NOISE in forward')\n        return self.contract_result") +
        "import json as _json\nfrom hoare.engines import FunctionEngine\n"
        "def engine():\n    print('NOISE making the engine')\n"
        "    return FunctionEngine(lambda r: _json.dumps({'m': 5}))\n")
    (tmp_path / "m.py").write_text(noisy)
    (tmp_path / "d.jsonl").write_text('{"n": 1}\n{"n": 2}\n')
    done = _hoare(*command, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    json.loads(done.stdout)  # nothing else on stdout
    assert "NOISE at import" in done.stderr
