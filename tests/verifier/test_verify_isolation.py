"""``hoare verify`` as a CI gate cannot be fooled by the modules it imports: whatever a
module does at import time (exit, raise SystemExit or KeyboardInterrupt, kill its own
process, close its output, read stdin, loop forever) and whatever sits where a ``*.py``
is expected (a FIFO, a socket, a broken link, a directory, an unreadable file), the
run ends, names the file, and never exits 0 with that file unchecked.

Every run is ``python -m hoare verify`` in a child process (with a time bound), so a
hijacked or hung verifier fails the test rather than the test run.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

GOOD = '''
from hoare import Contract, Field, LLMDataModel, Pre, contract


class GoodIn(LLMDataModel):
    n: int = Field(ge=0, le=10)


@contract()
class Good(Contract):
    prompt = "p"
    pre_conditions = (Pre(lambda q: q.n > 3, "big enough"),)

    def forward(self, input: GoodIn) -> GoodIn:
        return self.contract_result
'''

# Every way an import can end or hijack its process. Each body runs at import time.
HIJACKS = {
    "os_exit_0": "import os\nos._exit(0)\n",
    "os_exit_3": "import os\nos._exit(3)\n",
    "sys_exit_0": "import sys\nsys.exit(0)\n",
    "system_exit_none": "raise SystemExit\n",
    "keyboard_interrupt": "raise KeyboardInterrupt\n",
    "sigkill_self": "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
    "sigterm_self": "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n",
    "close_stdout": "import os, sys\nsys.stdout.close()\nos.close(1)\nos._exit(0)\n",
    "close_every_fd": "import os\nos.closerange(0, 4096)\n",
    "exit_from_thread": ("import os, threading, time\n"
                         "threading.Thread(target=lambda: os._exit(0)).start()\n"
                         "time.sleep(60)\n"),
    "abort": "import os\nos.abort()\n",
    "endless_loop": "while True:\n    pass\n",
    "sleeps_forever": "import time\ntime.sleep(10 ** 6)\n",
    "reads_stdin": "text = input()\nwhile True:\n    pass\n",
    "prints_to_fd_1": ("import os\nos.write(1, b'{\"contracts\": [], \"pipelines\": [], "
                       "\"errors\": []}\\n')\nos._exit(0)\n"),
}


# The import time bound of these runs: a hijack that loops or sleeps waits it out, so it
# is short; a good file's import takes about 10 ms, far under it.
IMPORT_BOUND = "2"


def _verify(cwd: Path, *argv: str, timeout: float = 240) -> tuple[int, dict[str, object], str]:
    """Run ``hoare verify --format json`` in a child process: (status, report, stderr).
    An ``--import-timeout`` in ``argv`` comes last, so it wins over ``IMPORT_BOUND``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-m", "hoare", "verify", "--import-timeout",
                           IMPORT_BOUND, *argv, "--no-cache", "--format", "json"],
                          cwd=cwd, env=env, capture_output=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    out = done.stdout.decode("utf-8")
    return done.returncode, (json.loads(out) if out.strip() else {}), \
        done.stderr.decode("utf-8", "replace")


@pytest.mark.parametrize("name", sorted(HIJACKS))
def test_a_hijacking_import_is_that_files_error_and_never_a_pass(
        tmp_path: Path, name: str) -> None:
    (tmp_path / "a_good.py").write_text(GOOD)
    (tmp_path / f"b_{name}.py").write_text(HIJACKS[name])
    (tmp_path / "c_good.py").write_text(GOOD.replace("Good", "Fine"))
    status, report, err = _verify(tmp_path, ".", "-j", "1")
    assert status == 2, (status, report, err)
    errors = report["errors"]
    assert isinstance(errors, list) and len(errors) == 1, errors
    assert errors[0]["file"] == str(tmp_path / f"b_{name}.py")
    names = [c["name"] for c in report["contracts"]]  # type: ignore[union-attr]
    assert any(n.endswith(":Good") for n in names) and any(n.endswith(":Fine") for n in names)


def test_every_hijack_at_once_in_parallel_workers(tmp_path: Path) -> None:
    for index, (name, body) in enumerate(sorted(HIJACKS.items())):
        (tmp_path / f"h_{name}.py").write_text(body)
        (tmp_path / f"g_{index}.py").write_text(GOOD.replace("Good", f"Good{index}"))
    status, report, err = _verify(tmp_path, ".", "-j", "3")
    assert status == 2, (status, report, err)
    files = sorted(e["file"] for e in report["errors"])  # type: ignore[union-attr]
    assert files == sorted(str(tmp_path / f"h_{name}.py") for name in HIJACKS)
    assert len(report["contracts"]) == len(HIJACKS)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(HIJACKS))
def test_a_single_hijacking_file_exits_2(tmp_path: Path, name: str) -> None:
    (tmp_path / f"only_{name}.py").write_text(HIJACKS[name])
    status, report, err = _verify(tmp_path, f"only_{name}.py")
    assert status == 2, (status, report, err)
    (error,) = report["errors"]  # type: ignore[misc]
    assert error["file"] == str(tmp_path / f"only_{name}.py")
    assert f"only_{name}.py" in err  # standard error names the file too


def test_an_import_over_the_time_bound_names_the_bound_and_the_file(tmp_path: Path) -> None:
    (tmp_path / "slow.py").write_text(HIJACKS["endless_loop"])
    status, report, _err = _verify(tmp_path, "slow.py")
    assert status == 2
    (error,) = report["errors"]  # type: ignore[misc]
    assert f"did not finish within {IMPORT_BOUND} s" in error["error"]
    assert "import-timeout" in error["error"]


def test_the_import_time_bound_is_configurable(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.hoare]\nimport_timeout = 1.5\n")
    (tmp_path / "slow.py").write_text("import time\ntime.sleep(2)\n" + GOOD)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-m", "hoare", "verify", "slow.py", "--no-cache",
                           "--format", "json"], cwd=tmp_path, env=env, capture_output=True,
                          timeout=240)
    assert done.returncode == 2
    assert "within 1.5 s" in json.loads(done.stdout)["errors"][0]["error"]
    status, report, _err = _verify(tmp_path, "slow.py", "--import-timeout", "200")
    assert status == 0 and not report["errors"]


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_a_bad_import_timeout_is_a_usage_error(tmp_path: Path, value: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-m", "hoare", "verify", ".", "--import-timeout",
                           value], cwd=tmp_path, env=env, capture_output=True, timeout=120)
    assert done.returncode == 2 and b"--import-timeout" in done.stderr


@pytest.mark.parametrize("value", ["0", "-2", "nan", "inf", '"60"', "true"])
def test_a_bad_import_timeout_in_pyproject_is_named(tmp_path: Path, value: str) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.hoare]\nimport_timeout = {value}\n")
    (tmp_path / "m.py").write_text(GOOD)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-m", "hoare", "verify", "m.py"], cwd=tmp_path,
                          env=env, capture_output=True, timeout=120)
    assert done.returncode == 2 and b"import_timeout" in done.stderr


# -- what is not a regular file is reported, never opened ---------------------------------


def _special(kind: str, path: Path, tmp_path: Path) -> object:
    """Make ``path`` a non-regular file of ``kind``; what must stay alive meanwhile."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(path))
        server.listen()
        return server
    elif kind == "broken_link":
        path.symlink_to(tmp_path / "missing_target.py")
    elif kind == "link_to_fifo":
        os.mkfifo(tmp_path / "fifo_target")
        path.symlink_to(tmp_path / "fifo_target")
    elif kind == "device_link":
        path.symlink_to("/dev/zero")
    elif kind == "unreadable":
        path.write_text(GOOD)
        path.chmod(0)
    return None


KINDS = ["fifo", "socket", "broken_link", "link_to_fifo", "device_link", "unreadable"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_file_that_is_not_regular_is_reported_not_hung_on(tmp_path: Path, kind: str) -> None:
    if kind == "unreadable" and os.geteuid() == 0:
        pytest.skip("root reads any file")
    (tmp_path / "a_good.py").write_text(GOOD)
    keep = _special(kind, tmp_path / "b_odd.py", tmp_path)
    try:
        for cache in ((), ("--cache-dir", str(tmp_path / ".cache"))):
            argv = [a for a in (".", *cache)]
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
            done = subprocess.run(
                [sys.executable, "-m", "hoare", "verify", *argv, "--format", "json",
                 *(() if cache else ("--no-cache",))], cwd=tmp_path, env=env,
                capture_output=True, timeout=240, stdin=subprocess.DEVNULL)
            assert done.returncode == 2, done.stderr
            report = json.loads(done.stdout)
            (error,) = report["errors"]
            assert error["file"] == str(tmp_path / "b_odd.py")
            assert [c["name"].rsplit(":", 1)[-1] for c in report["contracts"]] == ["Good"]
        # named directly: a usage error that says what the file is
        status_done = subprocess.run(
            [sys.executable, "-m", "hoare", "verify", "b_odd.py", "--no-cache"], cwd=tmp_path,
            env=env, capture_output=True, timeout=240, stdin=subprocess.DEVNULL)
        assert status_done.returncode == 2
        assert b"b_odd.py" in status_done.stderr
    finally:
        if isinstance(keep, socket.socket):
            keep.close()


def test_a_directory_named_like_a_python_file_is_walked(tmp_path: Path) -> None:
    (tmp_path / "pkg.py").mkdir()
    (tmp_path / "pkg.py" / "inner.py").write_text(GOOD)
    status, report, err = _verify(tmp_path, ".")
    assert status == 0, err
    assert [c["name"].rsplit(":", 1)[-1] for c in report["contracts"]] == ["Good"]  # type: ignore[union-attr]


def test_unreadable_reasons_name_the_kind(tmp_path: Path) -> None:
    from hoare.verifier.project.targets import read_source, unreadable

    os.mkfifo(tmp_path / "f.py")
    (tmp_path / "l.py").symlink_to(tmp_path / "nowhere.py")
    (tmp_path / "r.py").write_text("x = 1\n")
    assert "FIFO" in (unreadable(tmp_path / "f.py") or "")
    assert "broken symbolic link" in (unreadable(tmp_path / "l.py") or "")
    assert "directory" in (unreadable(tmp_path) or "")
    assert unreadable(tmp_path / "r.py") is None
    assert read_source(tmp_path / "r.py") == b"x = 1\n"
    with pytest.raises(OSError, match="not a regular file"):
        read_source(tmp_path / "f.py")  # refused at once, not waited on


@pytest.mark.parametrize("name", ["os_exit_0", "sys_exit_0", "sigkill_self", "close_every_fd"])
def test_the_python_api_on_a_path_never_exits_with_the_module(tmp_path: Path,
                                                              name: str) -> None:
    """``hoare.verify("file.py")`` in a CI script: an ``os._exit(0)`` in the file must
    not end the script with status 0 (it is imported in a worker: a DiscoveryError)."""
    (tmp_path / f"api_{name}.py").write_text(HIJACKS[name])
    script = ("import hoare\n"
              "try:\n"
              f"    hoare.verify('api_{name}.py')\n"
              "except hoare.verifier.DiscoveryError as error:\n"
              f"    assert 'api_{name}.py' in str(error), error\n"
              "    print('reported')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, timeout=240, stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and done.stdout.strip() == b"reported", done.stderr
