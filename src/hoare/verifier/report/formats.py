"""The report as CI systems read it: SARIF 2.1.0 (code scanning) and JUnit XML.

SARIF: one rule per check kind; one result per check that is not a pass, located at
the predicate's line (else the contract class's), its message holding the verdict,
the witness or counterexample and the unsat core, so code scanning shows it on the
line; ignored checks carry a suppression with the configured reason; import errors
are results of the rule ``import_error`` and tool notifications. Paths are relative
to the project root (``%SRCROOT%``) when under it.

JUnit: one test suite per contract or pipeline, one test case per check; ``fail`` →
``<failure>``, ``unknown`` → ``<skipped>`` with the reason, ``warn`` → a passing case
whose output says why it is weak; an import error is an ``<error>`` case.
"""

from __future__ import annotations

import errno
import os
import re
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any
from urllib.parse import quote

from hoare.verifier.report.model import CheckResult, ContractReport, Report, json_text

__all__ = ["RULES", "file_uri", "to_junit", "to_sarif", "uri_reference", "write_report"]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"

# rule id → (short description, full description)
RULES: dict[str, tuple[str, str]] = {
    "pre_satisfiable": (
        "Some valid input passes every pre-condition",
        "A contract whose pre-conditions no valid input passes can never run: every call "
        "ends in its fallback."),
    "post_satisfiable": (
        "Some valid output passes every post-condition",
        "If no valid output passes the post-conditions, remediation can never succeed."),
    "post_total": (
        "Every accepted input admits an accepted output",
        "An input that passes the pre-conditions but for which no output can pass the "
        "post-conditions: the pre-conditions are too weak."),
    "predicate_vacuous": (
        "A predicate can pass and can fail",
        "A predicate that never passes blocks every call; one that never fails checks "
        "nothing the types do not already guarantee."),
    "composition": (
        "Adjacent pipeline stages compose",
        "Every output the first stage accepts must be accepted by the next stage's input "
        "type and pre-conditions."),
    "no_such_field": (
        "A predicate reads only attributes its value has",
        "A predicate reading an attribute the type does not have (a typo such as o.lable "
        "for o.label) raises AttributeError on every call: on an output it can never "
        "pass (fail); on an input, or a model allowing extra fields, it may (warn)."),
    "translation": (
        "The contract could be translated",
        "The verifier could not build the contract's model."),
    "import_error": (
        "A target could be imported",
        "A file or module given to hoare verify failed to import; its contracts were not "
        "checked."),
}
_LEVEL = {"fail": "error", "warn": "warning", "unknown": "note", "pass": "none"}


def _path_bytes(text: str) -> bytes:
    """A path's bytes as the file system has them: a name that is not UTF-8 was decoded
    with surrogate escapes, which give its bytes back; any other surrogate is kept
    as its UTF-8 form (surrogatepass) rather than failing."""
    try:
        return os.fsencode(text)
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def uri_reference(path: str) -> str:
    """A relative URI reference of a POSIX path (RFC 3986): each byte outside the
    unreserved set and ``/`` percent-encoded, so ``%``, ``#``, ``?``, spaces, controls
    and non-UTF-8 bytes survive a URI parser."""
    return quote(_path_bytes(path), safe="/")


def file_uri(path: Path) -> str:
    """The ``file://`` URI of an absolute path, percent-encoded byte by byte."""
    text = path.as_posix()
    return "file://" + uri_reference(text if text.startswith("/") else "/" + text)


def _uri(file: str | None, root: Path) -> dict[str, Any] | None:
    if not file:
        return None
    path = Path(file)
    try:
        relative = path.resolve().relative_to(root.resolve())
        return {"uri": uri_reference(relative.as_posix()), "uriBaseId": "SRCROOT"}
    except (ValueError, OSError):
        pass
    try:
        return {"uri": file_uri(path.resolve()) if path.is_absolute()
                else uri_reference(path.as_posix())}
    except (OSError, ValueError):
        return {"uri": uri_reference(path.as_posix())}


def _location(file: str | None, line: int | None, root: Path) -> list[dict[str, Any]]:
    artifact = _uri(file, root)
    if artifact is None:
        return []
    physical: dict[str, Any] = {"artifactLocation": artifact}
    if line is not None and line >= 1:
        physical["region"] = {"startLine": line}
    return [{"physicalLocation": physical}]


def _compact(value: Any, limit: int = 600) -> str:
    text = json_text(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def details(check: CheckResult) -> str:
    """The message with what backs it: unsat core, witness, counterexample."""
    parts = [check.message]
    if check.constraints:
        what = "implied by" if check.kind == "predicate_vacuous" and \
            check.status == "warn" else "conflict"
        parts.append(f"{what}: {' ∧ '.join(check.constraints)}")
    if check.witness is not None and check.status != "pass":
        parts.append(f"witness: {_compact(check.witness)}")
    if check.counterexample is not None and check.status != "pass":
        parts.append(f"counterexample: {_compact(check.counterexample)}")
    parts.extend(f"assuming: {a}" for a in check.assumptions)
    return "\n".join(parts)


def to_sarif(report: Report, root: Path, version: str) -> dict[str, Any]:
    """The SARIF 2.1.0 log of ``report``."""
    rule_ids = list(RULES)
    rules = [{"id": rule, "name": "".join(w.title() for w in rule.split("_")),
              "shortDescription": {"text": short}, "fullDescription": {"text": full},
              "defaultConfiguration": {"level": "error"}}
             for rule, (short, full) in RULES.items()]
    results: list[dict[str, Any]] = []
    for group in (report.contracts, report.pipelines):
        for contract in group:
            for check in contract.checks:
                if check.status == "pass":
                    continue
                rule = check.kind if check.kind in RULES else "translation"
                result: dict[str, Any] = {
                    "ruleId": rule, "ruleIndex": rule_ids.index(rule),
                    "level": _LEVEL[check.status],
                    "message": {"text": f"{contract.name} {check.subject}: "
                                        f"{check.status}: {details(check)}"},
                    "locations": _location(check.file, check.line, root),
                    "partialFingerprints": {"hoareCheck/v1": f"{contract.name}.{check.subject}"},
                    "properties": {"contract": contract.name, "status": check.status,
                                   "predicate": check.predicate,
                                   "constraints": list(check.constraints),
                                   "witness": check.witness,
                                   "counterexample": check.counterexample},
                }
                if check.ignored is not None:
                    result["suppressions"] = [{"kind": "external",
                                               "justification": check.ignored}]
                results.append(result)
    notifications = []
    for problem in report.errors:
        results.append({"ruleId": "import_error", "ruleIndex": rule_ids.index("import_error"),
                        "level": "error", "message": {"text": str(problem)},
                        "locations": _location(problem.file, problem.line, root)})
        notifications.append({"level": "error", "message": {"text": str(problem)},
                              "locations": _location(problem.file, problem.line, root)})
    root_uri = file_uri(root.resolve()).rstrip("/") + "/"
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "hoare", "version": version, "rules": rules}},
            "originalUriBaseIds": {"SRCROOT": {"uri": root_uri}},
            "invocations": [{"executionSuccessful": not report.errors,
                             "toolExecutionNotifications": notifications}],
            "results": results,
        }],
    }


# XML 1.0 cannot carry these characters, not even escaped: shown as \\uXXXX.
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(text: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _suite(report: ContractReport) -> ET.Element:
    suite = ET.Element("testsuite", name=_xml(report.name))
    failures = skipped = 0
    for check in report.checks:
        case = ET.SubElement(suite, "testcase", classname=_xml(report.name),
                             name=_xml(check.subject), time="0")
        if check.file:
            case.set("file", _xml(check.file))
        if check.line is not None:
            case.set("line", str(check.line))
        text = _xml(details(check))
        if check.ignored is not None:
            skipped += 1
            node = ET.SubElement(case, "skipped",
                                 message=_xml(f"ignored: {check.ignored}"))
            node.text = text
        elif check.status == "fail":
            failures += 1
            node = ET.SubElement(case, "failure", message=_xml(check.message), type="fail")
            node.text = text
        elif check.status == "unknown":
            skipped += 1
            ET.SubElement(case, "skipped", message=_xml(check.message)).text = text
        elif check.status == "warn":
            ET.SubElement(case, "system-out").text = _xml(f"WARN: {details(check)}")
    suite.set("tests", str(len(report.checks)))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    suite.set("time", "0")
    return suite


def to_junit(report: Report) -> str:
    """The JUnit XML document of ``report``."""
    root = ET.Element("testsuites", name="hoare verify")
    suites = [_suite(r) for r in (*report.contracts, *report.pipelines)]
    if report.errors:
        suite = ET.Element("testsuite", name="import", tests=str(len(report.errors)),
                           failures="0", errors=str(len(report.errors)), skipped="0",
                           time="0")
        for problem in report.errors:
            case = ET.SubElement(suite, "testcase", classname="import",
                                 name=_xml(problem.target), time="0")
            if problem.file:
                case.set("file", _xml(problem.file))
            if problem.line is not None:
                case.set("line", str(problem.line))
            ET.SubElement(case, "error", message=_xml(problem.error),
                          type="ImportError").text = _xml(str(problem))
        suites.append(suite)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        root.append(suite)
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{report.seconds:.3f}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")


FIFO_WAIT = 5.0
"""Seconds a report written into a FIFO waits for a process to open it for reading."""


def _reader_of(path: str) -> int:
    """A descriptor writing into the FIFO ``path`` once a process reads it (a reader
    started just before, as ``cat fifo &`` is, may not have opened it yet); an
    ``OSError`` naming it after ``FIFO_WAIT`` seconds with none, not a wait forever."""
    deadline = time.monotonic() + FIFO_WAIT
    while True:
        try:
            return os.open(path, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError as error:
            if error.errno != errno.ENXIO:
                raise
            if time.monotonic() >= deadline:
                raise OSError(f"no process read the FIFO {path} within {FIFO_WAIT:g} s") \
                    from None
            time.sleep(0.01)


def write_report(path: str, text: str | bytes) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically: a new file in the same directory
    (created with the umask's permissions, as ``open`` would), then ``os.replace``. On
    any error (an unencodable character, a full disk) the temporary file is removed and
    ``path`` is left as it was, never empty or half-written. Raises ``OSError`` (a
    ``UnicodeError`` becomes one).

    A symbolic link is followed (its target is written, the link stays); a path that
    is not a regular file (``/dev/stdout``, a FIFO, ``/dev/full``) is written to as it
    is: replacing it would put a file where a device or a pipe was."""
    import stat

    try:
        data = text.encode("utf-8") if isinstance(text, str) else text  # bytes: a plot
    except UnicodeEncodeError as error:
        raise OSError(f"the report holds a character UTF-8 cannot encode: {error}") from error
    path = os.path.realpath(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = stat.S_IFREG
    if stat.S_ISFIFO(mode):  # a pipe: written once a process reads it, waited on a while
        fd = _reader_of(path)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
        return
    if not stat.S_ISREG(mode):
        with open(path, "wb") as stream:  # a device: no rename, no fsync
            stream.write(data)
        return
    directory, name = os.path.split(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        temporary = os.path.join(directory, f".{name}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
        try:
            fd = os.open(temporary, flags, 0o666)
            break
        except FileExistsError:  # pragma: no cover - 48 random bits collided
            continue
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.chmod(temporary, os.stat(path).st_mode & 0o7777)  # keep an existing mode
        except FileNotFoundError:
            pass
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
