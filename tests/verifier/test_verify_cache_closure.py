"""The import closure behind the verdict cache's keys: every file a unit imports,
transitively, found once per file rather than once per unit.

A key must change when any file of its unit's closure changes and must not depend on
anything else; the closure must be exactly what the import graph reaches (cycles
included). Generated import graphs are checked against plain reachability. The cost
test counts graph walks, not seconds: n units sharing a package of m modules walk
each module's imports a bounded number of times (it was n times m).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hoare.verifier.project.result_cache import VerdictCache
from hoare.verifier.project.targets import Unit


def _write_graph(directory: Path, edges: list[set[int]]) -> list[Path]:
    """Modules ``gN.py`` (a prefix no other test or package uses); module i imports
    every module in ``edges[i]``, in both import forms."""
    files = []
    for index, targets in enumerate(edges):
        lines = [f"import gmod{j}\n" if j % 2 else f"from gmod{j} import name\n"
                 for j in sorted(targets)]
        path = directory / f"gmod{index}.py"
        path.write_text("".join(lines) + "name = 1\n")
        files.append(path.resolve())
    return files


def _reachable(edges: list[set[int]], start: int) -> set[int]:
    seen = {start}
    todo = [start]
    while todo:
        for j in edges[todo.pop()]:
            if j not in seen:
                seen.add(j)
                todo.append(j)
    return seen


def _unit(path: Path) -> Unit:
    return Unit(str(path), path, None, None, None)


graphs = st.integers(min_value=1, max_value=9).flatmap(
    lambda n: st.lists(st.sets(st.integers(min_value=0, max_value=n - 1), max_size=4),
                       min_size=n, max_size=n))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edges=graphs, data=st.data())
def test_the_closure_is_what_the_import_graph_reaches(edges: list[set[int]],
                                                     data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "project"
        directory.mkdir()
        files = _write_graph(directory, edges)
        cache = VerdictCache(Path(tmp) / "cache", {})
        # visit the units in a generated order: memoized components must not depend on it
        order = data.draw(st.permutations(range(len(files))))
        keys = {}
        for index in order:
            expected = sorted(files[j] for j in _reachable(edges, index))
            assert cache.closure(files[index]) == sorted(expected, key=str)
            others = {str(files[j]) for j in range(len(files)) if j not in
                      _reachable(edges, index)}
            assert not cache.imports_any(files[index], others)
            assert cache.imports_any(files[index], {str(files[index])})
            keys[index] = cache.key(_unit(files[index]))
        # an edit to one file changes the keys of exactly the units that reach it
        edited = data.draw(st.integers(min_value=0, max_value=len(files) - 1))
        files[edited].write_text(files[edited].read_text() + "# edited\n")
        fresh = VerdictCache(Path(tmp) / "cache", {})
        for index, key in keys.items():
            changed = fresh.key(_unit(files[index])) != key
            assert changed == (edited in _reachable(edges, index))


def test_a_long_import_chain_is_not_a_recursion(tmp_path: Path) -> None:
    """Module i imports module i+1, and the last imports the first (one component of
    3000 modules, deeper than the recursion limit)."""
    count = 3000
    files = _write_graph(tmp_path, [{(i + 1) % count} for i in range(count)])
    cache = VerdictCache(tmp_path / "cache", {})
    assert len(cache.closure(files[0])) == count
    assert len(cache.closure(files[count // 2])) == count


def test_units_sharing_a_package_walk_its_imports_a_bounded_number_of_times(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """n units importing one module that imports a chain of m others: each module's
    imports are looked at a bounded number of times in all, not once per unit."""
    units, shared = 40, 30
    edges: list[set[int]] = [{i + 1} for i in range(shared - 1)] + [set()]
    edges += [{0} for _ in range(units)]
    files = _write_graph(tmp_path, edges)
    looked_at: list[str] = []
    original = VerdictCache._local_imports

    def counting(self: VerdictCache, path: str) -> list[str]:
        looked_at.append(path)
        return original(self, path)

    monkeypatch.setattr(VerdictCache, "_local_imports", counting)
    cache = VerdictCache(tmp_path / "cache", {})
    keys = {cache.key(_unit(path)) for path in files[shared:]}
    assert len(keys) == units
    assert len(looked_at) <= 3 * (units + shared), len(looked_at)


def _reference_assemble(results: list[dict[str, object]]) -> list[tuple[str, str]]:
    """What ``assemble`` keeps, as it was written first: every report compared in full,
    as canonical JSON, with those kept under its name."""
    import json

    kept: list[tuple[str, str]] = []
    seen: dict[tuple[str, str], list[str]] = {}
    for result in results:
        for group in ("contracts", "pipelines"):
            for data in result[group]:  # type: ignore[attr-defined]
                whole = json.dumps(data, sort_keys=True, default=str)
                same = seen.setdefault((group, data["name"]), [])
                if whole not in same:
                    same.append(whole)
                    kept.append((group, whole))
    return kept


reports = st.fixed_dictionaries({
    "name": st.sampled_from(["m:A", "m:B", "n:A"]),
    "checks": st.lists(st.fixed_dictionaries({
        "kind": st.sampled_from(["pre_satisfiable", "post_total"]),
        "status": st.sampled_from(["pass", "fail"]),
        "message": st.sampled_from(["x", "y"])}), max_size=2),
    "location": st.fixed_dictionaries({"file": st.sampled_from(["a.py", "b.py"]),
                                       "line": st.integers(1, 3)}),
})


@settings(max_examples=200, deadline=None)
@given(st.lists(st.fixed_dictionaries({"contracts": st.lists(reports, max_size=4),
                                       "pipelines": st.lists(reports, max_size=2),
                                       "errors": st.just([])}), max_size=5))
def test_assemble_keeps_one_report_per_distinct_contract(
        results: list[dict[str, object]]) -> None:
    """A report of a name already seen is dropped only when it equals one kept in full;
    the canonical text is made lazily, the outcome is the reference's."""
    import json

    from hoare.verifier.project.run import assemble
    from hoare.verifier.report.model import ContractReport

    report = assemble(results)
    got = [(group, r.to_json())
           for group, kept in (("contracts", report.contracts), ("pipelines", report.pipelines))
           for r in kept]
    expected = sorted(_reference_assemble(results), key=lambda item: item[0] == "pipelines")
    assert got == [(group, ContractReport.from_json(json.loads(whole)).to_json())
                   for group, whole in expected]
