"""The strict-types ratchet: ``mypy --strict kernel/ src/hoare`` may not get worse.

``make lint`` runs this script, and so does the suite (tests/test_mypy_gate.py, a
``serial`` test). mypy's errors are counted per file and compared with the checked-in
baseline ``tests/mypy_baseline.txt`` (``path: count`` lines): the gate fails when a
file has more errors than its baseline line says (a file with no line may have none),
and names each file that now has fewer, so its line is lowered by editing the baseline
(or by ``--lower``, which only ever lowers it). The counts are mypy's own, from the
version pyproject.toml pins: another version is refused, as its counts differ.

Usage: python tests/mypy_gate.py [--lower] [--baseline FILE]
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "tests" / "mypy_baseline.txt"
TARGETS = ("kernel/", "src/hoare")

# One diagnostic of mypy's default output: ``path:line[:column]: error: message  [code]``
# (a file-wide one has no line). Notes (``: note:``) are not errors and are not counted.
_ERROR = re.compile(r"^(?P<path>[^\s:][^:]*?\.pyi?)(?::\d+){0,2}: error: ")
_SUMMARY = re.compile(r"^Found (?P<errors>\d+) errors? in (?P<files>\d+) files?\b", re.M)
_BASELINE_LINE = re.compile(r"^(?P<path>[^\s:#][^:]*?\.pyi?): (?P<count>[1-9][0-9]*)$")


class GateError(Exception):
    """mypy could not be run, its output was not understood, or the baseline is malformed:
    the gate cannot say anything, so it fails, saying why."""


def count_errors(output: str) -> Counter[str]:
    """Errors per file in mypy's output (paths as mypy prints them, ``/``-separated)."""
    counts: Counter[str] = Counter()
    for line in output.splitlines():
        found = _ERROR.match(line)
        if found:
            counts[found["path"].replace("\\", "/")] += 1
    return counts


def parse_baseline(text: str, source: str = "the baseline") -> dict[str, int]:
    """``path: count`` lines; blank lines and ``#`` comments are skipped. A malformed
    line, a count of 0 (delete the line instead) or a path given twice is an error."""
    counts: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        found = _BASELINE_LINE.match(line)
        if found is None:
            raise GateError(f"{source}, line {number}: expected 'path.py: count' with a "
                            f"positive count, got {raw!r}")
        if found["path"] in counts:
            raise GateError(f"{source}, line {number}: {found['path']} is listed twice")
        counts[found["path"]] = int(found["count"])
    return counts


def format_baseline(counts: Mapping[str, int]) -> str:
    """The baseline file's text: sorted ``path: count`` lines (files with no error out)."""
    header = ("# mypy --strict errors per file allowed by tests/mypy_gate.py (make lint).\n"
              "# Lower a count (or delete its line) when a file gets better; never raise one.\n")
    return header + "".join(f"{path}: {count}\n"
                            for path, count in sorted(counts.items()) if count > 0)


@dataclass
class Comparison:
    """What changed against the baseline: files now worse (baseline, now) and better."""

    worse: dict[str, tuple[int, int]] = field(default_factory=dict)
    better: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.worse

    def lowered(self, baseline: Mapping[str, int]) -> dict[str, int]:
        """The baseline with each improved file's count lowered to its count now."""
        out = dict(baseline)
        for path, (_, now) in self.better.items():
            out[path] = now
        return {path: count for path, count in out.items() if count > 0}


def compare(baseline: Mapping[str, int], current: Mapping[str, int]) -> Comparison:
    """Each file whose count went up (a file absent from the baseline is allowed 0) or down."""
    result = Comparison()
    for path in sorted(set(baseline) | set(current)):
        allowed, now = baseline.get(path, 0), current.get(path, 0)
        if now > allowed:
            result.worse[path] = (allowed, now)
        elif now < allowed:
            result.better[path] = (allowed, now)
    return result


def pinned_mypy_version(pyproject: Path = ROOT / "pyproject.toml") -> str:
    """The mypy version the ``dev`` extra pins (``mypy==X``): the baseline's counts are
    that version's."""
    with pyproject.open("rb") as handle:
        extras = tomllib.load(handle)["project"]["optional-dependencies"]
    for requirement in extras.get("dev", []):
        name, _, version = requirement.partition("==")
        if name.strip().lower() == "mypy" and version:
            return version.strip()
    raise GateError("pyproject.toml's dev extra pins no mypy version (mypy==X)")


def run_mypy(python: str = sys.executable, targets: Iterable[str] | None = None) -> str:
    """mypy's output on ``targets`` (default ``TARGETS``), run from the checkout's root
    with ``python``; exit status 0 (clean) or 1 (errors found) and output that agrees
    with it, else GateError."""
    targets = TARGETS if targets is None else tuple(targets)
    try:
        version = subprocess.run([python, "-m", "mypy", "--version"], cwd=ROOT, text=True,
                                 capture_output=True, check=False)
    except OSError as error:
        raise GateError(f"cannot run {python}: {error}") from error
    if version.returncode != 0:
        raise GateError(f"mypy is not installed for {python} (pip install -e '.[dev]'):\n"
                        f"{version.stderr.strip()}")
    pinned = pinned_mypy_version()
    if version.stdout.split()[1:2] != [pinned]:
        raise GateError(f"the baseline counts mypy {pinned}'s errors (pyproject.toml pins "
                        f"it); {python} has {version.stdout.strip()!r}")
    done = subprocess.run([python, "-m", "mypy", "--strict", "--no-pretty",
                           "--no-color-output", "--show-error-codes", *targets],
                          cwd=ROOT, text=True, capture_output=True, check=False)
    output = done.stdout + done.stderr
    check_output(done.returncode, output)
    return output


def check_output(status: int, output: str) -> None:
    """GateError unless every error mypy reports was read: exit status 0 with no error
    line, or 1 with error lines whose total and files match its ``Found N errors in M
    files`` summary (an error of another shape, or a crash, leaves them apart)."""
    counts = count_errors(output)
    errors = sum(counts.values())
    summary = _SUMMARY.search(output)
    read = (status == 0 and errors == 0) or (
        status == 1 and summary is not None and int(summary["errors"]) == errors > 0
        and int(summary["files"]) == len(counts))
    if not read:
        raise GateError(f"mypy exited {status} with {errors} error line(s) read in "
                        f"{len(counts)} file(s), which its output does not account for:\n"
                        f"{output[-5000:]}")


def main(arguments: list[str]) -> int:
    lower = "--lower" in arguments
    baseline_path = BASELINE
    if "--baseline" in arguments:
        index = arguments.index("--baseline")
        if index + 1 >= len(arguments):
            print("mypy_gate: --baseline needs a file", file=sys.stderr)
            return 2
        baseline_path = Path(arguments[index + 1])
    try:
        baseline = parse_baseline(baseline_path.read_text(encoding="utf-8"), str(baseline_path))
        current = count_errors(run_mypy())
    except (GateError, OSError) as error:
        print(f"mypy_gate: {error}", file=sys.stderr)
        return 2
    result = compare(baseline, current)
    for path, (allowed, now) in result.worse.items():
        print(f"mypy_gate: WORSE {path}: {now} error(s), the baseline allows {allowed}")
    for path, (allowed, now) in result.better.items():
        print(f"mypy_gate: better {path}: {now} error(s), the baseline says {allowed}")
    if result.better:
        if lower:
            baseline_path.write_text(format_baseline(result.lowered(baseline)),
                                     encoding="utf-8")
            print(f"mypy_gate: lowered {len(result.better)} line(s) of {baseline_path}")
        else:
            print(f"mypy_gate: lower those lines of {baseline_path} (or run with --lower)")
    total = sum(current.values())
    if not result.ok:
        print(f"mypy_gate: FAILED: {len(result.worse)} file(s) have more mypy --strict "
              f"errors than {baseline_path.name} allows (run mypy --strict on them)")
        return 1
    print(f"mypy_gate: ok, {total} error(s) in {len(current)} file(s), none above the "
          f"baseline")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
