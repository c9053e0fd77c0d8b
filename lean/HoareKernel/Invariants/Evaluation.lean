/-
Evaluation of predicates (§3.2): every non-ignored predicate, no short-circuit, the policy each violation records.
Part of the proofs of spec/invariants.toml about the model of Pipeline.lean; see
Invariants.lean for the order of the parts.
-/
import HoareKernel.Invariants.Events

namespace HoareKernel

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

end HoareKernel
