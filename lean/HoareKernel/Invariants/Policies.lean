/-
Policies (§2.2): strictest policies, quick_enforce.
Part of the proofs of spec/invariants.toml about the model of Pipeline.lean; see
Invariants.lean for the order of the parts.
-/
import HoareKernel.Invariants.Evaluation

namespace HoareKernel

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
    | ignore => rw [quick_cons_pass v vs (by rw [hp]; decide), h2]
    | observe => rw [quick_cons_pass v vs (by rw [hp]; decide), h2]
    | enforce => rw [quick_cons_pass v vs (by rw [hp]; decide), h2]
    | quick_enforce =>
      exfalso
      rw [hp] at h1
      have h3 : Policy.quick_enforce.rank = 3 := rfl
      omega

theorem quick_single (v : Violation) (h : quick [v] = true) : v.policy = Policy.quick_enforce := by
  revert h
  cases hp : v.policy with
  | ignore => rw [quick_cons_pass v [] (by rw [hp]; decide), quick_nil]; intro h; cases h
  | observe => rw [quick_cons_pass v [] (by rw [hp]; decide), quick_nil]; intro h; cases h
  | enforce => rw [quick_cons_pass v [] (by rw [hp]; decide), quick_nil]; intro h; cases h
  | quick_enforce => intro _; rfl

end HoareKernel
