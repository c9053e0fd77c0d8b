/-
Properties of single events: the predicates on events that the invariants are built from, and the lemmas about lists of them (§1, §6).
Part of the proofs of spec/invariants.toml about the model of Pipeline.lean; see
Invariants.lean for the order of the parts.
-/
import HoareKernel.Pipeline

namespace HoareKernel

/-! ## Properties of single events -/

/-- What the events of a repair stage satisfy: evaluations of exactly the non-ignored
predicates of their phase, and bounded sleeps; no phase marks, no forward. -/
def stage_event {α : Type} (cfg : ContractConfig) (hooks : Hooks α) : Event α → Prop
  | Event.enter _ => False
  | Event.evaluate phase _ predicates _ => predicates = active cfg.policy (conditions hooks phase)
  | Event.fail _ => True
  | Event.generate _ _ _ _ _ => True
  | Event.attempt _ => True
  | Event.sleep delay => delay ≤ cfg.retry.max_delay + cfg.retry.jitter
  | Event.preflight _ => False
  | Event.handler => False
  | Event.forward _ => False
  | Event.check_result _ => False

/-- What the events of a contract (phases 1–5) satisfy. -/
def contract_event {α : Type} (cfg : ContractConfig) (hooks : Hooks α) : Event α → Prop
  | Event.enter _ => True
  | Event.evaluate phase _ predicates _ => predicates = active cfg.policy (conditions hooks phase)
  | Event.fail _ => True
  | Event.generate _ _ _ _ _ => True
  | Event.attempt _ => True
  | Event.sleep delay => delay ≤ cfg.retry.max_delay + cfg.retry.jitter
  | Event.preflight _ => True
  | Event.handler => False
  | Event.forward _ => False
  | Event.check_result _ => False

def after_contract : Phase → Prop
  | Phase.input => False
  | Phase.pre => False
  | Phase.act => False
  | Phase.preflight => False
  | Phase.post => False
  | Phase.forward => True
  | Phase.result => True

/-- What the events after the contract (phases 6–7) are. -/
def finishing {α : Type} : Event α → Prop
  | Event.enter phase => after_contract phase
  | Event.evaluate _ _ _ _ => False
  | Event.fail _ => False
  | Event.generate _ _ _ _ _ => False
  | Event.attempt _ => False
  | Event.sleep _ => False
  | Event.preflight _ => False
  | Event.handler => True
  | Event.forward _ => True
  | Event.check_result _ => True

/-- An evaluation evaluates exactly the non-ignored predicates of its phase. -/
def evaluates_all {α : Type} (contract_policy : Policy) (hooks : Hooks α) : Event α → Prop
  | Event.enter _ => True
  | Event.evaluate phase _ predicates _ =>
    predicates = active contract_policy (conditions hooks phase)
  | Event.fail _ => True
  | Event.generate _ _ _ _ _ => True
  | Event.attempt _ => True
  | Event.sleep _ => True
  | Event.preflight _ => True
  | Event.handler => True
  | Event.forward _ => True
  | Event.check_result _ => True

/-- An evaluation evaluates no predicate whose effective policy is `ignore`. -/
def never_ignored {α : Type} (contract_policy : Policy) : Event α → Prop
  | Event.enter _ => True
  | Event.evaluate _ _ predicates _ =>
    every (fun p => effective_policy contract_policy p ≠ Policy.ignore) predicates
  | Event.fail _ => True
  | Event.generate _ _ _ _ _ => True
  | Event.attempt _ => True
  | Event.sleep _ => True
  | Event.preflight _ => True
  | Event.handler => True
  | Event.forward _ => True
  | Event.check_result _ => True

/-- An evaluation evaluates no predicate at all. -/
def evaluates_nothing {α : Type} : Event α → Prop
  | Event.enter _ => True
  | Event.evaluate _ _ predicates _ => predicates = []
  | Event.fail _ => True
  | Event.generate _ _ _ _ _ => True
  | Event.attempt _ => True
  | Event.sleep _ => True
  | Event.preflight _ => True
  | Event.handler => True
  | Event.forward _ => True
  | Event.check_result _ => True

def entered_post : Phase → Nat
  | Phase.input => 0
  | Phase.pre => 0
  | Phase.act => 0
  | Phase.preflight => 0
  | Phase.post => 1
  | Phase.forward => 0
  | Phase.result => 0

/-- 1 for the event that starts the post stage. -/
def post_entered {α : Type} : Event α → Nat
  | Event.enter phase => entered_post phase
  | Event.evaluate _ _ _ _ => 0
  | Event.fail _ => 0
  | Event.generate _ _ _ _ _ => 0
  | Event.attempt _ => 0
  | Event.sleep _ => 0
  | Event.preflight _ => 0
  | Event.handler => 0
  | Event.forward _ => 0
  | Event.check_result _ => 0

/-- 1 for a call of `forward`. -/
def forward_count {α : Type} : Event α → Nat
  | Event.enter _ => 0
  | Event.evaluate _ _ _ _ => 0
  | Event.fail _ => 0
  | Event.generate _ _ _ _ _ => 0
  | Event.attempt _ => 0
  | Event.sleep _ => 0
  | Event.preflight _ => 0
  | Event.handler => 0
  | Event.forward _ => 1
  | Event.check_result _ => 0

/-- 1 for a call of the handler. -/
def handler_count {α : Type} : Event α → Nat
  | Event.enter _ => 0
  | Event.evaluate _ _ _ _ => 0
  | Event.fail _ => 0
  | Event.generate _ _ _ _ _ => 0
  | Event.attempt _ => 0
  | Event.sleep _ => 0
  | Event.preflight _ => 0
  | Event.handler => 1
  | Event.forward _ => 0
  | Event.check_result _ => 0

/-- 1 for an application of the final result type check. -/
def check_count {α : Type} : Event α → Nat
  | Event.enter _ => 0
  | Event.evaluate _ _ _ _ => 0
  | Event.fail _ => 0
  | Event.generate _ _ _ _ _ => 0
  | Event.attempt _ => 0
  | Event.sleep _ => 0
  | Event.preflight _ => 0
  | Event.handler => 0
  | Event.forward _ => 0
  | Event.check_result _ => 1

/-- 1 for an `unsatisfiable` violation. -/
def unsat_count (v : Violation) : Nat :=
  match v.kind with
  | ViolationKind.type => 0
  | ViolationKind.predicate => 0
  | ViolationKind.error => 0
  | ViolationKind.unsatisfiable => 1

/-- The attempts of a stage, whose checked candidates before them had the violations
`history`, received the feedback of §4.2. -/
def fed {α : Type} (accumulate : Bool) : List (List Violation) → List (Attempt α) → Prop
  | _, [] => True
  | history, a :: rest =>
    a.feedback = feedback accumulate history ∧ fed accumulate (history ++ [a.violations]) rest

theorem fed_nil {α : Type} (accumulate : Bool) (history : List (List Violation)) :
    fed (α := α) accumulate history [] := trivial

theorem fed_cons {α : Type} {accumulate : Bool} {history : List (List Violation)}
    {a : Attempt α} {rest : List (Attempt α)} (h1 : a.feedback = feedback accumulate history)
    (h2 : fed accumulate (history ++ [a.violations]) rest) : fed accumulate history (a :: rest) :=
  And.intro h1 h2

theorem stage_to_contract {α : Type} (cfg : ContractConfig) (hooks : Hooks α) :
    ∀ (e : Event α), stage_event cfg hooks e → contract_event cfg hooks e := by
  intro e h
  cases e <;> first | exact h | exact trivial

theorem contract_to_evaluates {α : Type} (cfg : ContractConfig) (hooks : Hooks α) :
    ∀ (e : Event α), contract_event cfg hooks e → evaluates_all cfg.policy hooks e := by
  intro e h
  cases e <;> first | exact h | exact trivial

theorem finishing_to_evaluates {α : Type} (cfg : ContractConfig) (hooks : Hooks α) :
    ∀ (e : Event α), finishing e → evaluates_all cfg.policy hooks e := by
  intro e h
  cases e <;> first | exact trivial | exact absurd h id

theorem stage_post_entered {α : Type} (cfg : ContractConfig) (hooks : Hooks α) :
    ∀ (e : Event α), stage_event cfg hooks e → post_entered e = 0 := by
  intro e h
  cases e <;> first | rfl | exact absurd h id

theorem contract_forward {α : Type} (cfg : ContractConfig) (hooks : Hooks α) :
    ∀ (e : Event α), contract_event cfg hooks e → forward_count e = 0 := by
  intro e h
  cases e <;> first | rfl | exact absurd h id

theorem contract_handler {α : Type} (cfg : ContractConfig) (hooks : Hooks α) :
    ∀ (e : Event α), contract_event cfg hooks e → handler_count e = 0 := by
  intro e h
  cases e <;> first | rfl | exact absurd h id

theorem contract_check {α : Type} (cfg : ContractConfig) (hooks : Hooks α) :
    ∀ (e : Event α), contract_event cfg hooks e → check_count e = 0 := by
  intro e h
  cases e <;> first | rfl | exact absurd h id

theorem finishing_quick {α : Type} : ∀ (e : Event α), finishing e → quick_part e = 0 := by
  intro e h
  cases e <;> first | rfl | exact absurd h id

theorem finishing_beats {α : Type} : ∀ (e : Event α), finishing e → beat_part e = [] := by
  intro e h
  cases e <;> first | rfl | exact absurd h id

theorem finishing_post_entered {α : Type} : ∀ (e : Event α), finishing e → post_entered e = 0 := by
  intro e h
  cases e with
  | enter p => cases p <;> first | rfl | exact absurd h id
  | evaluate _ _ _ _ => rfl
  | fail _ => rfl
  | generate _ _ _ _ _ => rfl
  | attempt _ => rfl
  | sleep _ => rfl
  | preflight _ => rfl
  | handler => rfl
  | forward _ => rfl
  | check_result _ => rfl

theorem finishing_fails {α : Type} : ∀ (e : Event α), finishing e → fail_part e = [] := by
  intro e h
  cases e <;> first | rfl | exact absurd h id

theorem finishing_sleeps {α : Type} : ∀ (e : Event α), finishing e → sleep_part e = [] := by
  intro e h
  cases e <;> first | rfl | exact absurd h id

theorem contract_forward_part {α : Type} (cfg : ContractConfig) (hooks : Hooks α) :
    ∀ (e : Event α), contract_event cfg hooks e → forward_part e = [] := by
  intro e h
  cases e <;> first | rfl | exact absurd h id

/-- `collect` of parts that are all empty. -/
theorem collect_eq_nil {β γ : Type} {P : β → Prop} (part : β → List γ)
    (hp : ∀ x, P x → part x = []) : ∀ (l : List β), every P l → collect part l = [] := by
  intro l
  induction l with
  | nil => intro _; rfl
  | cons x xs ih =>
    intro h
    have h1 := hp x (every_head h)
    have h2 := ih (every_tail h)
    simp only [collect_cons, h1, h2, List.nil_append]

/-- The delays recorded by events satisfying `contract_event` or `finishing` are bounded. -/
theorem delays_bounded {α : Type} (cfg : ContractConfig) (hooks : Hooks α)
    (P : Event α → Prop)
    (hP : ∀ e, P e → ∀ d, e = Event.sleep d → d ≤ cfg.retry.max_delay + cfg.retry.jitter) :
    ∀ (l : List (Event α)), every P l →
      every (fun d => d ≤ cfg.retry.max_delay + cfg.retry.jitter) (delays_of l) := by
  intro l
  induction l with
  | nil => intro _; exact every_nil
  | cons e es ih =>
    intro h
    have h2 := ih (every_tail h)
    have hd : every (fun d => d ≤ cfg.retry.max_delay + cfg.retry.jitter) (sleep_part e) := by
      cases e with
      | sleep d =>
        have hh := every_head h
        exact every_cons (hP _ hh d rfl) every_nil
      | enter _ => exact every_nil
      | evaluate _ _ _ _ => exact every_nil
      | fail _ => exact every_nil
      | generate _ _ _ _ _ => exact every_nil
      | attempt _ => exact every_nil
      | preflight _ => exact every_nil
      | handler => exact every_nil
      | forward _ => exact every_nil
      | check_result _ => exact every_nil
    exact every_append hd h2

end HoareKernel
