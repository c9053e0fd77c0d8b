/-
Mirror of kernel/outcome.py (spec/pipeline.md §1, §5): phases, violations, attempts and
the outcome record.

Modelling choices: a value of the call (input, candidate, engine answer, result) has one
type `α`, a parameter of everything; an exception raised by a hook is a `HookError`
(class name and text). `Outcome.usage` and `Outcome.timings_ns` are not modelled (token
counts and clock readings never decide anything in the kernel).
-/
import HoareKernel.Config

namespace HoareKernel

/-- The phases of one call, in the order they run (§1). -/
inductive Phase where
  | input
  | pre
  | act
  | preflight
  | post
  | forward
  | result
  deriving Repr, DecidableEq

/-- Why a check failed (§5.1). -/
inductive ViolationKind where
  | type
  | predicate
  | error
  | unsatisfiable
  deriving Repr, DecidableEq

/-- Answer of the pre-flight satisfiability hook (§3.4). -/
inductive Verdict where
  | satisfiable
  | unsatisfiable
  | unknown
  deriving Repr, DecidableEq

/-- A pre-flight verdict with the reason shown to the user. -/
structure PreflightResult where
  verdict : Verdict
  reason : String := ""
  deriving Repr

/-- An `Exception` raised by a hook: its class name and its text; `fatal` when it is a
`FatalEngineError` (an engine failure that retrying cannot fix, §4.4). -/
structure HookError where
  error_type : String
  message : String
  fatal : Bool := false
  deriving Repr

/-- One failed check; `attempt` is 0 for the caller's own input, `n` for the n-th
engine call of its stage; `policy` is the effective policy that governed it. -/
structure Violation where
  kind : ViolationKind
  phase : Phase
  message : String
  attempt : Nat
  policy : Policy
  predicate : Option String := none
  family : Option String := none
  error_type : Option String := none
  deriving Repr

/-- One engine call: the `number`-th of its stage, what it was told, what it said, what
was wrong with it. -/
structure Attempt (α : Type) where
  phase : Phase
  number : Nat
  raw : Option α
  feedback : List Violation
  violations : List Violation

/-- The `ContractViolationError` an outcome describes (§3.7): the deciding policy and
the violations of the call. -/
structure ContractViolationError where
  policy : Policy
  violations : List Violation

/-- The complete record of one call (§5). -/
structure Outcome (α : Type) where
  success : Bool
  result : Option α
  original_input : α
  input_used : α
  policy : Policy
  violations : List Violation
  attempts : List (Attempt α)
  trials : List (String × Bool)
  delays : List Nat
  preflight : Option PreflightResult := none
  exception : Option ContractViolationError := none
  handler_error : Option String := none

/-- How many attempts belong to `phase`. -/
def phase_count {α : Type} (phase : Phase) : List (Attempt α) → Nat
  | [] => 0
  | a :: rest => (if a.phase = phase then 1 else 0) + phase_count phase rest

/-- Engine calls made by the post stage. -/
def Outcome.generation_attempts {α : Type} (outcome : Outcome α) : Nat :=
  phase_count Phase.post outcome.attempts

/-- Engine calls made by the pre stage. -/
def Outcome.pre_remedies {α : Type} (outcome : Outcome α) : Nat :=
  phase_count Phase.pre outcome.attempts

/-- Generation attempts after the first one. -/
def Outcome.post_remedies {α : Type} (outcome : Outcome α) : Nat :=
  outcome.generation_attempts - 1

end HoareKernel
