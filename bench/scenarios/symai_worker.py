"""SymbolicAI in its own virtualenv (``bench/.venv-symai``), driven as a worker process.

SymbolicAI is never a dependency of hoare: the harness creates the virtualenv with
``python3 -m venv`` and installs ``symbolicai`` from the package registry into it,
once (a stamp file records the installed spec). If that fails, every SymbolicAI
figure is reported as skipped, with the reason.
"""

import json
import os
import shutil
import subprocess
import sys
from typing import Any

from . import BENCH, WORK

VENV = BENCH / ".venv-symai"
PYTHON = VENV / "bin" / "python"
STAMP = VENV / ".hoare-bench-installed"
# The version measured and documented in bench/README.md; override to try another.
SPEC = os.environ.get("HOARE_BENCH_SYMAI", "symbolicai==2.2.0")


def ensure_venv(log: Any = print) -> str | None:
    """Create and fill the virtualenv if needed. Returns None, or why it is unusable."""
    if STAMP.exists() and STAMP.read_text().strip() == SPEC and PYTHON.exists():
        return None
    python3 = shutil.which("python3") or sys.executable
    log(f"[bench] creating {VENV.relative_to(BENCH.parent)} and installing {SPEC} "
        f"(one time; needs the package registry)")
    try:
        if not PYTHON.exists():
            subprocess.run([python3, "-m", "venv", str(VENV)], check=True,
                           capture_output=True, text=True, timeout=300)
        done = subprocess.run(
            [str(PYTHON), "-m", "pip", "install", "--disable-pip-version-check", "--quiet", SPEC],
            capture_output=True, text=True, timeout=1800)
    except (OSError, subprocess.SubprocessError) as error:
        return f"could not create {VENV.name}: {error}"
    if done.returncode != 0:
        tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        return f"pip install {SPEC} failed (exit {done.returncode}): {tail[:300]}"
    (VENV / ".symai").mkdir(exist_ok=True)  # keep symai's config out of ~/.symai
    STAMP.write_text(SPEC + "\n")
    return None


class SymaiWorker:
    """``bench/symai_side.py`` running in the SymbolicAI virtualenv; JSON lines."""

    def __init__(self) -> None:
        WORK.mkdir(exist_ok=True)
        (VENV / ".symai").mkdir(exist_ok=True)
        self.stderr = open(WORK / "symai-stderr.log", "w")
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):  # never reach a real LLM
            env.pop(key, None)
        self.process = subprocess.Popen(
            [str(PYTHON), str(BENCH / "symai_side.py")], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self.stderr, text=True, bufsize=1, env=env,
            cwd=str(WORK))
        hello = self._read()
        if not hello.get("ready"):
            raise RuntimeError(f"symai worker did not start: {hello}")
        self.info: dict[str, Any] = self.request("info")

    def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            self.process.wait(timeout=10)
            log = (WORK / "symai-stderr.log").read_text()[-600:]
            raise RuntimeError(f"symai worker exited ({self.process.returncode}): {log}")
        return json.loads(line)

    def request(self, cmd: str, **fields: Any) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"cmd": cmd, **fields}) + "\n")
        self.process.stdin.flush()
        answer = self._read()
        if not answer.get("ok"):
            raise RuntimeError(f"symai worker: {cmd} failed: {answer.get('error')}")
        return answer

    def close(self) -> None:
        try:
            if self.process.poll() is None and self.process.stdin is not None:
                self.process.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
                self.process.stdin.flush()
                self.process.wait(timeout=10)
        except (OSError, subprocess.SubprocessError):
            self.process.kill()
        self.stderr.close()


def start(log: Any = print) -> tuple[SymaiWorker | None, str | None]:
    """The worker, or None and the reason the SymbolicAI scenarios are skipped."""
    if os.environ.get("HOARE_BENCH_NO_SYMAI"):
        return None, "HOARE_BENCH_NO_SYMAI is set"
    reason = ensure_venv(log)
    if reason is not None:
        return None, reason
    try:
        return SymaiWorker(), None
    except Exception as error:
        return None, f"the SymbolicAI worker failed to start: {error}"
