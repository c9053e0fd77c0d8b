"""Static checks of agent tools (``@pre``/``@post`` from ``hoare.agents``) and of
declared tool chains (``ToolChain``), with the same checks and soundness rules as
contracts.

A tool is seen as a contract whose input is a pydantic model of its parameters and
whose output is its return type. Its conditions are rewritten, once, into predicates
on that model: ``lambda args: args["x"] != 0`` (cyllama's style) and ``lambda x: x != 0``
(by parameter name) become ``lambda value: bool(value.x != 0)``; a post-condition
``lambda r, args: ...`` becomes ``lambda value, used: bool(...)``. ``bool`` because a
tool condition that returns ``None`` fails (``PreCondition.check``), unlike a contract
predicate. A condition that cannot be rewritten exactly (``args`` used other than as
``args["name"]`` or ``args.get("name")``, a ``def`` with statements) stays opaque:
its checks are ``unknown``, never a guess.

What is assumed, and said in every report: the tool is called with arguments of its
parameters' types and returns a value of its return type (the agent passes the
model's JSON arguments as they are, and Python does not check a return annotation).
"""

from __future__ import annotations

import ast
import copy
import inspect
import itertools
import linecache
import types
import typing
from collections.abc import Callable
from typing import Any, Literal

from pydantic import create_model

from hoare.declaration.description import ContractDescription, PredicateSource
from hoare.declaration.models import type_spec
from hoare.declaration.source import SourceNotFound, function_node
from hoare.errors import UsageError
from hoare.kernel import ContractConfig, Policy
from hoare.unmodelled import Unsupported
from hoare.verifier.checks.contracts import check_contract
from hoare.verifier.checks.model import (
    ContractModel,
    contract_model,
    model_value,
    predicate_assertions,
    type_assertions,
)
from hoare.verifier.checks.samples import samples_of
from hoare.verifier.checks.verdicts import unknown_result
from hoare.verifier.report.model import CheckResult, ContractReport
from hoare.verifier.search.witness import WitnessError, call_predicate, validate
from hoare.verifier.solve.context import in_fresh_context
from hoare.verifier.solve.solver import Assertion, QueryCache, SolverOptions, solve
from hoare.verifier.translate.predicates import translate
from hoare.verifier.translate.values import Z3_LOCK, SModel, naming

__all__ = ["check_chain", "check_tool", "tool_description"]

ASSUMED = ("the tool is called with arguments of its parameters' types and returns a value "
           "of its return type")


class ToolShapeError(UsageError):
    """A tool the checks cannot describe (no return annotation, a parameter pydantic
    cannot model)."""


def _signature(tool: Any) -> tuple[Callable[..., Any], dict[str, Any], inspect.Signature]:
    target = inspect.unwrap(tool.func)
    try:
        hints = typing.get_type_hints(target, include_extras=True)
    except Exception as error:
        raise ToolShapeError(f"cannot resolve the annotations of {tool.name}: "
                             f"{error}") from error
    return target, hints, inspect.signature(target)


def tool_description(tool: Any, module: str) -> ContractDescription:
    """``tool`` as a contract: its parameters' model in, its return type out."""
    target, hints, signature = _signature(tool)
    if "return" not in hints:
        raise ToolShapeError(f"{tool.name} has no return annotation: its post-conditions "
                             f"cannot be checked (annotate it, e.g. `-> str`)")
    fields: dict[str, Any] = {}
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise ToolShapeError(f"{tool.name} takes *args or **kwargs")
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (hints.get(parameter.name, Any), default)
    try:
        arguments = create_model(f"{tool.name}_arguments", **fields)
        output = type_spec(hints["return"])
    except Exception as error:
        raise ToolShapeError(f"{tool.name}: {type(error).__name__}: {error}") from error
    spec = getattr(tool, "_contracts", None)
    params = tuple(signature.parameters)
    pre = tuple(_adapt(c, params, "pre", i, tool.name, module)
                for i, c in enumerate(spec.preconditions if spec else ()))
    post = tuple(_adapt(c, params, "post", i, tool.name, module)
                 for i, c in enumerate(spec.postconditions if spec else ()))
    holder = type(tool.name, (), {"__module__": module, "__qualname__": tool.name})
    return ContractDescription(holder, f"{module}:{tool.name}", ContractConfig(), False,
                               False, target, "args", type_spec(arguments), output, None,
                               None, None, pre, post)


# -- rewriting a condition into a predicate on the arguments' model -----------------------



class _Rewrite(ast.NodeTransformer):
    """``x`` → ``base.x`` (a parameter by name), ``args["x"]``/``args.get("x")`` →
    ``base.x`` (the arguments' dict), ``r`` → ``value`` (the result)."""

    def __init__(self, by_name: dict[str, str], dicts: dict[str, str],
                 renames: dict[str, str], params: tuple[str, ...]) -> None:
        self.by_name, self.dicts, self.renames, self.params = by_name, dicts, renames, params

    def _field(self, dict_name: str, key: ast.expr) -> ast.expr:
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)
                and key.value in self.params):
            raise Unsupported(f"{dict_name}[...] with a key that is not a parameter name")
        return ast.Attribute(ast.Name(self.dicts[dict_name], ast.Load()), key.value,
                             ast.Load())

    def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
        if isinstance(node.value, ast.Name) and node.value.id in self.dicts:
            return self._field(node.value.id, node.slice)
        self.generic_visit(node)  # rewrites the children in place
        return node

    def visit_Call(self, node: ast.Call) -> ast.expr:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "get" and \
                isinstance(func.value, ast.Name) and func.value.id in self.dicts:
            if node.keywords or not 1 <= len(node.args) <= 2:
                raise Unsupported("args.get with other than (name[, default])")
            return self._field(func.value.id, node.args[0])  # every parameter is bound
        self.generic_visit(node)  # rewrites the children in place
        return node

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id in self.dicts:
            raise Unsupported(f"{node.id} used other than as {node.id}[\"name\"]")
        if node.id in self.by_name:
            return ast.Attribute(ast.Name(self.by_name[node.id], ast.Load()), node.id,
                                 ast.Load())
        if node.id in self.renames:
            return ast.Name(self.renames[node.id], ast.Load())
        return node


def _bound_inside(body: ast.expr) -> set[str]:
    """Names an inner lambda, comprehension or walrus binds (they would shadow)."""
    names: set[str] = set()
    for node in ast.walk(body):
        if isinstance(node, ast.Lambda):
            names |= {a.arg for a in node.args.args + node.args.kwonlyargs}
        elif isinstance(node, ast.comprehension):
            names |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.NamedExpr):
            names.add(node.target.id)
    return names


_COUNTER = itertools.count()


def _rewritten(fn: Callable[..., Any], params: tuple[str, ...], phase: str,
               by_name: tuple[str, ...], needs_args: bool) -> Callable[..., Any]:
    node = function_node(fn)
    if not isinstance(node, ast.Lambda):
        raise Unsupported("a def, not a lambda")
    names = [a.arg for a in node.args.args]
    body = copy.deepcopy(node.body)
    free = {n.id for n in ast.walk(body) if isinstance(n, ast.Name)}
    value, used = (next(f"{base}{'_' * n}" for n in range(8)
                        if f"{base}{'_' * n}" not in free | set(names))
                   for base in ("value", "used"))
    by: dict[str, str] = {}
    dicts: dict[str, str] = {}
    renames: dict[str, str] = {}
    if phase == "pre":
        if by_name:
            by = {name: value for name in by_name}
        elif names:
            dicts = {names[0]: value}
    else:
        if names:
            renames = {names[0]: value}
        if needs_args and len(names) >= 2:
            dicts = {names[1]: used}
    if _bound_inside(body) & {*by, *dicts, *renames}:
        raise Unsupported("a parameter is rebound inside the condition")
    body = _Rewrite(by, dicts, renames, params).visit(body)
    two = phase == "post" and needs_args
    arguments = ast.arguments(posonlyargs=[], args=[ast.arg(value)] + ([ast.arg(used)] if two
                                                                      else []),
                              kwonlyargs=[], kw_defaults=[], defaults=[])
    checked = ast.Call(func=ast.Name("bool", ast.Load()), args=[body], keywords=[])
    lambda_node = ast.Lambda(args=arguments, body=checked)
    filename = f"<hoare tool condition {next(_COUNTER)}>"
    scope = dict(getattr(fn, "__globals__", {}))
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False):
        try:
            scope[name] = cell.cell_contents
        except ValueError:
            continue
    return function_of(lambda_node, filename, scope)


def function_of(lambda_node: ast.Lambda, filename: str, scope: dict[str, Any]
                ) -> Callable[..., Any]:
    """The function of a ``lambda`` AST node, its free names read from ``scope``: the
    node is compiled as a tree (no generated text is evaluated) and its code object
    made a function directly. Its source, one line, goes to ``linecache`` under
    ``filename`` so that the translator reads it as it reads a user's lambda."""
    source = ast.unparse(lambda_node)
    for node in ast.walk(lambda_node):  # one line, as the source linecache holds
        if "lineno" in node._attributes:
            # (a node listing lineno in _attributes has all four; ast.AST declares none)
            for attribute, value in (("lineno", 1), ("end_lineno", 1), ("col_offset", 0),
                                     ("end_col_offset", len(source))):
                setattr(node, attribute, value)
    tree = ast.Expression(body=lambda_node)
    code = compile(tree, filename, "eval", dont_inherit=True)
    (inner,) = [c for c in code.co_consts if isinstance(c, types.CodeType)]
    linecache.cache[filename] = (len(source), None, [source + "\n"], filename)
    return types.FunctionType(inner, scope, "<lambda>")


def _adapt(condition: Any, params: tuple[str, ...], phase: Literal["pre", "post"],
           index: int, tool: str, module: str) -> PredicateSource:
    by_name = tuple(getattr(condition, "by_name", ()) or ())
    needs_args = bool(getattr(condition, "needs_args", False))
    kind = "preconditions" if phase == "pre" else "postconditions"
    try:
        fn = _rewritten(condition.predicate, params, phase, by_name, needs_args)
    except (Unsupported, SourceNotFound, SyntaxError, OSError, TypeError, ValueError) as why:
        fn = _calling(condition, phase, params, needs_args,
                      f"{tool}.{kind}[{index}] is not rewritten into a predicate on the "
                      f"arguments: {why}")
    policy = condition.policy
    return PredicateSource(f"{kind}[{index}]", f"{tool}.{kind}", condition.message or
                           condition.predicate_str, fn, phase,
                           False, phase == "post" and needs_args,
                           policy)


def _calling(condition: Any, phase: str, params: tuple[str, ...], needs_args: bool,
             why: str) -> Callable[..., Any]:
    """The condition called as the tool calls it, with no source the translator can
    read (``why`` names the cause in its ``unknown`` verdicts): concrete searches still
    run it for real."""

    def arguments(model: Any) -> dict[str, Any]:
        return {name: getattr(model, name) for name in params}

    check = condition.check

    def checked_pre(value: Any) -> Any:
        return check(arguments(value))

    def checked_post_with_arguments(value: Any, used: Any) -> Any:
        return check(value, arguments(used))

    def checked_post(value: Any) -> Any:
        return check(value)

    adapted = checked_pre if phase == "pre" else \
        checked_post_with_arguments if needs_args else checked_post
    # a file name never in linecache: the reason shows in "no source for ..."
    adapted.__code__ = adapted.__code__.replace(co_filename=f"<{why}>")
    return adapted


# -- checks ----------------------------------------------------------------------------------


def check_tool(tool: Any, module: str, options: SolverOptions) -> ContractReport:
    """A tool's pre- and post-conditions: satisfiable, not vacuous (``check_contract``)."""
    name = f"{module}:{tool.name}"
    try:
        desc = tool_description(tool, module)
    except ToolShapeError as error:
        report = ContractReport(name)
        report.checks.append(CheckResult("translation", "unknown", str(error)))
        return report
    report = check_contract(desc, options)
    report.notes.append(f"{name}: assuming {ASSUMED}")
    for check in report.checks:
        if ASSUMED not in check.assumptions:
            check.assumptions.append(ASSUMED)
    return report


@in_fresh_context
def check_chain(chain: Any, name: str, options: SolverOptions) -> ContractReport:
    """One ``composition`` check per link of ``chain``."""
    report = ContractReport(name)
    module = name.split(":", 1)[0]
    for index, (a, b, parameter) in enumerate(chain.links()):
        try:
            result = _link(a, b, parameter, module, options, index)
        except ToolShapeError as error:
            result = CheckResult("composition", "unknown", f"link {index}: {error}")
        except Exception as error:  # a verifier bug must not stop the other links
            result = CheckResult("composition", "unknown",
                                 f"internal error: {type(error).__name__}: {error}")
        report.checks.append(result)
    return report


def _link(a: Any, b: Any, parameter: str, module: str, options: SolverOptions,
          index: int) -> CheckResult:
    kind = "composition"
    where = f"link {index}: {a.name} → {b.name}({parameter}=...)"
    _, a_hints, _ = _signature(a)
    _, b_hints, _ = _signature(b)
    if a_hints.get("return") != b_hints.get(parameter, Any) and \
            b_hints.get(parameter, Any) is not Any:
        return CheckResult(kind, "unknown", f"{where}: {a.name} returns "
                           f"{a_hints.get('return')!r} but {parameter} is "
                           f"{b_hints.get(parameter)!r} (the result is passed as it is, not "
                           f"converted; only the same annotation is modelled)")
    a_desc, b_desc = tool_description(a, module), tool_description(b, module)
    cm_a = contract_model(a_desc, prefix=f"t{index}a.")
    cm_b = contract_model(b_desc, prefix=f"t{index}b.")
    b_args = cm_b.input.value
    if not isinstance(b_args, SModel):
        return CheckResult(kind, "unknown", f"{where}: the arguments of {b.name} are not "
                           f"modelled")
    with Z3_LOCK, naming(f"t{index}f."):
        fed = SModel(b_args.cls, {**b_args.fields, parameter: cm_a.output.value},
                     b_args.path, b_args.omit)
        b_pre = [translate(source, [fed], None) for source in b_desc.pre
                 if source.policy is not Policy.IGNORE]
    # B's conditions that do not read the fed parameter constrain the agent's choice of
    # the other arguments: assumed to hold. The others must hold for every result.
    dependent = [t for t in b_pre if t.opaque is not None or _reads(t.source, parameter)]
    independent = [t for t in b_pre if t not in dependent]
    assumptions = [f"{a.name} ran with its pre-conditions met and returned a result its "
                   f"post-conditions accept", ASSUMED]
    assumptions += [f"{b.name}'s other arguments pass {t.label}" for t in independent]
    opaque = [t for t in dependent if t.opaque is not None]
    assertions = type_assertions(cm_a.output) + predicate_assertions(cm_a.post) + \
        type_assertions(cm_a.input) + predicate_assertions(cm_a.pre) + \
        type_assertions(cm_b.input) + predicate_assertions(independent)
    for t in dependent:
        assertions += [Assertion(None, d, "def") for d in t.defs]
    if not dependent:
        return CheckResult(kind, "pass", f"{where}: no pre-condition of {b.name} reads "
                           f"{parameter}: every result is accepted", assumptions=assumptions)
    cache = QueryCache()
    found = None
    unknown = None
    for t in dependent:
        if t.opaque is not None:
            continue
        query = solve([*assertions, Assertion(f"{b.name} rejects it: {t.label}", t.fails(),
                                              "goal")], options, cache=cache)
        if query.status == "sat":
            found = (t, query)
            break
        if query.status == "unknown":
            unknown = unknown or query
    if found is None:
        if unknown is not None:
            return unknown_result(kind, unknown, [])
        if opaque:
            return CheckResult(kind, "unknown", f"{where}: no counterexample among what is "
                               f"translated, but " + "; ".join(
                                   f"{t.name} is opaque ({t.opaque})" for t in opaque),
                               assumptions=assumptions)
        refuted = _search(cm_a, cm_b, a_desc, b_desc, parameter,
                          [t.source for t in dependent], [t.source for t in independent])
        if refuted is not None:
            return CheckResult(kind, "unknown", f"{where}: the translation found no "
                               f"counterexample, but a concrete value refutes it",
                               counterexample=refuted, assumptions=assumptions)
        return CheckResult(kind, "pass", f"{where}: every result {a.name} may return is "
                           f"accepted by {b.name}'s pre-conditions on {parameter}, "
                           f"whatever its other arguments", assumptions=assumptions)
    t, query = found
    assert query.model is not None
    try:
        result_json = model_value(cm_a.output, query.model)
        a_json = model_value(cm_a.input, query.model)
        b_json = model_value(cm_b.input, query.model)
    except WitnessError as error:
        return CheckResult(kind, "unknown", f"{where}: no concrete counterexample: {error}")
    replayed = _replay(a_desc, b_desc, parameter, result_json, a_json, b_json, t.source)
    shown = {"result": result_json, f"{a.name} arguments": a_json,
             f"{b.name} arguments": {**(b_json or {}), parameter: result_json}}
    if replayed is not None:
        return CheckResult(kind, "unknown", f"{where}: the counterexample does not replay "
                           f"({replayed})", counterexample=shown, assumptions=assumptions)
    return CheckResult(kind, "fail", f"{where}: a result {a.name} may return fails "
                       f"{b.name}'s {t.label}", counterexample=shown,
                       constraints=query.core, predicate=t.name, assumptions=assumptions)


def _replay(a: ContractDescription, b: ContractDescription, parameter: str, result_json: Any,
            a_json: Any, b_json: Any, failing: PredicateSource) -> str | None:
    """None when the counterexample holds for real: A's conditions accept the result,
    and ``failing`` rejects B's arguments with it; else why not."""
    ok, result, text = validate(a.output, result_json)
    if not ok:
        return f"the result does not validate: {text}"
    ok, a_args, text = validate(a.input, a_json)
    if not ok:
        return f"{a.name}'s arguments do not validate: {text}"
    for source in (*a.pre, *a.post):
        value = a_args if source.phase == "pre" else result
        if not call_predicate(source, None, value, a_args).passed:
            return f"{a.name}'s {source.id} does not accept it"
    ok, b_args, text = validate(b.input, {**(b_json or {})})
    if not ok:
        return f"{b.name}'s arguments do not validate: {text}"
    fed = b_args.model_copy(update={parameter: result})
    if call_predicate(failing, None, fed).passed:
        return f"{b.name}'s {failing.id} accepts it"
    return None


def _reads(source: PredicateSource, parameter: str) -> bool:
    """Whether the rewritten condition reads the argument ``parameter``."""
    try:
        node = function_node(source.fn)
    except SourceNotFound:
        return True
    if not isinstance(node, ast.Lambda) or not node.args.args:
        return True
    base = node.args.args[0].arg
    return any(isinstance(n, ast.Attribute) and n.attr == parameter and
               isinstance(n.value, ast.Name) and n.value.id == base for n in ast.walk(node))


def _search(cm_a: ContractModel, cm_b: ContractModel, a: ContractDescription,
            b: ContractDescription, parameter: str, dependent: list[PredicateSource],
            independent: list[PredicateSource]) -> Any:
    """A concrete refutation of a ``pass``: a sampled result A's conditions accept,
    with sampled other arguments of B passing its ``independent`` conditions, that one
    of B's ``dependent`` conditions rejects."""
    a_inputs = [(j, v) for j, v in itertools.islice(samples_of(cm_a, "input"), 64)
                if all(call_predicate(s, None, v).passed for s in a.pre)][:8]
    b_inputs = [(j, v) for j, v in itertools.islice(samples_of(cm_b, "input"), 64)
                if all(call_predicate(s, None, v).passed for s in independent)][:8]
    if not a_inputs or not b_inputs:
        return None
    for index, (result_json, result) in enumerate(itertools.islice(samples_of(cm_a, "output"),
                                                                   200)):
        _a_json, a_args = a_inputs[index % len(a_inputs)]
        if not all(call_predicate(s, None, result, a_args).passed for s in a.post):
            continue
        b_json, b_args = b_inputs[index % len(b_inputs)]
        fed = b_args.model_copy(update={parameter: result})
        if not all(call_predicate(s, None, fed).passed for s in dependent):
            return {"result": result_json, f"{b.name} arguments":
                    {**b_json, parameter: result_json}}
    return None

