/-
Mirror of kernel/predicate.py (spec/pipeline.md §3.2): predicates and their evaluation,
every non-ignored predicate, without short-circuit.

A predicate's check is a hook: it returns `PredResult.pass` (a truthy value or `None`),
`PredResult.fail` (a falsy value other than `None`) or `PredResult.raised` (it raised).
-/
import HoareKernel.Outcome

namespace HoareKernel

/-- What one predicate check did. -/
inductive PredResult where
  | pass
  | fail
  | raised (error : HookError)

/-- A named check `check(value, context)`; `context` is the input actually used for
post-conditions and `none` for pre-conditions; `policy` overrides the contract's. Python's
`uses_context = False` (call `check(value)`) is a check that ignores its context here. -/
structure Predicate (α : Type) where
  id : String
  check : α → Option α → PredResult
  message : String
  family : String
  policy : Option Policy := none

/-- The predicate's override if it has one, else the contract's policy (§2.2). -/
def effective_policy {α : Type} (contract_policy : Policy) (predicate : Predicate α) : Policy :=
  match predicate.policy with
  | some policy => policy
  | none => contract_policy

/-- The predicates whose effective policy is not `ignore`, in order. -/
def active {α : Type} (contract_policy : Policy) : List (Predicate α) → List (Predicate α)
  | [] => []
  | p :: ps =>
    if effective_policy contract_policy p = Policy.ignore then active contract_policy ps
    else p :: active contract_policy ps

/-- The violation a check result produces: none on a pass, one otherwise. -/
def verdict_violations {α : Type} (predicate : Predicate α) (policy : Policy) (phase : Phase)
    (attempt : Nat) : PredResult → List Violation
  | PredResult.pass => []
  | PredResult.fail =>
    [{ kind := ViolationKind.predicate, phase := phase, message := predicate.message,
       attempt := attempt, policy := policy, predicate := some predicate.id,
       family := some predicate.family }]
  | PredResult.raised err =>
    [{ kind := ViolationKind.predicate, phase := phase,
       message := if err.message = "" then predicate.message else err.message,
       attempt := attempt, policy := policy, predicate := some predicate.id,
       family := some predicate.family, error_type := some err.error_type }]

/-- Whether a check result counts as passed. -/
def passes : PredResult → Bool
  | PredResult.pass => true
  | PredResult.fail => false
  | PredResult.raised _ => false

/-- 1 for a failing check result, 0 for a passing one. -/
def failing : PredResult → Nat
  | PredResult.pass => 0
  | PredResult.fail => 1
  | PredResult.raised _ => 1

/-- The violations of a list of (already filtered) predicates on one value. -/
def judge {α : Type} (value : α) (context : Option α) (phase : Phase) (attempt : Nat)
    (contract_policy : Policy) : List (Predicate α) → List Violation
  | [] => []
  | p :: ps =>
    verdict_violations p (effective_policy contract_policy p) phase attempt (p.check value context)
      ++ judge value context phase attempt contract_policy ps

/-- `(family, passed)` for each predicate, in order. -/
def family_results {α : Type} (value : α) (context : Option α) :
    List (Predicate α) → List (String × Bool)
  | [] => []
  | p :: ps => (p.family, passes (p.check value context)) :: family_results value context ps

/-- Python's `families` dict: one entry per family, in first-seen order, passed when all
of its predicates passed. -/
def note_family (family : String) (passed : Bool) :
    List (String × Bool) → List (String × Bool)
  | [] => [(family, passed)]
  | entry :: rest =>
    if entry.1 = family then (entry.1, entry.2 && passed) :: rest
    else entry :: note_family family passed rest

/-- Fold `note_family` over the results, left to right. -/
def tally_families (families : List (String × Bool)) :
    List (String × Bool) → List (String × Bool)
  | [] => families
  | entry :: rest => tally_families (note_family entry.1 entry.2 families) rest

/-- What one evaluation did: the predicates evaluated, the violations, the trials. -/
structure Evaluation (α : Type) where
  evaluated : List (Predicate α)
  violations : List Violation
  trials : List (String × Bool)

/-- Evaluate every non-ignored predicate on `value` (Python: `evaluate`). -/
def evaluate {α : Type} (predicates : List (Predicate α)) (value : α) (context : Option α)
    (phase : Phase) (attempt : Nat) (contract_policy : Policy) : Evaluation α :=
  let evaluated := active contract_policy predicates
  { evaluated := evaluated,
    violations := judge value context phase attempt contract_policy evaluated,
    trials := tally_families [] (family_results value context evaluated) }

end HoareKernel
