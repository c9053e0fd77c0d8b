/-
Mirror of kernel/effects.py (spec/pipeline.md §6). Python's `run_call` yields `Generate`
and `Sleep` effects to a driver; the model records them, together with the hook calls
the invariants talk about, in the call's trace: a list of `Event`s in the order they
happen. The driver itself (`run_sync`, `run_async`) is not modelled: the engine is a
function passed to `run_call`.

This file also holds the small list helpers the proofs use (`tally`, `collect`,
`every`) and the projections of a trace (violations, attempts, beats, …).
-/
import HoareKernel.Predicate

namespace HoareKernel

/-- One step of a call, in order. `generate` and `sleep` are the effects of §6. -/
inductive Event (α : Type) where
  | enter (phase : Phase)
  | evaluate (phase : Phase) (attempt : Nat) (predicates : List (Predicate α))
      (trials : List (String × Bool))
  | fail (violations : List Violation)
  | generate (phase : Phase) (attempt : Nat) (input : α) (feedback : List Violation)
      (previous : Option α)
  | attempt (record : Attempt α)
  | sleep (delay : Nat)
  | preflight (result : PreflightResult)
  | handler
  | forward (input : α)
  | check_result (value : α)

/-! ## List helpers -/

/-- The sum of `weight` over a list. -/
def tally {β : Type} (weight : β → Nat) : List β → Nat
  | [] => 0
  | x :: xs => weight x + tally weight xs

/-- The concatenation of `part` over a list. -/
def collect {β γ : Type} (part : β → List γ) : List β → List γ
  | [] => []
  | x :: xs => part x ++ collect part xs

theorem collect_nil {β γ : Type} (part : β → List γ) : collect part [] = [] := rfl

theorem collect_cons {β γ : Type} (part : β → List γ) (x : β) (xs : List β) :
    collect part (x :: xs) = part x ++ collect part xs := rfl

/-- Every element satisfies `P`. -/
def every {β : Type} (P : β → Prop) : List β → Prop
  | [] => True
  | x :: xs => P x ∧ every P xs

theorem tally_nil {β : Type} (weight : β → Nat) : tally weight [] = 0 := rfl

theorem tally_cons {β : Type} (weight : β → Nat) (x : β) (xs : List β) :
    tally weight (x :: xs) = weight x + tally weight xs := rfl

theorem tally_append {β : Type} (weight : β → Nat) (l1 l2 : List β) :
    tally weight (l1 ++ l2) = tally weight l1 + tally weight l2 := by
  induction l1 with
  | nil => simp only [List.nil_append, tally_nil] <;> omega
  | cons x xs ih => simp only [List.cons_append, tally_cons, ih] <;> omega

theorem collect_append {β γ : Type} (part : β → List γ) (l1 l2 : List β) :
    collect part (l1 ++ l2) = collect part l1 ++ collect part l2 := by
  induction l1 with
  | nil => rfl
  | cons x xs ih => simp only [List.cons_append, collect_cons, ih, List.append_assoc]

theorem every_nil {β : Type} {P : β → Prop} : every P [] := trivial

theorem every_cons {β : Type} {P : β → Prop} {x : β} {xs : List β} (hx : P x)
    (hxs : every P xs) : every P (x :: xs) := And.intro hx hxs

theorem every_head {β : Type} {P : β → Prop} {x : β} {xs : List β} (h : every P (x :: xs)) :
    P x := And.left h

theorem every_tail {β : Type} {P : β → Prop} {x : β} {xs : List β} (h : every P (x :: xs)) :
    every P xs := And.right h

theorem every_append_of {β : Type} {P : β → Prop} (l2 : List β) (h2 : every P l2) :
    ∀ (l1 : List β), every P l1 → every P (l1 ++ l2) := by
  intro l1
  induction l1 with
  | nil => intro _; exact h2
  | cons x xs ih =>
    intro h1
    have hh := every_head h1
    exact every_cons hh (ih (every_tail h1))

theorem every_append {β : Type} {P : β → Prop} {l1 l2 : List β} (h1 : every P l1)
    (h2 : every P l2) : every P (l1 ++ l2) :=
  every_append_of l2 h2 l1 h1

theorem every_left_of {β : Type} {P : β → Prop} (l2 : List β) :
    ∀ (l1 : List β), every P (l1 ++ l2) → every P l1 := by
  intro l1
  induction l1 with
  | nil => intro _; exact every_nil
  | cons x xs ih =>
    intro h
    have hh := every_head h
    exact every_cons hh (ih (every_tail h))

theorem every_right_of {β : Type} {P : β → Prop} (l2 : List β) :
    ∀ (l1 : List β), every P (l1 ++ l2) → every P l2 := by
  intro l1
  induction l1 with
  | nil => intro h; exact h
  | cons x xs ih => intro h; exact ih (every_tail h)

theorem every_mono {β : Type} {P Q : β → Prop} (hpq : ∀ x, P x → Q x) :
    ∀ (l : List β), every P l → every Q l := by
  intro l
  induction l with
  | nil => intro _; exact every_nil
  | cons x xs ih => intro h; exact every_cons (hpq x (every_head h)) (ih (every_tail h))

theorem tally_eq_zero {β : Type} {P : β → Prop} (weight : β → Nat)
    (hw : ∀ x, P x → weight x = 0) : ∀ (l : List β), every P l → tally weight l = 0 := by
  intro l
  induction l with
  | nil => intro _; rfl
  | cons x xs ih =>
    intro h
    have h1 := hw x (every_head h)
    have h2 := ih (every_tail h)
    rw [tally_cons]
    omega

/-! ## Projections of a trace -/

/-- The violations an event records (`rec.fail`). -/
def fail_part {α : Type} : Event α → List Violation
  | Event.enter _ => []
  | Event.evaluate _ _ _ _ => []
  | Event.fail violations => violations
  | Event.generate _ _ _ _ _ => []
  | Event.attempt _ => []
  | Event.sleep _ => []
  | Event.preflight _ => []
  | Event.handler => []
  | Event.forward _ => []
  | Event.check_result _ => []

/-- The attempt an event records. -/
def attempt_part {α : Type} : Event α → List (Attempt α)
  | Event.enter _ => []
  | Event.evaluate _ _ _ _ => []
  | Event.fail _ => []
  | Event.generate _ _ _ _ _ => []
  | Event.attempt record => [record]
  | Event.sleep _ => []
  | Event.preflight _ => []
  | Event.handler => []
  | Event.forward _ => []
  | Event.check_result _ => []

/-- The family trials an event records. -/
def trial_part {α : Type} : Event α → List (String × Bool)
  | Event.enter _ => []
  | Event.evaluate _ _ _ trials => trials
  | Event.fail _ => []
  | Event.generate _ _ _ _ _ => []
  | Event.attempt _ => []
  | Event.sleep _ => []
  | Event.preflight _ => []
  | Event.handler => []
  | Event.forward _ => []
  | Event.check_result _ => []

/-- The backoff delay an event sleeps. -/
def sleep_part {α : Type} : Event α → List Nat
  | Event.enter _ => []
  | Event.evaluate _ _ _ _ => []
  | Event.fail _ => []
  | Event.generate _ _ _ _ _ => []
  | Event.attempt _ => []
  | Event.sleep delay => [delay]
  | Event.preflight _ => []
  | Event.handler => []
  | Event.forward _ => []
  | Event.check_result _ => []

/-- The input `forward` receives, when the event is a call of `forward`. -/
def forward_part {α : Type} : Event α → List α
  | Event.enter _ => []
  | Event.evaluate _ _ _ _ => []
  | Event.fail _ => []
  | Event.generate _ _ _ _ _ => []
  | Event.attempt _ => []
  | Event.sleep _ => []
  | Event.preflight _ => []
  | Event.handler => []
  | Event.forward input => [input]
  | Event.check_result _ => []

def violations_of {α : Type} (trace : List (Event α)) : List Violation := collect fail_part trace
def attempts_of {α : Type} (trace : List (Event α)) : List (Attempt α) :=
  collect attempt_part trace
def trials_of {α : Type} (trace : List (Event α)) : List (String × Bool) :=
  collect trial_part trace
def delays_of {α : Type} (trace : List (Event α)) : List Nat := collect sleep_part trace
def forward_inputs {α : Type} (trace : List (Event α)) : List α := collect forward_part trace

/-- The effects of a trace, without their arguments: an engine call of a phase, or a
backoff sleep. -/
inductive Beat where
  | call (phase : Phase)
  | pause
  deriving Repr, DecidableEq

def beat_part {α : Type} : Event α → List Beat
  | Event.enter _ => []
  | Event.evaluate _ _ _ _ => []
  | Event.fail _ => []
  | Event.generate phase _ _ _ _ => [Beat.call phase]
  | Event.attempt _ => []
  | Event.sleep _ => [Beat.pause]
  | Event.preflight _ => []
  | Event.handler => []
  | Event.forward _ => []
  | Event.check_result _ => []

/-- The `Generate`/`Sleep` effects of a trace, in order. -/
def beats {α : Type} (trace : List (Event α)) : List Beat := collect beat_part trace

theorem beats_nil {α : Type} : beats ([] : List (Event α)) = [] := rfl

theorem beats_cons {α : Type} (e : Event α) (l : List (Event α)) :
    beats (e :: l) = beat_part e ++ beats l := rfl

theorem beats_append {α : Type} (l1 l2 : List (Event α)) :
    beats (l1 ++ l2) = beats l1 ++ beats l2 :=
  collect_append beat_part l1 l2

theorem attempts_of_nil {α : Type} : attempts_of ([] : List (Event α)) = [] := rfl

theorem attempts_of_cons {α : Type} (e : Event α) (l : List (Event α)) :
    attempts_of (e :: l) = attempt_part e ++ attempts_of l := rfl

theorem attempts_of_append {α : Type} (l1 l2 : List (Event α)) :
    attempts_of (l1 ++ l2) = attempts_of l1 ++ attempts_of l2 :=
  collect_append attempt_part l1 l2

theorem violations_of_append {α : Type} (l1 l2 : List (Event α)) :
    violations_of (l1 ++ l2) = violations_of l1 ++ violations_of l2 :=
  collect_append fail_part l1 l2

theorem violations_of_nil {α : Type} : violations_of ([] : List (Event α)) = [] := rfl

theorem violations_of_cons {α : Type} (e : Event α) (l : List (Event α)) :
    violations_of (e :: l) = fail_part e ++ violations_of l := rfl

theorem delays_of_append {α : Type} (l1 l2 : List (Event α)) :
    delays_of (l1 ++ l2) = delays_of l1 ++ delays_of l2 :=
  collect_append sleep_part l1 l2

theorem forward_inputs_append {α : Type} (l1 l2 : List (Event α)) :
    forward_inputs (l1 ++ l2) = forward_inputs l1 ++ forward_inputs l2 :=
  collect_append forward_part l1 l2

theorem forward_inputs_cons {α : Type} (e : Event α) (l : List (Event α)) :
    forward_inputs (e :: l) = forward_part e ++ forward_inputs l := rfl

/-- 1 for an engine call of `phase`. -/
def call_weight (phase : Phase) : Beat → Nat
  | Beat.call q => if q = phase then 1 else 0
  | Beat.pause => 0

/-- Engine calls of `phase` in a trace: its `Generate` effects of that phase. -/
def engine_calls {α : Type} (phase : Phase) (trace : List (Event α)) : Nat :=
  tally (call_weight phase) (beats trace)

/-- `(Sleep, Generate)` repeated `m` times: the engine calls of a stage after its first. -/
def pairs (phase : Phase) : Nat → List Beat
  | 0 => []
  | m + 1 => Beat.pause :: Beat.call phase :: pairs phase m

theorem pairs_zero (phase : Phase) : pairs phase 0 = [] := rfl

theorem pairs_succ (phase : Phase) (m : Nat) :
    pairs phase (m + 1) = Beat.pause :: Beat.call phase :: pairs phase m := rfl

/-- The effects of a stage that made `m` engine calls: the first without a sleep, each
later one after exactly one sleep, and nothing after the last. -/
def spaced (phase : Phase) : Nat → List Beat
  | 0 => []
  | m + 1 => Beat.call phase :: pairs phase m

theorem spaced_zero (phase : Phase) : spaced phase 0 = [] := rfl

theorem spaced_succ (phase : Phase) (m : Nat) :
    spaced phase (m + 1) = Beat.call phase :: pairs phase m := rfl

theorem call_weight_same (phase : Phase) : call_weight phase (Beat.call phase) = 1 := by
  show (if phase = phase then 1 else 0) = 1
  exact if_pos rfl

theorem call_weight_other (q phase : Phase) (hne : q ≠ phase) :
    call_weight phase (Beat.call q) = 0 := by
  show (if q = phase then 1 else 0) = 0
  exact if_neg hne

theorem call_weight_pause (phase : Phase) : call_weight phase Beat.pause = 0 := rfl

theorem pairs_same (phase : Phase) :
    ∀ (m : Nat), tally (call_weight phase) (pairs phase m) = m := by
  intro m
  induction m with
  | zero => rfl
  | succ m ih =>
    have h := call_weight_same phase
    have h0 := call_weight_pause phase
    simp only [pairs_succ, tally_cons, ih, h, h0] <;> omega

theorem pairs_other (q phase : Phase) (hne : q ≠ phase) :
    ∀ (m : Nat), tally (call_weight phase) (pairs q m) = 0 := by
  intro m
  induction m with
  | zero => rfl
  | succ m ih =>
    have h := call_weight_other q phase hne
    have h0 := call_weight_pause phase
    simp only [pairs_succ, tally_cons, ih, h, h0] <;> omega

theorem spaced_same (phase : Phase) (m : Nat) :
    tally (call_weight phase) (spaced phase m) = m := by
  cases m with
  | zero => rfl
  | succ m =>
    have h := call_weight_same phase
    have hp := pairs_same phase m
    simp only [spaced_succ, tally_cons, hp, h] <;> omega

theorem spaced_other (q phase : Phase) (hne : q ≠ phase) (m : Nat) :
    tally (call_weight phase) (spaced q m) = 0 := by
  cases m with
  | zero => rfl
  | succ m =>
    have h := call_weight_other q phase hne
    have hp := pairs_other q phase hne m
    simp only [spaced_succ, tally_cons, hp, h] <;> omega

/-! ## Quick-enforce stops -/

/-- Whether a list of violations holds one whose policy is `quick_enforce`. -/
def quick : List Violation → Bool
  | [] => false
  | v :: vs =>
    match v.policy with
    | Policy.ignore => quick vs
    | Policy.observe => quick vs
    | Policy.enforce => quick vs
    | Policy.quick_enforce => true

theorem quick_nil : quick [] = false := rfl

/-- The step of `quick` when the head's policy is known not to stop. -/
theorem quick_cons_pass (v : Violation) (vs : List Violation)
    (h : v.policy ≠ Policy.quick_enforce) : quick (v :: vs) = quick vs := by
  cases hp : v.policy with
  | ignore => simp only [quick, hp]
  | observe => simp only [quick, hp]
  | enforce => simp only [quick, hp]
  | quick_enforce => exact absurd hp h

/-- The step of `quick` when the head's policy is `quick_enforce`. -/
theorem quick_cons_stop (v : Violation) (vs : List Violation)
    (h : v.policy = Policy.quick_enforce) : quick (v :: vs) = true := by
  simp only [quick, h]

/-- Whether an event records a `quick_enforce` violation. -/
def stops {α : Type} : Event α → Bool
  | Event.enter _ => false
  | Event.evaluate _ _ _ _ => false
  | Event.fail violations => quick violations
  | Event.generate _ _ _ _ _ => false
  | Event.attempt _ => false
  | Event.sleep _ => false
  | Event.preflight _ => false
  | Event.handler => false
  | Event.forward _ => false
  | Event.check_result _ => false

def quick_count (violations : List Violation) : Nat :=
  match quick violations with
  | true => 1
  | false => 0

/-- 1 for an event that records a `quick_enforce` violation. -/
def quick_part {α : Type} : Event α → Nat
  | Event.enter _ => 0
  | Event.evaluate _ _ _ _ => 0
  | Event.fail violations => quick_count violations
  | Event.generate _ _ _ _ _ => 0
  | Event.attempt _ => 0
  | Event.sleep _ => 0
  | Event.preflight _ => 0
  | Event.handler => 0
  | Event.forward _ => 0
  | Event.check_result _ => 0

/-- What follows the first event that records a `quick_enforce` violation ([] if none). -/
def after_quick {α : Type} : List (Event α) → List (Event α)
  | [] => []
  | e :: rest =>
    match stops e with
    | true => rest
    | false => after_quick rest

theorem after_quick_nil {α : Type} : after_quick ([] : List (Event α)) = [] := rfl

/-- The step of `after_quick` past an event that does not stop. -/
theorem after_quick_pass {α : Type} (e : Event α) (rest : List (Event α))
    (h : stops e = false) : after_quick (e :: rest) = after_quick rest := by
  simp only [after_quick, h]

/-- The step of `after_quick` at an event that stops. -/
theorem after_quick_stop {α : Type} (e : Event α) (rest : List (Event α))
    (h : stops e = true) : after_quick (e :: rest) = rest := by
  simp only [after_quick, h]

theorem quick_part_eq {α : Type} (e : Event α) :
    quick_part e = (match stops e with
      | true => 1
      | false => 0) := by
  cases e <;> rfl

theorem quick_part_of_stops {α : Type} (e : Event α) (h : stops e = false) :
    quick_part e = 0 := by
  simp only [quick_part_eq, h]

theorem quick_part_of_stops_true {α : Type} (e : Event α) (h : stops e = true) :
    quick_part e = 1 := by
  simp only [quick_part_eq, h]

theorem after_quick_clean_append {α : Type} (l2 : List (Event α)) :
    ∀ (l1 : List (Event α)), tally quick_part l1 = 0 → after_quick (l1 ++ l2) = after_quick l2 := by
  intro l1
  induction l1 with
  | nil => intro _; rfl
  | cons e es ih =>
    intro h
    have h0 : tally quick_part (e :: es) = quick_part e + tally quick_part es := rfl
    cases hs : stops e with
    | true =>
      exfalso
      have h1 := quick_part_of_stops_true e hs
      omega
    | false =>
      have h1 := quick_part_of_stops e hs
      have h2 : after_quick ((e :: es) ++ l2) = after_quick (es ++ l2) := by
        rw [List.cons_append]
        exact after_quick_pass e (es ++ l2) hs
      rw [h2]
      exact ih (by omega)

theorem after_quick_clean {α : Type} (l : List (Event α)) (h : tally quick_part l = 0) :
    after_quick l = [] := by
  have h1 := after_quick_clean_append ([] : List (Event α)) l h
  rw [List.append_nil] at h1
  exact h1.trans rfl

theorem after_quick_stop_append {α : Type} (l2 : List (Event α)) :
    ∀ (l1 : List (Event α)), 0 < tally quick_part l1 →
      after_quick (l1 ++ l2) = after_quick l1 ++ l2 := by
  intro l1
  induction l1 with
  | nil =>
    intro h
    exfalso
    have h0 : tally quick_part ([] : List (Event α)) = 0 := rfl
    omega
  | cons e es ih =>
    intro h
    have h0 : tally quick_part (e :: es) = quick_part e + tally quick_part es := rfl
    cases hs : stops e with
    | true => simp only [List.cons_append, after_quick_stop _ _ hs]
    | false =>
      have h1 := quick_part_of_stops e hs
      simp only [List.cons_append, after_quick_pass _ _ hs]
      exact ih (by omega)

end HoareKernel
