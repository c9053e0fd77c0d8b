/-
Proofs of the invariants of spec/invariants.toml (scope `call`), about the model of
Pipeline.lean. Each invariant has one theorem named as its `lean` entry, with a
docstring naming the invariant id; the statistics invariants are in Stats.lean.

Every theorem holds for all hooks, engines and random sources, failing ones included.
The lemmas first follow the structure of the model: an engine call (`attempt_once`), the
bounded loop (`stage_loop`), the two stages, phases 3–5 (`after_pre`), the contract, and
phases 6–7 (`conclude`). A call's trace is the contract's trace followed by `conclude`'s.
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
    simp only [collect, h1, h2, List.nil_append]

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

/-! ## Evaluation (§3.2) -/

theorem verdict_length {α : Type} (p : Predicate α) (policy : Policy) (phase : Phase)
    (attempt : Nat) (r : PredResult) : (verdict_violations p policy phase attempt r).length = failing r := by
  cases r <;> rfl

theorem judge_length {α : Type} (value : α) (context : Option α) (phase : Phase) (attempt : Nat)
    (cp : Policy) : ∀ (ps : List (Predicate α)),
      (judge value context phase attempt cp ps).length = tally (fun p => failing (p.check value context)) ps := by
  intro ps
  induction ps with
  | nil => rfl
  | cons p ps ih =>
    have h1 := verdict_length p (effective_policy cp p) phase attempt (p.check value context)
    have h2 : (judge value context phase attempt cp (p :: ps)).length =
        (verdict_violations p (effective_policy cp p) phase attempt (p.check value context)).length +
          (judge value context phase attempt cp ps).length := by
      simp only [judge, List.length_append]
    have h3 : tally (fun p => failing (p.check value context)) (p :: ps) =
        failing (p.check value context) + tally (fun p => failing (p.check value context)) ps := rfl
    omega

theorem judge_nil_passes {α : Type} (value : α) (context : Option α) (phase : Phase) (attempt : Nat)
    (cp : Policy) : ∀ (ps : List (Predicate α)), judge value context phase attempt cp ps = [] →
      every (fun p => p.check value context = PredResult.pass) ps := by
  intro ps
  induction ps with
  | nil => intro _; exact every_nil
  | cons p ps ih =>
    intro h
    have hlen : (judge value context phase attempt cp (p :: ps)).length = 0 := congrArg List.length h
    have h1 := judge_length value context phase attempt cp (p :: ps)
    have h3 : tally (fun p => failing (p.check value context)) (p :: ps) =
        failing (p.check value context) + tally (fun p => failing (p.check value context)) ps := rfl
    cases hc : p.check value context with
    | pass =>
      have e : judge value context phase attempt cp (p :: ps) = judge value context phase attempt cp ps := by
        simp only [judge, hc, verdict_violations, List.nil_append]
      exact every_cons hc (ih (e.symm.trans h))
    | fail =>
      exfalso
      have hf : failing (p.check value context) = 1 := congrArg failing hc
      omega
    | raised err =>
      exfalso
      have hf : failing (p.check value context) = 1 := congrArg failing hc
      omega

theorem active_not_ignored {α : Type} (cp : Policy) : ∀ (ps : List (Predicate α)),
    every (fun p => effective_policy cp p ≠ Policy.ignore) (active cp ps) := by
  intro ps
  induction ps with
  | nil => exact every_nil
  | cons p ps ih =>
    by_cases h : effective_policy cp p = Policy.ignore
    · have e : active cp (p :: ps) = active cp ps := if_pos h
      rw [e]
      exact ih
    · have e : active cp (p :: ps) = p :: active cp ps := if_neg h
      rw [e]
      exact every_cons h ih

theorem active_sub {α : Type} (cp : Policy) (Q : Predicate α → Prop) :
    ∀ (ps : List (Predicate α)), every Q ps → every Q (active cp ps) := by
  intro ps
  induction ps with
  | nil => intro _; exact every_nil
  | cons p ps ih =>
    intro h
    by_cases hp : effective_policy cp p = Policy.ignore
    · have e : active cp (p :: ps) = active cp ps := if_pos hp
      rw [e]
      exact ih (every_tail h)
    · have e : active cp (p :: ps) = p :: active cp ps := if_neg hp
      rw [e]
      have hh := every_head h
      exact every_cons hh (ih (every_tail h))

theorem active_ignore_empty {α : Type} : ∀ (ps : List (Predicate α)),
    every (fun p => p.policy = none) ps → active Policy.ignore ps = [] := by
  intro ps
  induction ps with
  | nil => intro _; rfl
  | cons p ps ih =>
    intro h
    have hh := every_head h
    have hn : p.policy = none := hh
    have hp : effective_policy Policy.ignore p = Policy.ignore := by
      simp only [effective_policy, hn]
    have e : active Policy.ignore (p :: ps) = active Policy.ignore ps := if_pos hp
    rw [e]
    exact ih (every_tail h)

theorem verdict_ranked {α : Type} (p : Predicate α) (policy : Policy) (phase : Phase)
    (attempt : Nat) (r : Nat) (h : policy.rank ≤ r) : ∀ (res : PredResult),
      every (fun v : Violation => v.policy.rank ≤ r) (verdict_violations p policy phase attempt res) := by
  intro res
  cases res with
  | pass => exact every_nil
  | fail => exact every_cons h every_nil
  | raised _ => exact every_cons h every_nil

theorem judge_ranked {α : Type} (value : α) (context : Option α) (phase : Phase) (attempt : Nat)
    (cp : Policy) (r : Nat) : ∀ (ps : List (Predicate α)),
      every (fun p => (effective_policy cp p).rank ≤ r) ps →
      every (fun v : Violation => v.policy.rank ≤ r) (judge value context phase attempt cp ps) := by
  intro ps
  induction ps with
  | nil => intro _; exact every_nil
  | cons p ps ih =>
    intro h
    have hh := every_head h
    have hp : (effective_policy cp p).rank ≤ r := hh
    exact every_append
      (verdict_ranked p (effective_policy cp p) phase attempt r hp (p.check value context))
      (ih (every_tail h))

theorem evaluate_ranked {α : Type} (preds : List (Predicate α)) (value : α) (context : Option α)
    (phase : Phase) (attempt : Nat) (cp : Policy) (r : Nat)
    (h : every (fun p => (effective_policy cp p).rank ≤ r) preds) :
    every (fun v : Violation => v.policy.rank ≤ r) (evaluate preds value context phase attempt cp).violations :=
  judge_ranked value context phase attempt cp r (active cp preds)
    (active_sub cp (fun p => (effective_policy cp p).rank ≤ r) preds h)

/-! ## Policies -/

theorem strictest_ranked (r : Nat) : ∀ (ps : List Policy),
    every (fun p : Policy => p.rank ≤ r) ps → (strictest ps).rank ≤ r := by
  intro ps
  induction ps with
  | nil => intro _; exact Nat.zero_le r
  | cons p ps ih =>
    intro h
    have hh := every_head h
    have h1 : p.rank ≤ r := hh
    have h2 := ih (every_tail h)
    show (stricter p (strictest ps)).rank ≤ r
    unfold stricter
    split
    · exact h1
    · exact h2

theorem policies_ranked (r : Nat) : ∀ (vs : List Violation),
    every (fun v : Violation => v.policy.rank ≤ r) vs → every (fun p : Policy => p.rank ≤ r) (policies vs) := by
  intro vs
  induction vs with
  | nil => intro _; exact every_nil
  | cons v vs ih =>
    intro h
    have hh := every_head h
    have hv : v.policy.rank ≤ r := hh
    exact every_cons hv (ih (every_tail h))

theorem latest_ranked (r : Nat) : ∀ (hist : List (List Violation)),
    every (fun vs => every (fun v : Violation => v.policy.rank ≤ r) vs) hist →
    every (fun v : Violation => v.policy.rank ≤ r) (latest hist) := by
  intro hist
  induction hist with
  | nil => intro _; exact every_nil
  | cons vs rest ih =>
    intro h
    cases rest with
    | nil =>
      have hh := every_head h
      exact hh
    | cons w ws => exact ih (every_tail h)

theorem quick_ranked (r : Nat) (hr : r ≤ 2) : ∀ (fs : List Violation),
    every (fun v : Violation => v.policy.rank ≤ r) fs → quick fs = false := by
  intro fs
  induction fs with
  | nil => intro _; rfl
  | cons v vs ih =>
    intro h
    have hh := every_head h
    have h1 : v.policy.rank ≤ r := hh
    have h2 := ih (every_tail h)
    cases hp : v.policy with
    | ignore => simp only [quick, hp, h2]
    | observe => simp only [quick, hp, h2]
    | enforce => simp only [quick, hp, h2]
    | quick_enforce =>
      exfalso
      rw [hp] at h1
      have h3 : Policy.quick_enforce.rank = 3 := rfl
      omega

theorem quick_single (v : Violation) (h : quick [v] = true) : v.policy = Policy.quick_enforce := by
  revert h
  cases hp : v.policy with
  | ignore => simp only [quick, hp] <;> intro h <;> cases h
  | observe => simp only [quick, hp] <;> intro h <;> cases h
  | enforce => simp only [quick, hp] <;> intro h <;> cases h
  | quick_enforce => intro _; rfl

/-! ## One engine call -/

theorem attempt_shape {α : Type} (engine : Engine α) (hooks : Hooks α) (cfg : ContractConfig)
    (phase : Phase) (check : α → α → Except HookError α) (context : α → Option α) (call : Nat)
    (subject : α) (fb : List Violation) (previous : Option α) :
    (attempt_once engine hooks cfg phase check context call subject fb previous).trace = [] ∨
    ∃ trials, (attempt_once engine hooks cfg phase check context call subject fb previous).trace =
      [Event.evaluate phase call (active cfg.policy (conditions hooks phase)) trials] := by
  cases he : engine phase call subject fb previous with
  | error err =>
    left
    simp only [attempt_once, he]
  | ok raw =>
    cases hc : check raw subject with
    | error err =>
      left
      simp only [attempt_once, he, hc]
    | ok cand =>
      right
      simp only [attempt_once, he, hc]
      exact ⟨_, rfl⟩

theorem attempt_accepted {α : Type} (engine : Engine α) (hooks : Hooks α) (cfg : ContractConfig)
    (phase : Phase) (check : α → α → Except HookError α) (context : α → Option α) (call : Nat)
    (subject : α) (fb : List Violation) (previous : Option α) (raw cand : α)
    (h : (attempt_once engine hooks cfg phase check context call subject fb previous).checked =
      Checked.accepted raw cand) :
    check raw subject = Except.ok cand ∧
      (evaluate (conditions hooks phase) cand (context subject) phase call cfg.policy).violations = [] := by
  revert h
  cases he : engine phase call subject fb previous with
  | error err => simp only [attempt_once, he] <;> intro h <;> cases h
  | ok raw' =>
    cases hc : check raw' subject with
    | error err => simp only [attempt_once, he, hc] <;> intro h <;> cases h
    | ok cand' =>
      cases hv : (evaluate (conditions hooks phase) cand' (context subject) phase call cfg.policy).violations with
      | nil =>
        simp only [attempt_once, he, hc, hv, verdict_of] <;> intro h <;> cases h <;> exact ⟨hc, hv⟩
      | cons v vs => simp only [attempt_once, he, hc, hv, verdict_of] <;> intro h <;> cases h

theorem attempt_rejected_ranked {α : Type} (engine : Engine α) (hooks : Hooks α)
    (cfg : ContractConfig) (phase : Phase) (check : α → α → Except HookError α)
    (context : α → Option α) (call : Nat) (subject : α) (fb : List Violation)
    (previous : Option α) (r : Nat) (hcp : cfg.policy.rank ≤ r)
    (hpred : every (fun p => (effective_policy cfg.policy p).rank ≤ r) (conditions hooks phase))
    (raw typed : Option α) (fs : List Violation) (fatal : Bool)
    (h : (attempt_once engine hooks cfg phase check context call subject fb previous).checked =
      Checked.rejected raw typed fs fatal) :
    every (fun v : Violation => v.policy.rank ≤ r) fs := by
  revert h
  cases he : engine phase call subject fb previous with
  | error err =>
    simp only [attempt_once, he] <;> intro h <;> cases h <;> exact every_cons hcp every_nil
  | ok raw' =>
    cases hc : check raw' subject with
    | error err =>
      simp only [attempt_once, he, hc] <;> intro h <;> cases h <;> exact every_cons hcp every_nil
    | ok cand' =>
      cases hv : (evaluate (conditions hooks phase) cand' (context subject) phase call cfg.policy).violations with
      | nil => simp only [attempt_once, he, hc, hv, verdict_of] <;> intro h <;> cases h
      | cons v vs =>
        have hr := evaluate_ranked (conditions hooks phase) cand' (context subject) phase call
          cfg.policy r hpred
        rw [hv] at hr
        simp only [attempt_once, he, hc, hv, verdict_of] <;> intro h <;> cases h <;> exact hr

theorem attempt_beats {α : Type} (engine : Engine α) (hooks : Hooks α) (cfg : ContractConfig)
    (phase : Phase) (check : α → α → Except HookError α) (context : α → Option α) (call : Nat)
    (subject : α) (fb : List Violation) (previous : Option α) :
    beats (attempt_once engine hooks cfg phase check context call subject fb previous).trace = [] := by
  rcases attempt_shape engine hooks cfg phase check context call subject fb previous with h | ⟨trials, h⟩ <;>
    rw [h] <;> rfl

theorem attempt_quick {α : Type} (engine : Engine α) (hooks : Hooks α) (cfg : ContractConfig)
    (phase : Phase) (check : α → α → Except HookError α) (context : α → Option α) (call : Nat)
    (subject : α) (fb : List Violation) (previous : Option α) :
    tally quick_part (attempt_once engine hooks cfg phase check context call subject fb previous).trace = 0 := by
  rcases attempt_shape engine hooks cfg phase check context call subject fb previous with h | ⟨trials, h⟩ <;>
    rw [h] <;> rfl

theorem attempt_attempts {α : Type} (engine : Engine α) (hooks : Hooks α) (cfg : ContractConfig)
    (phase : Phase) (check : α → α → Except HookError α) (context : α → Option α) (call : Nat)
    (subject : α) (fb : List Violation) (previous : Option α) :
    attempts_of (attempt_once engine hooks cfg phase check context call subject fb previous).trace = [] := by
  rcases attempt_shape engine hooks cfg phase check context call subject fb previous with h | ⟨trials, h⟩ <;>
    rw [h] <;> rfl

theorem attempt_every {α : Type} (engine : Engine α) (hooks : Hooks α) (cfg : ContractConfig)
    (phase : Phase) (check : α → α → Except HookError α) (context : α → Option α) (call : Nat)
    (subject : α) (fb : List Violation) (previous : Option α) :
    every (stage_event cfg hooks) (attempt_once engine hooks cfg phase check context call subject fb previous).trace := by
  rcases attempt_shape engine hooks cfg phase check context call subject fb previous with h | ⟨trials, h⟩
  · rw [h]
    exact every_nil
  · rw [h]
    exact every_cons rfl every_nil

/-! ## The events before the check of an engine answer -/

theorem pause_later {α : Type} (cfg : ContractConfig) (random : Phase → Nat → Nat) (phase : Phase)
    (call : Nat) (h : 2 ≤ call) :
    (pause cfg random phase call : List (Event α)) =
      [Event.sleep (backoff_delay cfg.retry (call - 1) (random phase (call - 1)))] :=
  if_pos (by omega)

theorem pause_first {α : Type} (cfg : ContractConfig) (random : Phase → Nat → Nat) (phase : Phase)
    (call : Nat) (h : call ≤ 1) : (pause cfg random phase call : List (Event α)) = [] :=
  if_neg (by omega)

theorem pause_shape {α : Type} (cfg : ContractConfig) (random : Phase → Nat → Nat) (phase : Phase)
    (call : Nat) :
    (pause cfg random phase call : List (Event α)) = [] ∨
    (pause cfg random phase call : List (Event α)) =
      [Event.sleep (backoff_delay cfg.retry (call - 1) (random phase (call - 1)))] := by
  by_cases h : 2 ≤ call
  · exact Or.inr (pause_later cfg random phase call h)
  · exact Or.inl (pause_first cfg random phase call (by omega))

theorem pause_quick {α : Type} (cfg : ContractConfig) (random : Phase → Nat → Nat) (phase : Phase)
    (call : Nat) : tally quick_part (pause cfg random phase call : List (Event α)) = 0 := by
  rcases pause_shape (α := α) cfg random phase call with h | h <;> rw [h] <;> rfl

theorem pause_attempts {α : Type} (cfg : ContractConfig) (random : Phase → Nat → Nat) (phase : Phase)
    (call : Nat) : attempts_of (pause cfg random phase call : List (Event α)) = [] := by
  rcases pause_shape (α := α) cfg random phase call with h | h <;> rw [h] <;> rfl

theorem pause_every {α : Type} (cfg : ContractConfig) (hooks : Hooks α) (random : Phase → Nat → Nat)
    (phase : Phase) (call : Nat) : every (stage_event cfg hooks) (pause cfg random phase call : List (Event α)) := by
  rcases pause_shape (α := α) cfg random phase call with h | h
  · rw [h]
    exact every_nil
  · rw [h]
    exact every_cons (backoff_delay_le cfg.retry (call - 1) (random phase (call - 1))) every_nil

theorem pause_beats_later {α : Type} (cfg : ContractConfig) (random : Phase → Nat → Nat)
    (phase : Phase) (call : Nat) (h : 2 ≤ call) :
    beats (pause cfg random phase call : List (Event α)) = [Beat.pause] := by
  rw [pause_later cfg random phase call h] <;> rfl

theorem pause_beats_first {α : Type} (cfg : ContractConfig) (random : Phase → Nat → Nat)
    (phase : Phase) (call : Nat) (h : call ≤ 1) :
    beats (pause cfg random phase call : List (Event α)) = [] := by
  rw [pause_first cfg random phase call h] <;> rfl

theorem head_beats {α : Type} (engine : Engine α) (random : Phase → Nat → Nat) (hooks : Hooks α)
    (cfg : ContractConfig) (phase : Phase) (check : α → α → Except HookError α)
    (context : α → Option α) (call : Nat) (subject : α) (history : List (List Violation))
    (previous : Option α) :
    beats (lead cfg random phase call subject (feedback cfg.accumulate_errors history) previous
      (attempt_once engine hooks cfg phase check context call subject
        (feedback cfg.accumulate_errors history) previous).trace) =
    beats (pause cfg random phase call : List (Event α)) ++ [Beat.call phase] := by
  have ht := attempt_beats engine hooks cfg phase check context call subject
    (feedback cfg.accumulate_errors history) previous
  simp only [lead, beats_append, beats_cons, beat_part, ht, List.append_nil]

theorem head_quick {α : Type} (engine : Engine α) (random : Phase → Nat → Nat) (hooks : Hooks α)
    (cfg : ContractConfig) (phase : Phase) (check : α → α → Except HookError α)
    (context : α → Option α) (call : Nat) (subject : α) (history : List (List Violation))
    (previous : Option α) :
    tally quick_part (lead cfg random phase call subject (feedback cfg.accumulate_errors history) previous
      (attempt_once engine hooks cfg phase check context call subject
        (feedback cfg.accumulate_errors history) previous).trace) = 0 := by
  have ht := attempt_quick engine hooks cfg phase check context call subject
    (feedback cfg.accumulate_errors history) previous
  have hp := pause_quick (α := α) cfg random phase call
  have hg : quick_part (Event.generate phase call subject (feedback cfg.accumulate_errors history)
    previous) = 0 := rfl
  simp only [lead, tally_append, tally_cons, ht, hp, hg] <;> omega

theorem head_attempts {α : Type} (engine : Engine α) (random : Phase → Nat → Nat) (hooks : Hooks α)
    (cfg : ContractConfig) (phase : Phase) (check : α → α → Except HookError α)
    (context : α → Option α) (call : Nat) (subject : α) (history : List (List Violation))
    (previous : Option α) :
    attempts_of (lead cfg random phase call subject (feedback cfg.accumulate_errors history) previous
      (attempt_once engine hooks cfg phase check context call subject
        (feedback cfg.accumulate_errors history) previous).trace) = [] := by
  have ht := attempt_attempts engine hooks cfg phase check context call subject
    (feedback cfg.accumulate_errors history) previous
  have hp := pause_attempts (α := α) cfg random phase call
  simp only [lead, attempts_of_append, attempts_of_cons, attempt_part, ht, hp, List.nil_append]

theorem head_every {α : Type} (engine : Engine α) (random : Phase → Nat → Nat) (hooks : Hooks α)
    (cfg : ContractConfig) (phase : Phase) (check : α → α → Except HookError α)
    (context : α → Option α) (call : Nat) (subject : α) (history : List (List Violation))
    (previous : Option α) :
    every (stage_event cfg hooks)
      (lead cfg random phase call subject (feedback cfg.accumulate_errors history) previous
        (attempt_once engine hooks cfg phase check context call subject
          (feedback cfg.accumulate_errors history) previous).trace) := by
  have ht := attempt_every engine hooks cfg phase check context call subject
    (feedback cfg.accumulate_errors history) previous
  have hp := pause_every cfg hooks random phase call
  unfold lead
  exact every_append hp (every_cons trivial ht)

/-! ## The bounded loop (§4) -/

section Loop

variable {α : Type} (engine : Engine α) (random : Phase → Nat → Nat) (hooks : Hooks α)
  (cfg : ContractConfig) (phase : Phase) (check : α → α → Except HookError α)
  (context : α → Option α)

theorem loop_every (follow : Bool) :
    ∀ (k call : Nat) (subject : α) (history : List (List Violation)) (previous : Option α),
      every (stage_event cfg hooks)
        (stage_loop engine random hooks cfg phase check context follow k call subject history previous).trace := by
  intro k
  induction k with
  | zero => intro call subject history previous; exact every_nil
  | succ k ih =>
    intro call subject history previous
    have hH := head_every engine random hooks cfg phase check context call subject history previous
    cases hc : (attempt_once engine hooks cfg phase check context call subject
        (feedback cfg.accumulate_errors history) previous).checked with
    | accepted raw candidate =>
      simp only [stage_loop, hc]
      exact every_append hH (every_cons trivial every_nil)
    | rejected raw typed failures fatal =>
      cases hq : quick failures with
      | true =>
        simp only [stage_loop, hc, hq]
        exact every_append hH (every_cons trivial (every_cons trivial every_nil))
      | false =>
        cases hfa : fatal with
        | true =>
          simp only [stage_loop, hc, hq, hfa]
          exact every_append hH (every_cons trivial (every_cons trivial every_nil))
        | false =>
          have hr := ih (call + 1) (next_subject follow subject typed) (history ++ [failures]) raw
          simp only [stage_loop, hc, hq, hfa]
          exact every_append (every_append hH (every_cons trivial (every_cons trivial every_nil))) hr

theorem loop_beats_later (follow : Bool) :
    ∀ (k call : Nat) (subject : α) (history : List (List Violation)) (previous : Option α),
      2 ≤ call →
      ∃ m, beats (stage_loop engine random hooks cfg phase check context follow k call subject
        history previous).trace = pairs phase m ∧ m ≤ k := by
  intro k
  induction k with
  | zero =>
    intro call subject history previous _
    exact ⟨0, rfl, Nat.le_refl 0⟩
  | succ k ih =>
    intro call subject history previous hcall
    have hH := head_beats engine random hooks cfg phase check context call subject history previous
    have hp := pause_beats_later (α := α) cfg random phase call hcall
    have h1 : pairs phase 1 = [Beat.pause, Beat.call phase] := rfl
    cases hc : (attempt_once engine hooks cfg phase check context call subject
        (feedback cfg.accumulate_errors history) previous).checked with
    | accepted raw candidate =>
      refine ⟨1, ?_, by omega⟩
      rw [h1]
      simp only [stage_loop, hc, beats_append, hH, hp, beats_cons, beats_nil, beat_part,
        List.nil_append, List.cons_append, List.append_nil, List.append_assoc]
    | rejected raw typed failures fatal =>
      cases hq : quick failures with
      | true =>
        refine ⟨1, ?_, by omega⟩
        rw [h1]
        simp only [stage_loop, hc, hq, beats_append, hH, hp, beats_cons, beats_nil, beat_part,
          List.nil_append, List.cons_append, List.append_nil, List.append_assoc]
      | false =>
        cases hfa : fatal with
        | true =>
          refine ⟨1, ?_, by omega⟩
          rw [h1]
          simp only [stage_loop, hc, hq, hfa, beats_append, hH, hp, beats_cons, beats_nil, beat_part,
            List.nil_append, List.cons_append, List.append_nil, List.append_assoc]
        | false =>
          obtain ⟨m, hm, hle⟩ := ih (call + 1) (next_subject follow subject typed)
            (history ++ [failures]) raw (by omega)
          refine ⟨m + 1, ?_, by omega⟩
          simp only [stage_loop, hc, hq, hfa, beats_append, hH, hp, hm, beats_cons, beats_nil,
            beat_part, pairs, List.nil_append, List.cons_append, List.append_nil, List.append_assoc]

theorem loop_beats_first (follow : Bool) :
    ∀ (k call : Nat) (subject : α) (history : List (List Violation)) (previous : Option α),
      call = 1 →
      ∃ m, beats (stage_loop engine random hooks cfg phase check context follow k call subject
        history previous).trace = spaced phase m ∧ m ≤ k ∧ (0 < k → 0 < m) := by
  intro k call subject history previous hcall
  cases k with
  | zero => exact ⟨0, rfl, Nat.le_refl 0, fun h => h⟩
  | succ k =>
    have hH := head_beats engine random hooks cfg phase check context call subject history previous
    have hp := pause_beats_first (α := α) cfg random phase call (by omega)
    have h1 : spaced phase 1 = [Beat.call phase] := rfl
    cases hc : (attempt_once engine hooks cfg phase check context call subject
        (feedback cfg.accumulate_errors history) previous).checked with
    | accepted raw candidate =>
      refine ⟨1, ?_, by omega, fun _ => by omega⟩
      rw [h1]
      simp only [stage_loop, hc, beats_append, hH, hp, beats_cons, beats_nil, beat_part,
        List.nil_append, List.cons_append, List.append_nil, List.append_assoc]
    | rejected raw typed failures fatal =>
      cases hq : quick failures with
      | true =>
        refine ⟨1, ?_, by omega, fun _ => by omega⟩
        rw [h1]
        simp only [stage_loop, hc, hq, beats_append, hH, hp, beats_cons, beats_nil, beat_part,
          List.nil_append, List.cons_append, List.append_nil, List.append_assoc]
      | false =>
        cases hfa : fatal with
        | true =>
          refine ⟨1, ?_, by omega, fun _ => by omega⟩
          rw [h1]
          simp only [stage_loop, hc, hq, hfa, beats_append, hH, hp, beats_cons, beats_nil, beat_part,
            List.nil_append, List.cons_append, List.append_nil, List.append_assoc]
        | false =>
          obtain ⟨m, hm, hle⟩ := loop_beats_later engine random hooks cfg phase check context follow
            k (call + 1) (next_subject follow subject typed) (history ++ [failures]) raw (by omega)
          refine ⟨m + 1, ?_, by omega, fun _ => by omega⟩
          simp only [stage_loop, hc, hq, hfa, beats_append, hH, hp, hm, beats_cons, beats_nil,
            beat_part, spaced, List.nil_append, List.cons_append, List.append_nil, List.append_assoc]

theorem loop_quick (follow : Bool) :
    ∀ (k call : Nat) (subject : α) (history : List (List Violation)) (previous : Option α),
      0 < tally quick_part (stage_loop engine random hooks cfg phase check context follow k call
        subject history previous).trace →
      (stage_loop engine random hooks cfg phase check context follow k call subject history
        previous).ending = StageEnd.failed Policy.quick_enforce ∧
      after_quick (stage_loop engine random hooks cfg phase check context follow k call subject
        history previous).trace = [] := by
  intro k
  induction k with
  | zero =>
    intro call subject history previous h
    exfalso
    have h0 : tally quick_part (stage_loop engine random hooks cfg phase check context follow 0 call
      subject history previous).trace = 0 := rfl
    omega
  | succ k ih =>
    intro call subject history previous h
    have hH := head_quick engine random hooks cfg phase check context call subject history previous
    cases hc : (attempt_once engine hooks cfg phase check context call subject
        (feedback cfg.accumulate_errors history) previous).checked with
    | accepted raw candidate =>
      exfalso
      have e2 : quick_part (Event.attempt (record phase call (some raw)
        (feedback cfg.accumulate_errors history) []) : Event α) = 0 := rfl
      simp only [stage_loop, hc, tally_append, tally_cons, tally_nil, e2, quick_part] at h
      omega
    | rejected raw typed failures fatal =>
      have e2 : quick_part (Event.attempt (record phase call raw
        (feedback cfg.accumulate_errors history) failures) : Event α) = 0 := rfl
      cases hq : quick failures with
      | true =>
        constructor
        · simp only [stage_loop, hc, hq]
        · simp only [stage_loop, hc, hq]
          rw [after_quick_clean_append _ _ hH]
          simp only [after_quick, stops, hq]
      | false =>
        have e1 : quick_part (Event.fail failures : Event α) = 0 := by
          simp only [quick_part, quick_count, hq]
        cases hfa : fatal with
        | true =>
          exfalso
          simp only [stage_loop, hc, hq, hfa, tally_append, tally_cons, tally_nil, e1, e2,
            quick_part, quick_count] at h
          omega
        | false =>
          simp only [stage_loop, hc, hq, hfa, tally_append, tally_cons, tally_nil, e1, e2, quick_part,
            quick_count] at h
          have hpos : 0 < tally quick_part (stage_loop engine random hooks cfg phase check context
            follow k (call + 1) (next_subject follow subject typed) (history ++ [failures]) raw).trace := by
            omega
          obtain ⟨h1, h2⟩ := ih (call + 1) (next_subject follow subject typed) (history ++ [failures])
            raw hpos
          constructor
          · simp only [stage_loop, hc, hq, hfa]
            exact h1
          · simp only [stage_loop, hc, hq, hfa]
            rw [after_quick_clean_append]
            all_goals first
              | exact h2
              | (simp only [tally_append, tally_cons, tally_nil, e1, e2, hH] <;> omega)

theorem loop_ranked (follow : Bool) (r : Nat) (hcp : cfg.policy.rank ≤ r) (hr2 : r ≤ 2)
    (hpred : every (fun p => (effective_policy cfg.policy p).rank ≤ r) (conditions hooks phase)) :
    ∀ (k call : Nat) (subject : α) (history : List (List Violation)) (previous : Option α),
      every (fun vs => every (fun v : Violation => v.policy.rank ≤ r) vs) history →
      ∀ (p : Policy), (stage_loop engine random hooks cfg phase check context follow k call subject
        history previous).ending = StageEnd.failed p → p.rank ≤ r := by
  intro k
  induction k with
  | zero =>
    intro call subject history previous hh p hp
    simp only [stage_loop] at hp
    cases hp
    exact strictest_ranked r _ (policies_ranked r _ (latest_ranked r history hh))
  | succ k ih =>
    intro call subject history previous hh p hp
    cases hc : (attempt_once engine hooks cfg phase check context call subject
        (feedback cfg.accumulate_errors history) previous).checked with
    | accepted raw candidate =>
      simp only [stage_loop, hc] at hp <;> cases hp
    | rejected raw typed failures fatal =>
      have hf := attempt_rejected_ranked engine hooks cfg phase check context call subject
        (feedback cfg.accumulate_errors history) previous r hcp hpred raw typed failures fatal hc
      cases hq : quick failures with
      | true =>
        have hfalse := quick_ranked r hr2 failures hf
        exact absurd (hfalse.symm.trans hq) (by decide)
      | false =>
        cases hfa : fatal with
        | true =>
          simp only [stage_loop, hc, hq, hfa] at hp
          cases hp
          exact strictest_ranked r _ (policies_ranked r _ hf)
        | false =>
          simp only [stage_loop, hc, hq, hfa] at hp
          exact ih (call + 1) (next_subject follow subject typed) (history ++ [failures]) raw
            (every_append hh (every_cons hf every_nil)) p hp

theorem loop_accepted :
    ∀ (k call : Nat) (subject : α) (history : List (List Violation)) (previous : Option α) (c : α),
      (stage_loop engine random hooks cfg phase check context false k call subject history
        previous).ending = StageEnd.accepted c →
      ∃ raw n, check raw subject = Except.ok c ∧
        (evaluate (conditions hooks phase) c (context subject) phase n cfg.policy).violations = [] := by
  intro k
  induction k with
  | zero =>
    intro call subject history previous c h
    simp only [stage_loop] at h <;> cases h
  | succ k ih =>
    intro call subject history previous c h
    cases hc : (attempt_once engine hooks cfg phase check context call subject
        (feedback cfg.accumulate_errors history) previous).checked with
    | accepted raw candidate =>
      have ha := attempt_accepted engine hooks cfg phase check context call subject
        (feedback cfg.accumulate_errors history) previous raw candidate hc
      simp only [stage_loop, hc] at h
      cases h
      exact ⟨raw, call, ha.1, ha.2⟩
    | rejected raw typed failures fatal =>
      cases hq : quick failures with
      | true => simp only [stage_loop, hc, hq] at h <;> cases h
      | false =>
        cases hfa : fatal with
        | true => simp only [stage_loop, hc, hq, hfa] at h <;> cases h
        | false =>
          simp only [stage_loop, hc, hq, hfa] at h
          have hs : next_subject false subject typed = subject := by cases typed <;> rfl
          have ih' := ih (call + 1) (next_subject false subject typed) (history ++ [failures]) raw c h
          rw [hs] at ih'
          exact ih'

theorem loop_fed (follow : Bool) :
    ∀ (k call : Nat) (subject : α) (history : List (List Violation)) (previous : Option α),
      fed cfg.accumulate_errors history (attempts_of (stage_loop engine random hooks cfg phase check
        context follow k call subject history previous).trace) := by
  intro k
  induction k with
  | zero => intro call subject history previous; exact fed_nil _ _
  | succ k ih =>
    intro call subject history previous
    have hA := head_attempts engine random hooks cfg phase check context call subject history previous
    cases hc : (attempt_once engine hooks cfg phase check context call subject
        (feedback cfg.accumulate_errors history) previous).checked with
    | accepted raw candidate =>
      simp only [stage_loop, hc, attempts_of_append, hA, attempts_of_cons, attempts_of_nil,
        attempt_part, List.nil_append, List.cons_append, List.append_nil]
      exact fed_cons rfl (fed_nil _ _)
    | rejected raw typed failures fatal =>
      cases hq : quick failures with
      | true =>
        simp only [stage_loop, hc, hq, attempts_of_append, hA, attempts_of_cons, attempts_of_nil,
          attempt_part, List.nil_append, List.cons_append, List.append_nil]
        exact fed_cons rfl (fed_nil _ _)
      | false =>
        cases hfa : fatal with
        | true =>
          simp only [stage_loop, hc, hq, hfa, attempts_of_append, hA, attempts_of_cons,
            attempts_of_nil, attempt_part, List.nil_append, List.cons_append, List.append_nil]
          exact fed_cons rfl (fed_nil _ _)
        | false =>
          have hr := ih (call + 1) (next_subject follow subject typed) (history ++ [failures]) raw
          simp only [stage_loop, hc, hq, hfa, attempts_of_append, hA, attempts_of_cons,
            attempts_of_nil, attempt_part, List.nil_append, List.cons_append, List.append_nil]
          exact fed_cons rfl hr

theorem attempt_fatal (call : Nat) (subject : α) (fb : List Violation) (previous : Option α)
    (e : HookError) (he : engine phase call subject fb previous = Except.error e) :
    (attempt_once engine hooks cfg phase check context call subject fb previous).checked =
      Checked.rejected none none [hook_violation ViolationKind.error phase call cfg.policy e]
        e.fatal := by
  simp only [attempt_once, he]

/-- Invariant `fatal-engine-error-stops`: After a FatalEngineError, its stage makes no
further engine call and sleeps no more (§4.4). When engine call `call` of a stage (with
`k + 1` calls left) raises a `FatalEngineError`, the stage's `Generate`/`Sleep` effects from
that call on are the call itself, after its own backoff sleep if any: nothing follows, and
the stage fails with the contract's policy. -/
theorem fatal_engine_error_stops (follow : Bool) (k call : Nat) (subject : α)
    (history : List (List Violation)) (previous : Option α) (e : HookError)
    (he : engine phase call subject (feedback cfg.accumulate_errors history) previous =
      Except.error e)
    (hfatal : e.fatal = true) :
    beats (stage_loop engine random hooks cfg phase check context follow (k + 1) call subject
        history previous).trace =
      beats (pause cfg random phase call : List (Event α)) ++ [Beat.call phase] ∧
    (stage_loop engine random hooks cfg phase check context follow (k + 1) call subject history
      previous).ending = StageEnd.failed cfg.policy := by
  have hc := attempt_fatal engine hooks cfg phase check context call subject
    (feedback cfg.accumulate_errors history) previous e he
  rw [hfatal] at hc
  have hH := head_beats engine random hooks cfg phase check context call subject history previous
  cases hq : quick [hook_violation ViolationKind.error phase call cfg.policy e] with
  | true =>
    have hp : cfg.policy = Policy.quick_enforce := quick_single _ hq
    constructor
    · simp only [stage_loop, hc, hq, beats_append, hH, beats_cons, beats_nil, beat_part,
        List.nil_append, List.append_nil]
    · simp only [stage_loop, hc, hq]
      exact congrArg StageEnd.failed hp.symm
  | false =>
    have h0 : Policy.ignore.rank ≤ cfg.policy.rank := Nat.zero_le _
    have hs : strictest (policies [hook_violation ViolationKind.error phase call cfg.policy e]) =
        cfg.policy := by
      show stricter cfg.policy Policy.ignore = cfg.policy
      unfold stricter
      rw [if_pos h0]
    constructor
    · simp only [stage_loop, hc, hq, beats_append, hH, beats_cons, beats_nil, beat_part,
        List.nil_append, List.append_nil]
    · simp only [stage_loop, hc, hq, hs]

end Loop

/-! ## The two stages -/

section Stages

variable {α : Type} (engine : Engine α) (random : Phase → Nat → Nat) (hooks : Hooks α)
  (cfg : ContractConfig)

theorem pre_every (given : α) :
    every (stage_event cfg hooks) (stage_pre engine random hooks cfg given).trace := by
  cases hv : (evaluate (conditions hooks Phase.pre) given none Phase.pre 0 cfg.policy).violations with
  | nil =>
    simp only [stage_pre, hv]
    exact every_cons rfl every_nil
  | cons v vs =>
    cases hq : quick (v :: vs) with
    | true =>
      simp only [stage_pre, hv, hq]
      exact every_append (every_cons rfl every_nil) (every_cons trivial every_nil)
    | false =>
      have hl := loop_every engine random hooks cfg Phase.pre (pre_check hooks) no_context true
        cfg.pre_remedy_budget 1 given [v :: vs] none
      simp only [stage_pre, hv, hq]
      exact every_append (every_cons rfl every_nil) (every_cons trivial hl)

theorem post_every (used : α) :
    every (stage_event cfg hooks) (stage_post engine random hooks cfg used).trace :=
  loop_every engine random hooks cfg Phase.post (post_check hooks) as_context false
    cfg.generation_budget 1 used [] none

theorem pre_beats (given : α) :
    ∃ a, beats (stage_pre engine random hooks cfg given).trace = spaced Phase.pre a ∧
      a ≤ cfg.pre_remedy_budget := by
  cases hv : (evaluate (conditions hooks Phase.pre) given none Phase.pre 0 cfg.policy).violations with
  | nil =>
    refine ⟨0, ?_, Nat.zero_le _⟩
    simp only [stage_pre, hv] <;> rfl
  | cons v vs =>
    cases hq : quick (v :: vs) with
    | true =>
      refine ⟨0, ?_, Nat.zero_le _⟩
      simp only [stage_pre, hv, hq] <;> rfl
    | false =>
      obtain ⟨m, hm, hle, _⟩ := loop_beats_first engine random hooks cfg Phase.pre (pre_check hooks)
        no_context true cfg.pre_remedy_budget 1 given [v :: vs] none rfl
      refine ⟨m, ?_, hle⟩
      simp only [stage_pre, hv, hq, beats_append, beats_cons, beats_nil, beat_part, hm,
        List.nil_append]

theorem post_beats (used : α) :
    ∃ b, beats (stage_post engine random hooks cfg used).trace = spaced Phase.post b ∧
      b ≤ cfg.generation_budget ∧ (0 < cfg.generation_budget → 0 < b) :=
  loop_beats_first engine random hooks cfg Phase.post (post_check hooks) as_context false
    cfg.generation_budget 1 used [] none rfl

theorem pre_quick (given : α)
    (h : 0 < tally quick_part (stage_pre engine random hooks cfg given).trace) :
    (stage_pre engine random hooks cfg given).ending = StageEnd.failed Policy.quick_enforce ∧
    after_quick (stage_pre engine random hooks cfg given).trace = [] := by
  revert h
  cases hv : (evaluate (conditions hooks Phase.pre) given none Phase.pre 0 cfg.policy).violations with
  | nil =>
    intro h
    exfalso
    simp only [stage_pre, hv, tally_cons, tally_nil, quick_part] at h <;> omega
  | cons v vs =>
    cases hq : quick (v :: vs) with
    | true =>
      intro _
      constructor
      · simp only [stage_pre, hv, hq]
      · simp only [stage_pre, hv, hq, List.cons_append, List.nil_append, after_quick, stops]
    | false =>
      intro h
      have hl : 0 < tally quick_part (stage_loop engine random hooks cfg Phase.pre (pre_check hooks)
          no_context true cfg.pre_remedy_budget 1 given [v :: vs] none).trace := by
        simp only [stage_pre, hv, hq, tally_append, tally_cons, tally_nil, quick_part,
          quick_count] at h
        omega
      obtain ⟨h1, h2⟩ := loop_quick engine random hooks cfg Phase.pre (pre_check hooks) no_context
        true cfg.pre_remedy_budget 1 given [v :: vs] none hl
      constructor
      · simp only [stage_pre, hv, hq]
        exact h1
      · simp only [stage_pre, hv, hq, List.cons_append, List.nil_append, after_quick, stops]
        exact h2

theorem post_quick (used : α)
    (h : 0 < tally quick_part (stage_post engine random hooks cfg used).trace) :
    (stage_post engine random hooks cfg used).ending = StageEnd.failed Policy.quick_enforce ∧
    after_quick (stage_post engine random hooks cfg used).trace = [] :=
  loop_quick engine random hooks cfg Phase.post (post_check hooks) as_context false
    cfg.generation_budget 1 used [] none h

theorem pre_ranked (r : Nat) (hcp : cfg.policy.rank ≤ r) (hr2 : r ≤ 2)
    (hpre : every (fun p => (effective_policy cfg.policy p).rank ≤ r) hooks.pre_conditions)
    (given : α) (p : Policy)
    (h : (stage_pre engine random hooks cfg given).ending = StageEnd.failed p) : p.rank ≤ r := by
  have hv0 := evaluate_ranked (conditions hooks Phase.pre) given none Phase.pre 0 cfg.policy r hpre
  revert h
  cases hv : (evaluate (conditions hooks Phase.pre) given none Phase.pre 0 cfg.policy).violations with
  | nil => simp only [stage_pre, hv] <;> intro h <;> cases h
  | cons v vs =>
    rw [hv] at hv0
    cases hq : quick (v :: vs) with
    | true =>
      have hfalse := quick_ranked r hr2 (v :: vs) hv0
      exact absurd (hfalse.symm.trans hq) (by decide)
    | false =>
      simp only [stage_pre, hv, hq]
      intro h
      exact loop_ranked engine random hooks cfg Phase.pre (pre_check hooks) no_context true r hcp hr2
        hpre cfg.pre_remedy_budget 1 given [v :: vs] none (every_cons hv0 every_nil) p h

theorem post_ranked (r : Nat) (hcp : cfg.policy.rank ≤ r) (hr2 : r ≤ 2)
    (hpost : every (fun p => (effective_policy cfg.policy p).rank ≤ r) hooks.post_conditions)
    (used : α) (p : Policy)
    (h : (stage_post engine random hooks cfg used).ending = StageEnd.failed p) : p.rank ≤ r :=
  loop_ranked engine random hooks cfg Phase.post (post_check hooks) as_context false r hcp hr2
    hpost cfg.generation_budget 1 used [] none every_nil p h

theorem pre_fed (given : α) :
    fed cfg.accumulate_errors
      [(evaluate (conditions hooks Phase.pre) given none Phase.pre 0 cfg.policy).violations]
      (attempts_of (stage_pre engine random hooks cfg given).trace) := by
  cases hv : (evaluate (conditions hooks Phase.pre) given none Phase.pre 0 cfg.policy).violations with
  | nil =>
    simp only [stage_pre, hv, attempts_of_cons, attempts_of_nil, attempt_part, List.nil_append]
    exact fed_nil _ _
  | cons v vs =>
    cases hq : quick (v :: vs) with
    | true =>
      simp only [stage_pre, hv, hq, attempts_of_append, attempts_of_cons, attempts_of_nil,
        attempt_part, List.nil_append]
      exact fed_nil _ _
    | false =>
      simp only [stage_pre, hv, hq, attempts_of_append, attempts_of_cons, attempts_of_nil,
        attempt_part, List.nil_append]
      exact loop_fed engine random hooks cfg Phase.pre (pre_check hooks) no_context true
        cfg.pre_remedy_budget 1 given [v :: vs] none

theorem post_fed (used : α) :
    fed cfg.accumulate_errors [] (attempts_of (stage_post engine random hooks cfg used).trace) :=
  loop_fed engine random hooks cfg Phase.post (post_check hooks) as_context false
    cfg.generation_budget 1 used [] none

theorem post_accepted (used c : α)
    (h : (stage_post engine random hooks cfg used).ending = StageEnd.accepted c) :
    ∃ raw n, hooks.check_output raw used = Except.ok c ∧
      (evaluate hooks.post_conditions c (some used) Phase.post n cfg.policy).violations = [] :=
  loop_accepted engine random hooks cfg Phase.post (post_check hooks) as_context
    cfg.generation_budget 1 used [] none c h

end Stages

/-! ## Phases 3–5 and the contract -/

theorem act_error_policy {α : Type} (hooks : Hooks α) (policy : Policy) (accepted : α)
    (v : Violation) (h : act_phase hooks policy accepted = Except.error v) : v.policy = policy := by
  revert h
  cases hact : hooks.act with
  | none => simp only [act_phase, hact] <;> intro h <;> cases h
  | some act =>
    cases hr : act accepted with
    | ok used => simp only [act_phase, hact, hr] <;> intro h <;> cases h
    | error err => simp only [act_phase, hact, hr] <;> intro h <;> cases h <;> rfl

theorem preflight_every {α : Type} (cfg : ContractConfig) (hooks : Hooks α)
    (answer : Option PreflightResult) :
    every (contract_event cfg hooks) (preflight_events answer : List (Event α)) := by
  cases answer with
  | none => exact every_nil
  | some a => exact every_cons trivial every_nil

theorem preflight_beats {α : Type} (answer : Option PreflightResult) :
    beats (preflight_events answer : List (Event α)) = [] := by
  cases answer <;> rfl

theorem preflight_quick {α : Type} (answer : Option PreflightResult) :
    tally quick_part (preflight_events answer : List (Event α)) = 0 := by
  cases answer <;> rfl

theorem preflight_post_entered {α : Type} (answer : Option PreflightResult) :
    tally post_entered (preflight_events answer : List (Event α)) = 0 := by
  cases answer <;> rfl

theorem preflight_violations {α : Type} (answer : Option PreflightResult) :
    violations_of (preflight_events answer : List (Event α)) = [] := by
  cases answer <;> rfl

section Contract

variable {α : Type} (engine : Engine α) (random : Phase → Nat → Nat) (hooks : Hooks α)
  (cfg : ContractConfig)

theorem after_pre_every (original accepted : α) :
    every (contract_event cfg hooks) (after_pre engine random hooks cfg original accepted).trace := by
  cases ha : act_phase hooks cfg.policy accepted with
  | error violation =>
    simp only [after_pre, ha]
    exact every_cons trivial (every_cons trivial every_nil)
  | ok used =>
    have hpf := preflight_every (α := α) cfg hooks (preflight_phase hooks cfg.policy used)
    cases hu : is_unsat (preflight_phase hooks cfg.policy used) with
    | true =>
      simp only [after_pre, ha, hu]
      exact every_append (every_cons trivial (every_cons trivial hpf)) (every_cons trivial every_nil)
    | false =>
      have hpost := every_mono (stage_to_contract cfg hooks) _ (post_every engine random hooks cfg used)
      simp only [after_pre, ha, hu]
      exact every_append (every_cons trivial (every_cons trivial hpf)) (every_cons trivial hpost)

theorem contract_every (raw_input : α) :
    every (contract_event cfg hooks) (contract engine random hooks cfg raw_input).trace := by
  cases hi : hooks.check_input raw_input with
  | error err =>
    simp only [contract, hi]
    exact every_cons trivial every_nil
  | ok original =>
    have hpre := every_mono (stage_to_contract cfg hooks) _ (pre_every engine random hooks cfg original)
    cases hs : (stage_pre engine random hooks cfg original).ending with
    | failed p =>
      simp only [contract, hi, hs]
      exact every_cons trivial hpre
    | accepted acc =>
      have hrest := after_pre_every engine random hooks cfg original acc
      simp only [contract, hi, hs]
      exact every_cons trivial (every_append hpre hrest)

theorem after_pre_beats (original accepted : α) :
    ∃ b, beats (after_pre engine random hooks cfg original accepted).trace = spaced Phase.post b ∧
      b ≤ cfg.generation_budget ∧
      (0 < tally post_entered (after_pre engine random hooks cfg original accepted).trace →
        0 < cfg.generation_budget → 0 < b) := by
  cases ha : act_phase hooks cfg.policy accepted with
  | error violation =>
    refine ⟨0, ?_, Nat.zero_le _, ?_⟩
    · simp only [after_pre, ha] <;> rfl
    · intro h _
      exfalso
      simp only [after_pre, ha, tally_cons, tally_nil, post_entered, entered_post] at h <;> omega
  | ok used =>
    have hpb := preflight_beats (α := α) (preflight_phase hooks cfg.policy used)
    have hpe := preflight_post_entered (α := α) (preflight_phase hooks cfg.policy used)
    cases hu : is_unsat (preflight_phase hooks cfg.policy used) with
    | true =>
      refine ⟨0, ?_, Nat.zero_le _, ?_⟩
      · simp only [after_pre, ha, hu, beats_append, beats_cons, beats_nil, beat_part, hpb,
          List.nil_append, List.append_nil] <;> rfl
      · intro h _
        exfalso
        simp only [after_pre, ha, hu, tally_append, tally_cons, tally_nil, post_entered,
          entered_post, hpe] at h <;> omega
    | false =>
      obtain ⟨b, hb, hle, hpos⟩ := post_beats engine random hooks cfg used
      refine ⟨b, ?_, hle, fun _ h => hpos h⟩
      simp only [after_pre, ha, hu, beats_append, beats_cons, beats_nil, beat_part, hpb, hb,
        List.nil_append, List.append_nil]

theorem contract_beats (raw_input : α) :
    ∃ a b, beats (contract engine random hooks cfg raw_input).trace =
        spaced Phase.pre a ++ spaced Phase.post b ∧
      a ≤ cfg.pre_remedy_budget ∧ b ≤ cfg.generation_budget ∧
      (0 < tally post_entered (contract engine random hooks cfg raw_input).trace →
        0 < cfg.generation_budget → 0 < b) := by
  cases hi : hooks.check_input raw_input with
  | error err =>
    refine ⟨0, 0, ?_, Nat.zero_le _, Nat.zero_le _, ?_⟩
    · simp only [contract, hi] <;> rfl
    · intro h _
      exfalso
      simp only [contract, hi, tally_cons, tally_nil, post_entered] at h <;> omega
  | ok original =>
    obtain ⟨a, ha, hle⟩ := pre_beats engine random hooks cfg original
    have hpe : tally post_entered (stage_pre engine random hooks cfg original).trace = 0 :=
      tally_eq_zero post_entered (stage_post_entered cfg hooks) _ (pre_every engine random hooks cfg original)
    cases hs : (stage_pre engine random hooks cfg original).ending with
    | failed p =>
      refine ⟨a, 0, ?_, hle, Nat.zero_le _, ?_⟩
      · simp only [contract, hi, hs, beats_cons, beat_part, ha, spaced, List.nil_append,
          List.append_nil]
      · intro h _
        exfalso
        simp only [contract, hi, hs, tally_cons, post_entered, entered_post, hpe] at h <;> omega
    | accepted acc =>
      obtain ⟨b, hb, hbl, hpos⟩ := after_pre_beats engine random hooks cfg original acc
      refine ⟨a, b, ?_, hle, hbl, ?_⟩
      · simp only [contract, hi, hs, beats_cons, beats_append, beat_part, ha, hb, List.nil_append]
      · intro h hbudget
        have h' : 0 < tally post_entered (after_pre engine random hooks cfg original acc).trace := by
          simp only [contract, hi, hs, tally_cons, tally_append, post_entered, entered_post, hpe] at h
          omega
        exact hpos h' hbudget

theorem after_pre_quick (original accepted : α)
    (h : 0 < tally quick_part (after_pre engine random hooks cfg original accepted).trace) :
    (∃ o, (after_pre engine random hooks cfg original accepted).ending =
      ContractEnd.failed Policy.quick_enforce o) ∧
    after_quick (after_pre engine random hooks cfg original accepted).trace = [] := by
  revert h
  cases ha : act_phase hooks cfg.policy accepted with
  | error violation =>
    intro h
    have hvp := act_error_policy hooks cfg.policy accepted violation ha
    cases hq : quick [violation] with
    | false =>
      exfalso
      simp only [after_pre, ha, tally_cons, tally_nil, quick_part, quick_count, hq] at h <;> omega
    | true =>
      have hp : cfg.policy = Policy.quick_enforce := hvp.symm.trans (quick_single violation hq)
      constructor
      · refine ⟨original, ?_⟩
        rw [← hp]
        simp only [after_pre, ha]
      · simp only [after_pre, ha, after_quick, stops, hq]
  | ok used =>
    intro h
    have hpq := preflight_quick (α := α) (preflight_phase hooks cfg.policy used)
    have hc0 : tally quick_part (Event.enter Phase.act :: Event.enter Phase.preflight ::
        preflight_events (preflight_phase hooks cfg.policy used) : List (Event α)) = 0 := by
      simp only [tally_cons, quick_part, hpq] <;> omega
    cases hu : is_unsat (preflight_phase hooks cfg.policy used) with
    | true =>
      cases hq : quick [unsat_violation (preflight_phase hooks cfg.policy used) cfg.policy] with
      | false =>
        exfalso
        simp only [after_pre, ha, hu, tally_append, tally_cons, tally_nil, quick_part, quick_count,
          hq, hpq] at h <;> omega
      | true =>
        have hp : cfg.policy = Policy.quick_enforce := quick_single _ hq
        constructor
        · refine ⟨original, ?_⟩
          rw [← hp]
          simp only [after_pre, ha, hu]
        · simp only [after_pre, ha, hu]
          rw [after_quick_clean_append _ _ hc0]
          simp only [after_quick, stops, hq]
    | false =>
      have hpos : 0 < tally quick_part (stage_post engine random hooks cfg used).trace := by
        simp only [after_pre, ha, hu, tally_append, tally_cons, quick_part, hpq] at h
        omega
      obtain ⟨h1, h2⟩ := post_quick engine random hooks cfg used hpos
      constructor
      · refine ⟨original, ?_⟩
        simp only [after_pre, ha, hu, h1, post_ending]
      · simp only [after_pre, ha, hu]
        rw [after_quick_clean_append _ _ hc0]
        simp only [after_quick, stops]
        exact h2

theorem contract_quick (raw_input : α)
    (h : 0 < tally quick_part (contract engine random hooks cfg raw_input).trace) :
    (∃ o, (contract engine random hooks cfg raw_input).ending =
      ContractEnd.failed Policy.quick_enforce o) ∧
    after_quick (contract engine random hooks cfg raw_input).trace = [] := by
  revert h
  cases hi : hooks.check_input raw_input with
  | error err =>
    intro h
    cases hq : quick [hook_violation ViolationKind.type Phase.input 0 cfg.policy err] with
    | false =>
      exfalso
      simp only [contract, hi, tally_cons, tally_nil, quick_part, quick_count, hq] at h <;> omega
    | true =>
      have hp : cfg.policy = Policy.quick_enforce := quick_single _ hq
      constructor
      · refine ⟨raw_input, ?_⟩
        rw [← hp]
        simp only [contract, hi]
      · simp only [contract, hi, after_quick, stops, hq]
  | ok original =>
    intro h
    cases hs : (stage_pre engine random hooks cfg original).ending with
    | failed p =>
      have hpos : 0 < tally quick_part (stage_pre engine random hooks cfg original).trace := by
        simp only [contract, hi, hs, tally_cons, quick_part] at h
        omega
      obtain ⟨h1, h2⟩ := pre_quick engine random hooks cfg original hpos
      rw [hs] at h1
      cases h1
      constructor
      · exact ⟨original, by simp only [contract, hi, hs]⟩
      · simp only [contract, hi, hs, after_quick, stops]
        exact h2
    | accepted acc =>
      have hpre0 : tally quick_part (stage_pre engine random hooks cfg original).trace = 0 := by
        by_cases hz : tally quick_part (stage_pre engine random hooks cfg original).trace = 0
        · exact hz
        · exfalso
          have h1 := (pre_quick engine random hooks cfg original (by omega)).1
          rw [hs] at h1
          cases h1
      have hpos : 0 < tally quick_part (after_pre engine random hooks cfg original acc).trace := by
        simp only [contract, hi, hs, tally_cons, tally_append, quick_part, hpre0] at h
        omega
      obtain ⟨⟨o, ho⟩, h2⟩ := after_pre_quick engine random hooks cfg original acc hpos
      constructor
      · exact ⟨o, by simp only [contract, hi, hs, ho]⟩
      · simp only [contract, hi, hs, after_quick, stops]
        rw [after_quick_clean_append _ _ hpre0]
        exact h2

theorem after_pre_ranked (r : Nat) (hcp : cfg.policy.rank ≤ r) (hr2 : r ≤ 2)
    (hpost : every (fun p => (effective_policy cfg.policy p).rank ≤ r) hooks.post_conditions)
    (original accepted : α) (p : Policy) (o : α)
    (h : (after_pre engine random hooks cfg original accepted).ending = ContractEnd.failed p o) :
    p.rank ≤ r := by
  revert h
  cases ha : act_phase hooks cfg.policy accepted with
  | error v => simp only [after_pre, ha] <;> intro h <;> cases h <;> exact hcp
  | ok used =>
    cases hu : is_unsat (preflight_phase hooks cfg.policy used) with
    | true => simp only [after_pre, ha, hu] <;> intro h <;> cases h <;> exact hcp
    | false =>
      cases hs : (stage_post engine random hooks cfg used).ending with
      | accepted res => simp only [after_pre, ha, hu, hs, post_ending] <;> intro h <;> cases h
      | failed q =>
        have hq := post_ranked engine random hooks cfg r hcp hr2 hpost used q hs
        simp only [after_pre, ha, hu, hs, post_ending] <;> intro h <;> cases h <;> exact hq

theorem contract_ranked (raw_input : α) (r : Nat) (hcp : cfg.policy.rank ≤ r) (hr2 : r ≤ 2)
    (hpre : every (fun p => (effective_policy cfg.policy p).rank ≤ r) hooks.pre_conditions)
    (hpost : every (fun p => (effective_policy cfg.policy p).rank ≤ r) hooks.post_conditions)
    (p : Policy) (o : α)
    (h : (contract engine random hooks cfg raw_input).ending = ContractEnd.failed p o) :
    p.rank ≤ r := by
  revert h
  cases hi : hooks.check_input raw_input with
  | error err => simp only [contract, hi] <;> intro h <;> cases h <;> exact hcp
  | ok original =>
    cases hs : (stage_pre engine random hooks cfg original).ending with
    | failed q =>
      have hq := pre_ranked engine random hooks cfg r hcp hr2 hpre original q hs
      simp only [contract, hi, hs] <;> intro h <;> cases h <;> exact hq
    | accepted acc =>
      simp only [contract, hi, hs]
      intro h
      exact after_pre_ranked engine random hooks cfg r hcp hr2 hpost original acc p o h

theorem after_pre_success (original accepted used result : α) :
    (after_pre engine random hooks cfg original accepted).ending = ContractEnd.succeeded used result →
    ∃ raw n, hooks.check_output raw used = Except.ok result ∧
      (evaluate hooks.post_conditions result (some used) Phase.post n cfg.policy).violations = [] := by
  cases ha : act_phase hooks cfg.policy accepted with
  | error v => simp only [after_pre, ha] <;> intro h <;> cases h
  | ok u =>
    cases hu : is_unsat (preflight_phase hooks cfg.policy u) with
    | true => simp only [after_pre, ha, hu] <;> intro h <;> cases h
    | false =>
      cases hs : (stage_post engine random hooks cfg u).ending with
      | failed q => simp only [after_pre, ha, hu, hs, post_ending] <;> intro h <;> cases h
      | accepted res =>
        have hl := post_accepted engine random hooks cfg u res hs
        simp only [after_pre, ha, hu, hs, post_ending] <;> intro h <;> cases h <;> exact hl

theorem contract_success (raw_input used result : α) :
    (contract engine random hooks cfg raw_input).ending = ContractEnd.succeeded used result →
    ∃ raw n, hooks.check_output raw used = Except.ok result ∧
      (evaluate hooks.post_conditions result (some used) Phase.post n cfg.policy).violations = [] := by
  cases hi : hooks.check_input raw_input with
  | error err => simp only [contract, hi] <;> intro h <;> cases h
  | ok original =>
    cases hs : (stage_pre engine random hooks cfg original).ending with
    | failed q => simp only [contract, hi, hs] <;> intro h <;> cases h
    | accepted acc =>
      simp only [contract, hi, hs]
      exact after_pre_success engine random hooks cfg original acc used result

theorem after_pre_act (original accepted used result : α) :
    (after_pre engine random hooks cfg original accepted).ending = ContractEnd.succeeded used result →
    act_phase hooks cfg.policy accepted = Except.ok used := by
  cases ha : act_phase hooks cfg.policy accepted with
  | error v => simp only [after_pre, ha] <;> intro h <;> cases h
  | ok u =>
    cases hu : is_unsat (preflight_phase hooks cfg.policy u) with
    | true => simp only [after_pre, ha, hu] <;> intro h <;> cases h
    | false =>
      cases hs : (stage_post engine random hooks cfg u).ending with
      | failed q => simp only [after_pre, ha, hu, hs, post_ending] <;> intro h <;> cases h
      | accepted res => simp only [after_pre, ha, hu, hs, post_ending] <;> intro h <;> cases h <;> rfl

theorem contract_used (raw_input used result : α) :
    (contract engine random hooks cfg raw_input).ending = ContractEnd.succeeded used result →
    ∃ x0 accepted, hooks.check_input raw_input = Except.ok x0 ∧
      (stage_pre engine random hooks cfg x0).ending = StageEnd.accepted accepted ∧
      act_phase hooks cfg.policy accepted = Except.ok used := by
  cases hi : hooks.check_input raw_input with
  | error err => simp only [contract, hi] <;> intro h <;> cases h
  | ok x =>
    cases hs : (stage_pre engine random hooks cfg x).ending with
    | failed q => simp only [contract, hi, hs] <;> intro h <;> cases h
    | accepted acc =>
      simp only [contract, hi, hs]
      intro h
      exact ⟨x, acc, rfl, hs, after_pre_act engine random hooks cfg x acc used result h⟩

theorem after_pre_original (original accepted : α) (p : Policy) (o : α) :
    (after_pre engine random hooks cfg original accepted).ending = ContractEnd.failed p o →
    o = original := by
  cases ha : act_phase hooks cfg.policy accepted with
  | error v => simp only [after_pre, ha] <;> intro h <;> cases h <;> rfl
  | ok used =>
    cases hu : is_unsat (preflight_phase hooks cfg.policy used) with
    | true => simp only [after_pre, ha, hu] <;> intro h <;> cases h <;> rfl
    | false =>
      cases hs : (stage_post engine random hooks cfg used).ending with
      | accepted res => simp only [after_pre, ha, hu, hs, post_ending] <;> intro h <;> cases h
      | failed q => simp only [after_pre, ha, hu, hs, post_ending] <;> intro h <;> cases h <;> rfl

theorem contract_original (raw_input : α) (p : Policy) (original : α) :
    (contract engine random hooks cfg raw_input).ending = ContractEnd.failed p original →
    (∀ e, hooks.check_input raw_input = Except.error e → original = raw_input) ∧
    (∀ x0, hooks.check_input raw_input = Except.ok x0 → original = x0) := by
  cases hi : hooks.check_input raw_input with
  | error err =>
    simp only [contract, hi]
    intro h
    cases h
    exact ⟨fun _ _ => rfl, fun _ hx => by cases hx⟩
  | ok x =>
    cases hs : (stage_pre engine random hooks cfg x).ending with
    | failed q =>
      simp only [contract, hi, hs]
      intro h
      cases h
      exact ⟨fun _ hx => by cases hx, fun _ hx => by cases hx; rfl⟩
    | accepted acc =>
      simp only [contract, hi, hs]
      intro h
      have ho := after_pre_original engine random hooks cfg x acc p original h
      subst ho
      exact ⟨fun _ hx => by cases hx, fun _ hx => by cases hx; rfl⟩

theorem after_pre_unsat (original accepted : α) (answer : PreflightResult)
    (hun : answer.verdict = Verdict.unsatisfiable) :
    (after_pre engine random hooks cfg original accepted).preflight = some answer →
    (∃ o, (after_pre engine random hooks cfg original accepted).ending =
      ContractEnd.failed cfg.policy o) ∧
    beats (after_pre engine random hooks cfg original accepted).trace = [] ∧
    0 < tally unsat_count (violations_of (after_pre engine random hooks cfg original accepted).trace) := by
  cases ha : act_phase hooks cfg.policy accepted with
  | error v => simp only [after_pre, ha] <;> intro h <;> cases h
  | ok used =>
    have hpb := preflight_beats (α := α) (preflight_phase hooks cfg.policy used)
    have hpv := preflight_violations (α := α) (preflight_phase hooks cfg.policy used)
    cases hu : is_unsat (preflight_phase hooks cfg.policy used) with
    | false =>
      simp only [after_pre, ha, hu]
      intro hpf
      exfalso
      rw [hpf] at hu
      have ht : is_unsat (some answer) = true := by simp only [is_unsat, hun]
      rw [ht] at hu
      cases hu
    | true =>
      simp only [after_pre, ha, hu]
      intro _
      have hu1 : unsat_count (unsat_violation (preflight_phase hooks cfg.policy used) cfg.policy) = 1 := rfl
      refine ⟨⟨original, rfl⟩, ?_, ?_⟩
      · simp only [beats_append, beats_cons, beat_part, hpb, beats_nil, List.nil_append]
      · simp only [violations_of_append, violations_of_cons, fail_part, hpv, violations_of_nil,
          List.nil_append, List.append_nil, tally_cons, tally_nil, hu1] <;> omega

theorem contract_unsat (raw_input : α) (answer : PreflightResult)
    (hun : answer.verdict = Verdict.unsatisfiable) :
    (contract engine random hooks cfg raw_input).preflight = some answer →
    (∃ o, (contract engine random hooks cfg raw_input).ending = ContractEnd.failed cfg.policy o) ∧
    engine_calls Phase.post (contract engine random hooks cfg raw_input).trace = 0 ∧
    0 < tally unsat_count (violations_of (contract engine random hooks cfg raw_input).trace) := by
  cases hi : hooks.check_input raw_input with
  | error err => simp only [contract, hi] <;> intro h <;> cases h
  | ok original =>
    obtain ⟨a, ha, _⟩ := pre_beats engine random hooks cfg original
    cases hs : (stage_pre engine random hooks cfg original).ending with
    | failed q => simp only [contract, hi, hs] <;> intro h <;> cases h
    | accepted acc =>
      simp only [contract, hi, hs]
      intro hpf
      obtain ⟨⟨o, ho⟩, hb, hv⟩ := after_pre_unsat engine random hooks cfg original acc answer hun hpf
      have hne : Phase.pre ≠ Phase.post := by decide
      refine ⟨⟨o, ho⟩, ?_, ?_⟩
      · simp only [engine_calls, beats_cons, beats_append, beat_part, ha, hb, List.nil_append,
          List.append_nil, spaced_other Phase.pre Phase.post hne a]
      · simp only [violations_of_cons, violations_of_append, fail_part, List.nil_append,
          tally_append]
        omega

end Contract

/-! ## Phases 6–7 -/

/-- The outcome a call ends with: the contract's, possibly with a handler error or the
result violation. -/
structure Extends {α : Type} (base o : Outcome α) : Prop where
  same_success : o.success = base.success
  same_result : o.result = base.result
  same_input_used : o.input_used = base.input_used
  same_policy : o.policy = base.policy
  same_exception : o.exception = base.exception
  more_violations : ∃ extra, o.violations = base.violations ++ extra

theorem extends_refl {α : Type} (o : Outcome α) : Extends o o :=
  ⟨rfl, rfl, rfl, rfl, rfl, ⟨[], by simp only [List.append_nil]⟩⟩

theorem extends_trans {α : Type} {a b c : Outcome α} (h1 : Extends a b) (h2 : Extends b c) :
    Extends a c := by
  obtain ⟨s1, r1, i1, p1, e1, ⟨x1, v1⟩⟩ := h1
  obtain ⟨s2, r2, i2, p2, e2, ⟨x2, v2⟩⟩ := h2
  refine ⟨s2.trans s1, r2.trans r1, i2.trans i1, p2.trans p1, e2.trans e1, ⟨x1 ++ x2, ?_⟩⟩
  rw [v2, v1, List.append_assoc]

theorem handler_extends {α : Type} (hooks : Hooks α) (o : Outcome α) :
    Extends o (call_handler hooks o) := by
  cases hv : hooks.on_violation with
  | none =>
    simp only [call_handler, hv]
    exact extends_refl o
  | some handler =>
    cases hh : handler o with
    | ok _ =>
      simp only [call_handler, hv, hh]
      exact extends_refl o
    | error err =>
      simp only [call_handler, hv, hh]
      exact ⟨rfl, rfl, rfl, rfl, rfl, ⟨[], by simp only [List.append_nil]⟩⟩

theorem forward_shape {α : Type} (hooks : Hooks α) (cfg : ContractConfig) (input : α)
    (o : Outcome α) :
    (forward_phase hooks cfg input o).trace = [Event.forward input] ∨
    (forward_phase hooks cfg input o).trace = [Event.forward input, Event.enter Phase.result] ∨
    ∃ value, (forward_phase hooks cfg input o).trace =
      [Event.forward input, Event.enter Phase.result, Event.check_result value] := by
  cases hf : hooks.forward input o with
  | error err =>
    left
    simp only [forward_phase, hf]
  | ok value =>
    cases hr : result_check hooks cfg.retry.graceful value with
    | none =>
      right
      left
      simp only [forward_phase, hf, hr]
    | some res =>
      right
      right
      cases res with
      | ok _ => exact ⟨value, by simp only [forward_phase, hf, hr]⟩
      | error _ => exact ⟨value, by simp only [forward_phase, hf, hr]⟩

theorem fp_every {α : Type} (hooks : Hooks α) (cfg : ContractConfig) (input : α) (o : Outcome α) :
    every finishing (forward_phase hooks cfg input o).trace := by
  rcases forward_shape hooks cfg input o with h | h | ⟨v, h⟩
  · rw [h]
    exact every_cons trivial every_nil
  · rw [h]
    exact every_cons trivial (every_cons trivial every_nil)
  · rw [h]
    exact every_cons trivial (every_cons trivial (every_cons trivial every_nil))

theorem fp_forward {α : Type} (hooks : Hooks α) (cfg : ContractConfig) (input : α) (o : Outcome α) :
    tally forward_count (forward_phase hooks cfg input o).trace = 1 := by
  rcases forward_shape hooks cfg input o with h | h | ⟨v, h⟩ <;> rw [h] <;> rfl

theorem fp_handler {α : Type} (hooks : Hooks α) (cfg : ContractConfig) (input : α) (o : Outcome α) :
    tally handler_count (forward_phase hooks cfg input o).trace = 0 := by
  rcases forward_shape hooks cfg input o with h | h | ⟨v, h⟩ <;> rw [h] <;> rfl

theorem fp_inputs {α : Type} (hooks : Hooks α) (cfg : ContractConfig) (input : α) (o : Outcome α) :
    forward_inputs (forward_phase hooks cfg input o).trace = [input] := by
  rcases forward_shape hooks cfg input o with h | h | ⟨v, h⟩ <;> rw [h] <;> rfl

theorem fp_graceful {α : Type} (hooks : Hooks α) (cfg : ContractConfig) (input : α)
    (o : Outcome α) (hg : cfg.retry.graceful = true) :
    tally check_count (forward_phase hooks cfg input o).trace = 0 := by
  cases hf : hooks.forward input o with
  | error err => simp only [forward_phase, hf] <;> rfl
  | ok value => simp only [forward_phase, hf, result_check, hg] <;> rfl

theorem fp_extends {α : Type} (hooks : Hooks α) (cfg : ContractConfig) (input : α)
    (o0 o : Outcome α) :
    (forward_phase hooks cfg input o0).result.outcome? = some o → Extends o0 o := by
  cases hf : hooks.forward input o0 with
  | error err => simp only [forward_phase, hf, CallResult.outcome?] <;> intro h <;> cases h
  | ok value =>
    cases hr : result_check hooks cfg.retry.graceful value with
    | none =>
      simp only [forward_phase, hf, hr, CallResult.outcome?] <;> intro h <;> cases h <;>
        exact extends_refl _
    | some res =>
      cases res with
      | ok _ =>
        simp only [forward_phase, hf, hr, CallResult.outcome?] <;> intro h <;> cases h <;>
          exact extends_refl _
      | error err =>
        simp only [forward_phase, hf, hr, CallResult.outcome?] <;> intro h <;> cases h <;>
          exact ⟨rfl, rfl, rfl, rfl, rfl, ⟨_, rfl⟩⟩

theorem handler_events_every {α : Type} (hooks : Hooks α) :
    every finishing (handler_events hooks) := by
  unfold handler_events
  split
  · exact every_nil
  · exact every_cons trivial every_nil

theorem handler_events_forward {α : Type} (hooks : Hooks α) :
    tally forward_count (handler_events hooks) = 0 := by
  unfold handler_events
  split <;> rfl

theorem handler_events_check {α : Type} (hooks : Hooks α) :
    tally check_count (handler_events hooks) = 0 := by
  unfold handler_events
  split <;> rfl

theorem handler_events_inputs {α : Type} (hooks : Hooks α) :
    forward_inputs (handler_events hooks) = [] := by
  unfold handler_events
  split <;> rfl

theorem handler_events_count {α : Type} (hooks : Hooks α) (handler : Outcome α → Except HookError Unit)
    (h : hooks.on_violation = some handler) : tally handler_count (handler_events hooks) = 1 := by
  simp only [handler_events, h] <;> rfl

theorem fall_back_extends {α : Type} (hooks : Hooks α) (cfg : ContractConfig)
    (raw_input original : α) (policy : Policy) (c : ContractOut α) (o : Outcome α)
    (ho : (fall_back hooks cfg raw_input original policy c).result.outcome? = some o) :
    Extends (failure_outcome cfg raw_input original policy c) o := by
  cases policy with
  | ignore =>
    simp only [fall_back] at ho
    exact fp_extends hooks cfg original _ o ho
  | observe =>
    simp only [fall_back] at ho
    exact extends_trans (handler_extends hooks _) (fp_extends hooks cfg original _ o ho)
  | enforce =>
    simp only [fall_back, CallResult.outcome?] at ho
    cases ho
    exact handler_extends hooks _
  | quick_enforce =>
    simp only [fall_back, CallResult.outcome?] at ho
    cases ho
    exact extends_refl _

section Conclude

variable {α : Type} (hooks : Hooks α) (cfg : ContractConfig) (raw_input : α)

theorem conclude_succeeded (c : ContractOut α) (used result : α)
    (h : c.ending = ContractEnd.succeeded used result) :
    conclude hooks cfg raw_input c =
      { result := (forward_phase hooks cfg used (success_outcome cfg raw_input used result c)).result,
        trace := Event.enter Phase.forward ::
          (forward_phase hooks cfg used (success_outcome cfg raw_input used result c)).trace } := by
  simp only [conclude, h]

theorem conclude_failed (c : ContractOut α) (policy : Policy) (original : α)
    (h : c.ending = ContractEnd.failed policy original) :
    conclude hooks cfg raw_input c = fall_back hooks cfg raw_input original policy c := by
  simp only [conclude, h]

theorem conclude_every (c : ContractOut α) : every finishing (conclude hooks cfg raw_input c).trace := by
  cases hend : c.ending with
  | succeeded used result =>
    rw [conclude_succeeded hooks cfg raw_input c used result hend]
    exact every_cons trivial (fp_every hooks cfg used _)
  | failed p original =>
    rw [conclude_failed hooks cfg raw_input c p original hend]
    cases p with
    | ignore => exact every_cons trivial (fp_every hooks cfg original _)
    | observe =>
      exact every_cons trivial (every_append (handler_events_every hooks) (fp_every hooks cfg original _))
    | enforce => exact every_cons trivial (handler_events_every hooks)
    | quick_enforce => exact every_cons trivial every_nil

theorem conclude_beats (c : ContractOut α) : beats (conclude hooks cfg raw_input c).trace = [] :=
  collect_eq_nil beat_part finishing_beats _ (conclude_every hooks cfg raw_input c)

theorem conclude_quick (c : ContractOut α) : tally quick_part (conclude hooks cfg raw_input c).trace = 0 :=
  tally_eq_zero quick_part finishing_quick _ (conclude_every hooks cfg raw_input c)

theorem conclude_post_entered (c : ContractOut α) :
    tally post_entered (conclude hooks cfg raw_input c).trace = 0 :=
  tally_eq_zero post_entered finishing_post_entered _ (conclude_every hooks cfg raw_input c)

theorem conclude_succeeded_extends (c : ContractOut α) (used result : α)
    (h : c.ending = ContractEnd.succeeded used result) (o : Outcome α)
    (ho : (conclude hooks cfg raw_input c).result.outcome? = some o) :
    Extends (success_outcome cfg raw_input used result c) o := by
  rw [conclude_succeeded hooks cfg raw_input c used result h] at ho
  exact fp_extends hooks cfg used (success_outcome cfg raw_input used result c) o ho

theorem conclude_failed_extends (c : ContractOut α) (policy : Policy) (original : α)
    (h : c.ending = ContractEnd.failed policy original) (o : Outcome α)
    (ho : (conclude hooks cfg raw_input c).result.outcome? = some o) :
    Extends (failure_outcome cfg raw_input original policy c) o := by
  rw [conclude_failed hooks cfg raw_input c policy original h] at ho
  exact fall_back_extends hooks cfg raw_input original policy c o ho

theorem conclude_graceful (c : ContractOut α) (hg : cfg.retry.graceful = true) :
    tally check_count (conclude hooks cfg raw_input c).trace = 0 := by
  cases hend : c.ending with
  | succeeded used result =>
    rw [conclude_succeeded hooks cfg raw_input c used result hend]
    simp only [tally_cons, check_count, fp_graceful hooks cfg _ _ hg] <;> omega
  | failed p original =>
    rw [conclude_failed hooks cfg raw_input c p original hend]
    cases p with
    | ignore => simp only [fall_back, tally_cons, check_count, fp_graceful hooks cfg _ _ hg] <;> omega
    | observe =>
      simp only [fall_back, tally_cons, tally_append, check_count, handler_events_check,
        fp_graceful hooks cfg _ _ hg] <;> omega
    | enforce => simp only [fall_back, tally_cons, check_count, handler_events_check] <;> omega
    | quick_enforce => simp only [fall_back, tally_cons, tally_nil, check_count] <;> omega

end Conclude

/-! ## The call -/

section Call

variable {α : Type} (engine : Engine α) (random : Phase → Nat → Nat) (hooks : Hooks α)
  (cfg : ContractConfig) (raw_input : α)

theorem run_call_trace :
    (run_call engine random hooks cfg raw_input).trace =
      (contract engine random hooks cfg raw_input).trace ++
        (conclude hooks cfg raw_input (contract engine random hooks cfg raw_input)).trace := rfl

theorem run_call_result :
    (run_call engine random hooks cfg raw_input).result =
      (conclude hooks cfg raw_input (contract engine random hooks cfg raw_input)).result := rfl

theorem contract_forward_zero :
    tally forward_count (contract engine random hooks cfg raw_input).trace = 0 :=
  tally_eq_zero forward_count (contract_forward cfg hooks) _ (contract_every engine random hooks cfg raw_input)

theorem contract_handler_zero :
    tally handler_count (contract engine random hooks cfg raw_input).trace = 0 :=
  tally_eq_zero handler_count (contract_handler cfg hooks) _ (contract_every engine random hooks cfg raw_input)

theorem contract_check_zero :
    tally check_count (contract engine random hooks cfg raw_input).trace = 0 :=
  tally_eq_zero check_count (contract_check cfg hooks) _ (contract_every engine random hooks cfg raw_input)

theorem contract_inputs :
    forward_inputs (contract engine random hooks cfg raw_input).trace = [] :=
  collect_eq_nil forward_part (contract_forward_part cfg hooks) _
    (contract_every engine random hooks cfg raw_input)

/-- The engine calls of each stage of a call, and whether the post stage was reached. -/
theorem call_beats :
    ∃ a b, beats (run_call engine random hooks cfg raw_input).trace =
        spaced Phase.pre a ++ spaced Phase.post b ∧
      a ≤ cfg.pre_remedy_budget ∧ b ≤ cfg.generation_budget ∧
      (0 < tally post_entered (run_call engine random hooks cfg raw_input).trace →
        0 < cfg.generation_budget → 0 < b) := by
  obtain ⟨a, b, hab, ha, hb, hpos⟩ := contract_beats engine random hooks cfg raw_input
  refine ⟨a, b, ?_, ha, hb, ?_⟩
  · rw [run_call_trace, beats_append, hab, conclude_beats, List.append_nil]
  · intro h hbudget
    have h0 := conclude_post_entered hooks cfg raw_input (contract engine random hooks cfg raw_input)
    rw [run_call_trace, tally_append] at h
    exact hpos (by omega) hbudget

theorem call_engine_calls (phase : Phase) (a b : Nat)
    (h : beats (run_call engine random hooks cfg raw_input).trace =
      spaced Phase.pre a ++ spaced Phase.post b) :
    engine_calls Phase.pre (run_call engine random hooks cfg raw_input).trace = a ∧
    engine_calls Phase.post (run_call engine random hooks cfg raw_input).trace = b := by
  have hne : Phase.pre ≠ Phase.post := by decide
  have hne' : Phase.post ≠ Phase.pre := by decide
  constructor
  · simp only [engine_calls, h, tally_append, spaced_same, spaced_other Phase.post Phase.pre hne' b] <;>
      omega
  · simp only [engine_calls, h, tally_append, spaced_same, spaced_other Phase.pre Phase.post hne a] <;>
      omega

/-- Invariant `post-attempts-bounded`: The post stage makes at most `tries` engine calls
with post_remedy, and at most one without it (§4). -/
theorem post_attempts_bounded :
    engine_calls Phase.post (run_call engine random hooks cfg raw_input).trace ≤ cfg.generation_budget ∧
    (cfg.post_remedy = true →
      engine_calls Phase.post (run_call engine random hooks cfg raw_input).trace ≤ cfg.retry.tries) ∧
    (cfg.post_remedy = false →
      engine_calls Phase.post (run_call engine random hooks cfg raw_input).trace ≤ 1) := by
  obtain ⟨a, b, hab, _, hb, _⟩ := call_beats engine random hooks cfg raw_input
  have hc := (call_engine_calls engine random hooks cfg raw_input Phase.post a b hab).2
  refine ⟨by omega, ?_, ?_⟩
  · intro hp
    have e : cfg.generation_budget = cfg.retry.tries := by
      simp only [ContractConfig.generation_budget, hp]
    omega
  · intro hp
    have e : cfg.generation_budget = 1 := by
      simp only [ContractConfig.generation_budget, hp]
    omega

/-- Invariant `post-stage-calls-engine`: A call whose contract reaches the post stage makes
at least one post-stage engine call; without post_remedy, exactly one (§4). Reaching the
post stage is the `enter post` event; `tries ≥ 1` is validated by Python's `RetryPolicy`. -/
theorem post_stage_calls_engine (htries : 1 ≤ cfg.retry.tries)
    (hreach : 0 < tally post_entered (run_call engine random hooks cfg raw_input).trace) :
    1 ≤ engine_calls Phase.post (run_call engine random hooks cfg raw_input).trace ∧
    (cfg.post_remedy = false →
      engine_calls Phase.post (run_call engine random hooks cfg raw_input).trace = 1) := by
  obtain ⟨a, b, hab, _, hb, hpos⟩ := call_beats engine random hooks cfg raw_input
  have hc := (call_engine_calls engine random hooks cfg raw_input Phase.post a b hab).2
  have hbudget : 0 < cfg.generation_budget := by
    unfold ContractConfig.generation_budget
    split <;> omega
  have hb1 := hpos hreach hbudget
  refine ⟨by omega, ?_⟩
  intro hp
  have e : cfg.generation_budget = 1 := by
    simp only [ContractConfig.generation_budget, hp]
  omega

/-- Invariant `pre-attempts-bounded`: The pre stage makes at most `tries` engine calls
with pre_remedy (§4). -/
theorem pre_attempts_bounded :
    engine_calls Phase.pre (run_call engine random hooks cfg raw_input).trace ≤ cfg.pre_remedy_budget ∧
    (cfg.pre_remedy = true →
      engine_calls Phase.pre (run_call engine random hooks cfg raw_input).trace ≤ cfg.retry.tries) := by
  obtain ⟨a, b, hab, ha, _, _⟩ := call_beats engine random hooks cfg raw_input
  have hc := (call_engine_calls engine random hooks cfg raw_input Phase.pre a b hab).1
  refine ⟨by omega, ?_⟩
  intro hp
  have e : cfg.pre_remedy_budget = cfg.retry.tries := by
    simp only [ContractConfig.pre_remedy_budget, hp]
  omega

/-- Invariant `remedy-only-when-enabled`: No pre-stage engine call is made without
pre_remedy, and no second post-stage engine call without post_remedy (§4). -/
theorem remedy_only_when_enabled :
    (cfg.pre_remedy = false →
      engine_calls Phase.pre (run_call engine random hooks cfg raw_input).trace = 0) ∧
    (cfg.post_remedy = false →
      engine_calls Phase.post (run_call engine random hooks cfg raw_input).trace ≤ 1) := by
  have hpre := (pre_attempts_bounded engine random hooks cfg raw_input).1
  refine ⟨?_, (post_attempts_bounded engine random hooks cfg raw_input).2.2⟩
  intro hp
  have e : cfg.pre_remedy_budget = 0 := by
    simp only [ContractConfig.pre_remedy_budget, hp]
  omega

/-- Invariant `forward-once-on-success`: When the contract succeeds, forward runs exactly
once, under every policy (§3.6). -/
theorem forward_once_on_success (used result : α)
    (h : (contract engine random hooks cfg raw_input).ending = ContractEnd.succeeded used result) :
    tally forward_count (run_call engine random hooks cfg raw_input).trace = 1 := by
  have h1 := contract_forward_zero engine random hooks cfg raw_input
  simp only [run_call_trace, tally_append, h1,
    conclude_succeeded hooks cfg raw_input _ used result h, tally_cons, forward_count, fp_forward] <;>
    omega

/-- Invariant `forward-once-observing`: Under ignore and observe, forward runs exactly once
per call, whatever the input check, predicates, act, pre-flight, engine and handler do,
raising included (§3.6). "Under ignore and observe": the contract's policy and every
predicate's effective policy are `ignore` or `observe` (rank ≤ 1). -/
theorem forward_once_observing (hweak : cfg.policy.rank ≤ 1)
    (hpre : every (fun p => (effective_policy cfg.policy p).rank ≤ 1) hooks.pre_conditions)
    (hpost : every (fun p => (effective_policy cfg.policy p).rank ≤ 1) hooks.post_conditions) :
    tally forward_count (run_call engine random hooks cfg raw_input).trace = 1 := by
  have h1 := contract_forward_zero engine random hooks cfg raw_input
  cases hend : (contract engine random hooks cfg raw_input).ending with
  | succeeded used result =>
    exact forward_once_on_success engine random hooks cfg raw_input used result hend
  | failed p original =>
    have hp := contract_ranked engine random hooks cfg raw_input 1 hweak (by decide) hpre hpost p
      original hend
    cases p with
    | ignore =>
      simp only [run_call_trace, tally_append, h1,
        conclude_failed hooks cfg raw_input _ _ original hend, fall_back, tally_cons, forward_count,
        fp_forward] <;> omega
    | observe =>
      simp only [run_call_trace, tally_append, h1,
        conclude_failed hooks cfg raw_input _ _ original hend, fall_back, tally_cons, forward_count,
        handler_events_forward, fp_forward] <;> omega
    | enforce =>
      exfalso
      have e : Policy.enforce.rank = 2 := rfl
      omega
    | quick_enforce =>
      exfalso
      have e : Policy.quick_enforce.rank = 3 := rfl
      omega

/-- Invariant `enforce-raises-on-failure`: When a contract fails with deciding policy
enforce or quick_enforce, the call raises ContractViolationError carrying the outcome and
forward does not run (§3.6). -/
theorem enforce_raises_on_failure (p : Policy) (original : α)
    (hend : (contract engine random hooks cfg raw_input).ending = ContractEnd.failed p original)
    (hp : p = Policy.enforce ∨ p = Policy.quick_enforce) :
    (∃ o, (run_call engine random hooks cfg raw_input).result = CallResult.raised o ∧
      o.success = false ∧ o.policy = p ∧ o.input_used = original) ∧
    tally forward_count (run_call engine random hooks cfg raw_input).trace = 0 := by
  have h1 := contract_forward_zero engine random hooks cfg raw_input
  rw [run_call_result, run_call_trace, conclude_failed hooks cfg raw_input _ p original hend]
  rcases hp with rfl | rfl
  · refine ⟨⟨_, rfl, ?_, ?_, ?_⟩, ?_⟩
    · exact (handler_extends hooks _).same_success
    · exact (handler_extends hooks _).same_policy
    · exact (handler_extends hooks _).same_input_used
    · simp only [tally_append, h1, fall_back, tally_cons, forward_count, handler_events_forward] <;>
        omega
  · refine ⟨⟨_, rfl, rfl, rfl, rfl⟩, ?_⟩
    simp only [tally_append, h1, fall_back, tally_cons, tally_nil, forward_count] <;> omega

/-- Invariant `success-sound`: On success the result was accepted by the output type check
and passed every non-ignored post-condition, evaluated on the result and the input actually
used (§3.5). -/
theorem success_sound (o : Outcome α)
    (ho : (run_call engine random hooks cfg raw_input).result.outcome? = some o)
    (hs : o.success = true) :
    ∃ r raw, o.result = some r ∧ hooks.check_output raw o.input_used = Except.ok r ∧
      every (fun p => p.check r (some o.input_used) = PredResult.pass)
        (active cfg.policy hooks.post_conditions) := by
  rw [run_call_result] at ho
  cases hend : (contract engine random hooks cfg raw_input).ending with
  | failed p original =>
    exfalso
    have hx := conclude_failed_extends hooks cfg raw_input _ p original hend o ho
    have e : o.success = false := hx.same_success
    rw [hs] at e
    cases e
  | succeeded used result =>
    have hx := conclude_succeeded_extends hooks cfg raw_input _ used result hend o ho
    have hr : o.result = some result := hx.same_result
    have hu : o.input_used = used := hx.same_input_used
    obtain ⟨raw, n, hc, hv⟩ := contract_success engine random hooks cfg raw_input used result hend
    refine ⟨result, raw, hr, ?_, ?_⟩
    · rw [hu]
      exact hc
    · rw [hu]
      exact judge_nil_passes result (some used) Phase.post n cfg.policy
        (active cfg.policy hooks.post_conditions) hv

/-- Invariant `forward-input`: forward receives the post-act input when the contract
succeeds and the original input when it fails (§3.6). The post-act input is `act`'s value
on the accepted input; the original input is the checked input, else the caller's value. -/
theorem forward_input :
    (∀ used result,
      (contract engine random hooks cfg raw_input).ending = ContractEnd.succeeded used result →
      forward_inputs (run_call engine random hooks cfg raw_input).trace = [used] ∧
      ∃ x0 accepted, hooks.check_input raw_input = Except.ok x0 ∧
        (stage_pre engine random hooks cfg x0).ending = StageEnd.accepted accepted ∧
        act_phase hooks cfg.policy accepted = Except.ok used) ∧
    (∀ p original,
      (contract engine random hooks cfg raw_input).ending = ContractEnd.failed p original →
      (p = Policy.ignore ∨ p = Policy.observe) →
      forward_inputs (run_call engine random hooks cfg raw_input).trace = [original] ∧
      (∀ e, hooks.check_input raw_input = Except.error e → original = raw_input) ∧
      (∀ x0, hooks.check_input raw_input = Except.ok x0 → original = x0)) := by
  have h0 := contract_inputs engine random hooks cfg raw_input
  constructor
  · intro used result hend
    refine ⟨?_, contract_used engine random hooks cfg raw_input used result hend⟩
    simp only [run_call_trace, forward_inputs_append, h0,
      conclude_succeeded hooks cfg raw_input _ used result hend, forward_inputs_cons, forward_part,
      fp_inputs, List.nil_append]
  · intro p original hend hp
    refine ⟨?_, contract_original engine random hooks cfg raw_input p original hend⟩
    rcases hp with rfl | rfl
    · simp only [run_call_trace, forward_inputs_append, h0,
        conclude_failed hooks cfg raw_input _ _ original hend, fall_back, forward_inputs_cons,
        forward_part, fp_inputs, List.nil_append]
    · simp only [run_call_trace, forward_inputs_append, h0,
        conclude_failed hooks cfg raw_input _ _ original hend, fall_back, forward_inputs_cons,
        forward_part, fp_inputs, handler_events_inputs, List.nil_append]

/-- Invariant `handler-once-per-failure`: The handler is called exactly once per failed
contract whose deciding policy is observe or enforce, and never otherwise, in particular
never on success (§3.6). "Called" presumes a handler is installed (`on_violation`). -/
theorem handler_once_per_failure :
    (∀ used result,
      (contract engine random hooks cfg raw_input).ending = ContractEnd.succeeded used result →
      tally handler_count (run_call engine random hooks cfg raw_input).trace = 0) ∧
    (∀ p original,
      (contract engine random hooks cfg raw_input).ending = ContractEnd.failed p original →
      (p = Policy.observe ∨ p = Policy.enforce) →
      ∀ handler, hooks.on_violation = some handler →
      tally handler_count (run_call engine random hooks cfg raw_input).trace = 1) ∧
    (∀ p original,
      (contract engine random hooks cfg raw_input).ending = ContractEnd.failed p original →
      (p = Policy.ignore ∨ p = Policy.quick_enforce) →
      tally handler_count (run_call engine random hooks cfg raw_input).trace = 0) := by
  have h1 := contract_handler_zero engine random hooks cfg raw_input
  refine ⟨?_, ?_, ?_⟩
  · intro used result hend
    simp only [run_call_trace, tally_append, h1,
      conclude_succeeded hooks cfg raw_input _ used result hend, tally_cons, handler_count,
      fp_handler] <;> omega
  · intro p original hend hp handler hh
    have hc := handler_events_count hooks handler hh
    rcases hp with rfl | rfl
    · simp only [run_call_trace, tally_append, h1, conclude_failed hooks cfg raw_input _ _ original hend,
        fall_back, tally_cons, handler_count, hc, fp_handler] <;> omega
    · simp only [run_call_trace, tally_append, h1, conclude_failed hooks cfg raw_input _ _ original hend,
        fall_back, tally_cons, handler_count, hc] <;> omega
  · intro p original hend hp
    rcases hp with rfl | rfl
    · simp only [run_call_trace, tally_append, h1, conclude_failed hooks cfg raw_input _ _ original hend,
        fall_back, tally_cons, handler_count, fp_handler] <;> omega
    · simp only [run_call_trace, tally_append, h1, conclude_failed hooks cfg raw_input _ _ original hend,
        fall_back, tally_cons, tally_nil, handler_count] <;> omega

/-- Invariant `no-short-circuit`: Every non-ignored predicate of a phase is evaluated on
every checked candidate, so every failing message is reported (§3.2). Each evaluation in
the trace evaluates exactly the non-ignored predicates of its phase, and an evaluation
reports one violation per failing predicate. -/
theorem no_short_circuit :
    every (evaluates_all cfg.policy hooks) (run_call engine random hooks cfg raw_input).trace ∧
    ∀ (preds : List (Predicate α)) (value : α) (context : Option α) (phase : Phase) (attempt : Nat),
      (evaluate preds value context phase attempt cfg.policy).evaluated = active cfg.policy preds ∧
      (evaluate preds value context phase attempt cfg.policy).violations.length =
        tally (fun p => failing (p.check value context)) (active cfg.policy preds) := by
  refine ⟨?_, fun preds value context phase attempt =>
    ⟨rfl, judge_length value context phase attempt cfg.policy (active cfg.policy preds)⟩⟩
  rw [run_call_trace]
  exact every_append
    (every_mono (contract_to_evaluates cfg hooks) _ (contract_every engine random hooks cfg raw_input))
    (every_mono (finishing_to_evaluates cfg hooks) _ (conclude_every hooks cfg raw_input _))

theorem evaluates_to_never {β : Type} (cp : Policy) (hk : Hooks β) :
    ∀ (e : Event β), evaluates_all cp hk e → never_ignored cp e := by
  intro e h
  cases e with
  | evaluate phase attempt ps trials =>
    have hps : ps = active cp (conditions hk phase) := h
    subst hps
    exact active_not_ignored cp _
  | enter _ => exact trivial
  | fail _ => exact trivial
  | generate _ _ _ _ _ => exact trivial
  | attempt _ => exact trivial
  | sleep _ => exact trivial
  | preflight _ => exact trivial
  | handler => exact trivial
  | forward _ => exact trivial
  | check_result _ => exact trivial

theorem evaluates_to_nothing {β : Type} (cf : ContractConfig) (hk : Hooks β)
    (hcp : cf.policy = Policy.ignore)
    (hpre : every (fun p => p.policy = none) hk.pre_conditions)
    (hpost : every (fun p => p.policy = none) hk.post_conditions) :
    ∀ (e : Event β), evaluates_all cf.policy hk e → evaluates_nothing e := by
  intro e h
  cases e with
  | evaluate phase attempt ps trials =>
    have hps : ps = active cf.policy (conditions hk phase) := h
    have hn : every (fun p => p.policy = none) (conditions hk phase) := by
      cases phase with
      | pre => exact hpre
      | post => exact hpost
      | input => exact every_nil
      | act => exact every_nil
      | preflight => exact every_nil
      | forward => exact every_nil
      | result => exact every_nil
    show ps = []
    rw [hps, hcp]
    exact active_ignore_empty _ hn
  | enter _ => exact trivial
  | fail _ => exact trivial
  | generate _ _ _ _ _ => exact trivial
  | attempt _ => exact trivial
  | sleep _ => exact trivial
  | preflight _ => exact trivial
  | handler => exact trivial
  | forward _ => exact trivial
  | check_result _ => exact trivial

/-- Invariant `ignored-never-evaluated`: A predicate whose effective policy is ignore is
never evaluated; under the ignore policy without overrides no predicate is (§2.2). -/
theorem ignored_never_evaluated :
    every (never_ignored cfg.policy) (run_call engine random hooks cfg raw_input).trace ∧
    (cfg.policy = Policy.ignore →
      every (fun p => p.policy = none) hooks.pre_conditions →
      every (fun p => p.policy = none) hooks.post_conditions →
      every evaluates_nothing (run_call engine random hooks cfg raw_input).trace) := by
  have hall := (no_short_circuit engine random hooks cfg raw_input).1
  constructor
  · exact every_mono (evaluates_to_never cfg.policy hooks) _ hall
  · intro hcp hpre hpost
    exact every_mono (evaluates_to_nothing cfg hooks hcp hpre hpost) _ hall

/-- Invariant `quick-enforce-stops`: A quick_enforce violation ends the contract at once:
no handler is called and no further engine call is made (§2.2). After the first event
that records a quick_enforce violation, the call only enters the forward phase, where it
raises. -/
theorem quick_enforce_stops
    (h : 0 < tally quick_part (run_call engine random hooks cfg raw_input).trace) :
    after_quick (run_call engine random hooks cfg raw_input).trace = [Event.enter Phase.forward] ∧
    beats (after_quick (run_call engine random hooks cfg raw_input).trace) = [] ∧
    tally handler_count (run_call engine random hooks cfg raw_input).trace = 0 ∧
    (∃ o, (run_call engine random hooks cfg raw_input).result = CallResult.raised o) := by
  have hq0 := conclude_quick hooks cfg raw_input (contract engine random hooks cfg raw_input)
  have hc : 0 < tally quick_part (contract engine random hooks cfg raw_input).trace := by
    rw [run_call_trace, tally_append] at h
    omega
  obtain ⟨⟨o, hend⟩, hafter⟩ := contract_quick engine random hooks cfg raw_input hc
  have hconc := conclude_failed hooks cfg raw_input _ Policy.quick_enforce o hend
  have hafter_all : after_quick (run_call engine random hooks cfg raw_input).trace =
      [Event.enter Phase.forward] := by
    rw [run_call_trace, after_quick_stop_append _ _ hc, hafter, hconc] <;> rfl
  have h1 := contract_handler_zero engine random hooks cfg raw_input
  refine ⟨hafter_all, ?_, ?_, ?_⟩
  · rw [hafter_all] <;> rfl
  · simp only [run_call_trace, tally_append, h1, hconc, fall_back, tally_cons, tally_nil,
      handler_count] <;> omega
  · rw [run_call_result, hconc]
    exact ⟨_, rfl⟩

/-- Invariant `feedback-exact`: Engine call n of a stage receives exactly the violations of
the latest checked candidate, or with accumulate_errors all earlier violations of the stage
in order (§4.2). For the pre stage the first checked candidate is the caller's input. -/
theorem feedback_exact :
    (∀ x0, fed cfg.accumulate_errors
      [(evaluate (conditions hooks Phase.pre) x0 none Phase.pre 0 cfg.policy).violations]
      (attempts_of (stage_pre engine random hooks cfg x0).trace)) ∧
    (∀ used, fed cfg.accumulate_errors [] (attempts_of (stage_post engine random hooks cfg used).trace)) :=
  ⟨fun x0 => pre_fed engine random hooks cfg x0, fun used => post_fed engine random hooks cfg used⟩

/-- Invariant `preflight-unsat-no-generation`: An unsatisfiable pre-flight verdict means no
post-stage engine call and a failed outcome with an unsatisfiable violation (§3.4). -/
theorem preflight_unsat_no_generation (answer : PreflightResult)
    (hpf : (contract engine random hooks cfg raw_input).preflight = some answer)
    (hun : answer.verdict = Verdict.unsatisfiable) :
    engine_calls Phase.post (run_call engine random hooks cfg raw_input).trace = 0 ∧
    (∃ original, (contract engine random hooks cfg raw_input).ending =
      ContractEnd.failed cfg.policy original) ∧
    (∀ o, (run_call engine random hooks cfg raw_input).result.outcome? = some o →
      o.success = false ∧ 0 < tally unsat_count o.violations) := by
  obtain ⟨⟨original, hend⟩, hcalls, hv⟩ :=
    contract_unsat engine random hooks cfg raw_input answer hun hpf
  refine ⟨?_, ⟨original, hend⟩, ?_⟩
  · simp only [engine_calls, run_call_trace, beats_append, conclude_beats, List.append_nil]
    exact hcalls
  · intro o ho
    rw [run_call_result] at ho
    have hx := conclude_failed_extends hooks cfg raw_input _ _ original hend o ho
    obtain ⟨extra, hextra⟩ := hx.more_violations
    have hbase : (failure_outcome cfg raw_input original cfg.policy
        (contract engine random hooks cfg raw_input)).violations =
        violations_of (contract engine random hooks cfg raw_input).trace := rfl
    refine ⟨hx.same_success, ?_⟩
    rw [hextra, hbase, tally_append]
    omega

/-- Invariant `backoff-bounded`: Every backoff delay is at most max_delay + jitter (§4.3). -/
theorem backoff_bounded :
    every (fun d => d ≤ cfg.retry.max_delay + cfg.retry.jitter)
      (delays_of (run_call engine random hooks cfg raw_input).trace) := by
  have h1 := delays_bounded cfg hooks (contract_event cfg hooks)
    (fun e he d hd => by subst hd; exact he) _ (contract_every engine random hooks cfg raw_input)
  have h2 : delays_of (conclude hooks cfg raw_input (contract engine random hooks cfg raw_input)).trace = [] :=
    collect_eq_nil sleep_part finishing_sleeps _ (conclude_every hooks cfg raw_input _)
  rw [run_call_trace, delays_of_append, h2, List.append_nil]
  exact h1

/-- Invariant `no-sleep-after-last`: A stage sleeps once before each of its engine calls
except the first, and never after its last engine call (§4.3). The `Generate`/`Sleep`
effects of a call are `spaced pre a ++ spaced post b`: per stage, a first call, then
(sleep, call) pairs, and nothing after the last call. -/
theorem no_sleep_after_last :
    ∃ a b, beats (run_call engine random hooks cfg raw_input).trace =
      spaced Phase.pre a ++ spaced Phase.post b ∧
      engine_calls Phase.pre (run_call engine random hooks cfg raw_input).trace = a ∧
      engine_calls Phase.post (run_call engine random hooks cfg raw_input).trace = b := by
  obtain ⟨a, b, hab, _, _, _⟩ := call_beats engine random hooks cfg raw_input
  have hc := call_engine_calls engine random hooks cfg raw_input Phase.pre a b hab
  exact ⟨a, b, hab, hc.1, hc.2⟩

/-- Invariant `graceful-skips-result-check`: With graceful, the final result type check is
not applied and the outcome records no exception (§3.7). -/
theorem graceful_skips_result_check (hg : cfg.retry.graceful = true) :
    tally check_count (run_call engine random hooks cfg raw_input).trace = 0 ∧
    ∀ o, (run_call engine random hooks cfg raw_input).result.outcome? = some o → o.exception = none := by
  constructor
  · have h1 := contract_check_zero engine random hooks cfg raw_input
    have h2 := conclude_graceful hooks cfg raw_input (contract engine random hooks cfg raw_input) hg
    rw [run_call_trace, tally_append]
    omega
  · intro o ho
    rw [run_call_result] at ho
    cases hend : (contract engine random hooks cfg raw_input).ending with
    | succeeded used result =>
      have hx := conclude_succeeded_extends hooks cfg raw_input _ used result hend o ho
      exact hx.same_exception.trans rfl
    | failed p original =>
      have hx := conclude_failed_extends hooks cfg raw_input _ p original hend o ho
      have e : (failure_outcome cfg raw_input original p
          (contract engine random hooks cfg raw_input)).exception = none := by
        simp only [failure_outcome, make_outcome, exception_for, hg]
      exact hx.same_exception.trans e

end Call

end HoareKernel
