/-
Mirror of kernel/stats.py (spec/pipeline.md §7): success statistics.

Modelling choices: a rate is a pair of naturals (successes, trials), compared by
cross-multiplication instead of division. The tracker is the pure fold of
`SuccessTracker.record` over the recorded outcomes (Python adds a lock for threads; the
concurrency invariant stays a Python test). Wilson's interval is computed in Python with
floats and a square root; the model takes its raw bounds as arbitrary integers over the
common denominator `trials` and proves that the kernel's clamp alone puts the interval in
[0, 1] around the estimate.
-/
import HoareKernel.Outcome
import HoareKernel.Effects

namespace HoareKernel

/-- `successes` out of `trials` Bernoulli trials. -/
structure Rate where
  successes : Nat
  trials : Nat
  deriving Repr

/-- The estimate `successes / trials` lies in [0, 1] (for `trials > 0`). -/
def Rate.in_unit (r : Rate) : Prop := 0 ≤ r.successes ∧ r.successes ≤ r.trials

def bit (b : Bool) : Nat :=
  match b with
  | true => 1
  | false => 0

theorem bit_le_one (b : Bool) : bit b ≤ 1 := by
  cases b <;> decide

/-- A success with no pre-remedy and at most one generation attempt (Python:
`success and generation_attempts == len(attempts) <= 1`). -/
def first_try {α : Type} (outcome : Outcome α) : Bool :=
  match outcome.success with
  | false => false
  | true =>
    decide (outcome.generation_attempts = outcome.attempts.length) &&
      decide (outcome.attempts.length ≤ 1)

theorem first_try_le {α : Type} (o : Outcome α) : bit (first_try o) ≤ bit o.success := by
  unfold first_try
  cases h : o.success with
  | false => exact Nat.le_refl _
  | true => exact bit_le_one _

/-- Thread-safe counters in Python; here the state they hold. -/
structure SuccessTracker where
  calls : Nat := 0
  successes : Nat := 0
  first_attempt : Nat := 0
  generation_calls : Nat := 0
  families : List (String × Rate) := []

/-- Count one trial of a family (Python: `counts[0] += passed; counts[1] += 1`). -/
def note_trial (family : String) (passed : Bool) : List (String × Rate) → List (String × Rate)
  | [] => [(family, { successes := bit passed, trials := 1 })]
  | entry :: rest =>
    if entry.1 = family then
      (entry.1, { successes := entry.2.successes + bit passed, trials := entry.2.trials + 1 }) :: rest
    else entry :: note_trial family passed rest

def note_trials : List (String × Rate) → List (String × Bool) → List (String × Rate)
  | families, [] => families
  | families, t :: rest => note_trials (note_trial t.1 t.2 families) rest

/-- Count one call and every family trial it made (Python: `SuccessTracker.record`). -/
def SuccessTracker.record {α : Type} (t : SuccessTracker) (outcome : Outcome α) : SuccessTracker :=
  { calls := t.calls + 1,
    successes := t.successes + bit outcome.success,
    first_attempt := t.first_attempt + bit (first_try outcome),
    generation_calls := t.generation_calls + outcome.generation_attempts,
    families := note_trials t.families outcome.trials }

def SuccessTracker.record_all {α : Type} : SuccessTracker → List (Outcome α) → SuccessTracker
  | t, [] => t
  | t, o :: rest => SuccessTracker.record_all (t.record o) rest

/-- A consistent snapshot (Python: `Stats`). -/
structure Stats where
  calls : Rate
  first_attempt_successes : Nat
  remedied_successes : Nat
  generation_calls : Nat
  families : List (String × Rate)

def SuccessTracker.snapshot (t : SuccessTracker) : Stats :=
  { calls := { successes := t.successes, trials := t.calls },
    first_attempt_successes := t.first_attempt,
    remedied_successes := t.successes - t.first_attempt,
    generation_calls := t.generation_calls,
    families := t.families }

/-- The statistics after recording `outcomes` on a fresh tracker. -/
def tracked {α : Type} (outcomes : List (Outcome α)) : Stats :=
  (SuccessTracker.record_all {} outcomes).snapshot

/-- The rates of the families with at least one trial. -/
def measured : List (String × Rate) → List Rate
  | [] => []
  | f :: rest => if 0 < f.2.trials then f.2 :: measured rest else measured rest

def product_num : List Rate → Nat
  | [] => 1
  | r :: rest => r.successes * product_num rest

def product_den : List Rate → Nat
  | [] => 1
  | r :: rest => r.trials * product_den rest

/-- The product of the family rates, as a pair (Python: `Stats.product_estimate`). -/
def Stats.product_estimate (s : Stats) : Option Rate :=
  match measured s.families with
  | [] => none
  | _ :: _ => some { successes := product_num (measured s.families),
                     trials := product_den (measured s.families) }

/-! ## Wilson's interval, clamped -/

def imin (a b : Int) : Int := if a ≤ b then a else b
def imax (a b : Int) : Int := if a ≤ b then b else a

/-- An interval `[low / scale, high / scale]`. -/
structure Interval where
  low : Int
  high : Int
  scale : Nat

/-- Python's `wilson_interval`: `(0, 1)` without trials; else the raw bounds clamped to
`[0, 1]` and widened to contain `successes / trials` (all over the denominator `trials`). -/
def wilson_interval (successes trials : Nat) (raw_low raw_high : Int) : Interval :=
  match trials with
  | 0 => { low := 0, high := 1, scale := 1 }
  | n + 1 =>
    { low := imax 0 (imin successes raw_low),
      high := imin ((n + 1 : Nat) : Int) (imax successes raw_high),
      scale := n + 1 }

theorem imin_le_left (a b : Int) : imin a b ≤ a := by
  unfold imin
  split <;> omega

theorem le_imin (a b c : Int) (h1 : c ≤ a) (h2 : c ≤ b) : c ≤ imin a b := by
  unfold imin
  split <;> omega

theorem le_imax_left (a b : Int) : a ≤ imax a b := by
  unfold imax
  split <;> omega

theorem imax_le (a b c : Int) (h1 : a ≤ c) (h2 : b ≤ c) : imax a b ≤ c := by
  unfold imax
  split <;> omega

/-! ## Consistency of the counters -/

/-- What every reachable tracker satisfies. -/
structure Consistent (t : SuccessTracker) : Prop where
  successes_le_calls : t.successes ≤ t.calls
  first_le_successes : t.first_attempt ≤ t.successes
  families_valid : every (fun f : String × Rate => f.2.successes ≤ f.2.trials) t.families

theorem empty_consistent : Consistent ({} : SuccessTracker) :=
  ⟨Nat.le_refl 0, Nat.le_refl 0, every_nil⟩

theorem note_trial_valid (family : String) (passed : Bool) :
    ∀ (fams : List (String × Rate)),
      every (fun f : String × Rate => f.2.successes ≤ f.2.trials) fams →
      every (fun f : String × Rate => f.2.successes ≤ f.2.trials) (note_trial family passed fams) := by
  intro fams
  induction fams with
  | nil => intro _; exact every_cons (bit_le_one passed) every_nil
  | cons entry rest ih =>
    intro h
    have hh := every_head h
    have h1 : entry.2.successes ≤ entry.2.trials := hh
    have h2 := every_tail h
    by_cases he : entry.1 = family
    · have e : note_trial family passed (entry :: rest) =
          (entry.1, { successes := entry.2.successes + bit passed, trials := entry.2.trials + 1 }) ::
            rest := if_pos he
      rw [e]
      have hb := bit_le_one passed
      have hx : entry.2.successes + bit passed ≤ entry.2.trials + 1 := by omega
      exact every_cons hx h2
    · have e : note_trial family passed (entry :: rest) = entry :: note_trial family passed rest :=
        if_neg he
      rw [e]
      exact every_cons h1 (ih h2)

theorem note_trials_valid : ∀ (trials : List (String × Bool)) (fams : List (String × Rate)),
    every (fun f : String × Rate => f.2.successes ≤ f.2.trials) fams →
    every (fun f : String × Rate => f.2.successes ≤ f.2.trials) (note_trials fams trials) := by
  intro trials
  induction trials with
  | nil => intro fams h; exact h
  | cons t rest ih => intro fams h; exact ih _ (note_trial_valid t.1 t.2 fams h)

theorem record_consistent {α : Type} (t : SuccessTracker) (o : Outcome α) (h : Consistent t) :
    Consistent (t.record o) := by
  have hb := bit_le_one o.success
  have hf := first_try_le o
  have h1 := h.successes_le_calls
  have h2 := h.first_le_successes
  refine ⟨?_, ?_, ?_⟩
  · show t.successes + bit o.success ≤ t.calls + 1
    omega
  · show t.first_attempt + bit (first_try o) ≤ t.successes + bit o.success
    omega
  · exact note_trials_valid o.trials t.families h.families_valid

theorem record_all_consistent {α : Type} : ∀ (outcomes : List (Outcome α)) (t : SuccessTracker),
    Consistent t → Consistent (SuccessTracker.record_all t outcomes) := by
  intro outcomes
  induction outcomes with
  | nil => intro t h; exact h
  | cons o rest ih => intro t h; exact ih (t.record o) (record_consistent t o h)

theorem tracker_consistent {α : Type} (outcomes : List (Outcome α)) :
    Consistent (SuccessTracker.record_all {} outcomes) :=
  record_all_consistent outcomes {} empty_consistent

/-! ## The product of the family rates -/

theorem measured_valid : ∀ (fams : List (String × Rate)),
    every (fun f : String × Rate => f.2.successes ≤ f.2.trials) fams →
    every (fun r : Rate => r.successes ≤ r.trials) (measured fams) := by
  intro fams
  induction fams with
  | nil => intro _; exact every_nil
  | cons f rest ih =>
    intro h
    have hh := every_head h
    have ht := every_tail h
    by_cases hz : 0 < f.2.trials
    · have e : measured (f :: rest) = f.2 :: measured rest := if_pos hz
      rw [e]
      exact every_cons hh (ih ht)
    · have e : measured (f :: rest) = measured rest := if_neg hz
      rw [e]
      exact ih ht

theorem num_le_den : ∀ (rs : List Rate), every (fun r : Rate => r.successes ≤ r.trials) rs →
    product_num rs ≤ product_den rs := by
  intro rs
  induction rs with
  | nil => intro _; exact Nat.le_refl 1
  | cons r rest ih =>
    intro h
    have hh := every_head h
    have hr : r.successes ≤ r.trials := hh
    exact Nat.mul_le_mul hr (ih (every_tail h))

theorem product_le_member (r : Rate) (l2 : List Rate) : ∀ (l1 : List Rate),
    every (fun x : Rate => x.successes ≤ x.trials) (l1 ++ r :: l2) →
    product_num (l1 ++ r :: l2) * r.trials ≤ r.successes * product_den (l1 ++ r :: l2) := by
  intro l1
  induction l1 with
  | nil =>
    intro h
    have hA := num_le_den l2 (every_tail h)
    show r.successes * product_num l2 * r.trials ≤ r.successes * (r.trials * product_den l2)
    have h1 : r.successes * product_num l2 ≤ r.successes * product_den l2 :=
      Nat.mul_le_mul (Nat.le_refl _) hA
    have h2 : r.successes * product_num l2 * r.trials ≤ r.successes * product_den l2 * r.trials :=
      Nat.mul_le_mul h1 (Nat.le_refl _)
    have h3 : r.successes * product_den l2 * r.trials = r.successes * (r.trials * product_den l2) := by
      rw [Nat.mul_assoc, Nat.mul_comm (product_den l2) r.trials]
    exact Nat.le_trans h2 (Nat.le_of_eq h3)
  | cons x xs ih =>
    intro h
    have hh := every_head h
    have hx : x.successes ≤ x.trials := hh
    have ih' := ih (every_tail h)
    show x.successes * product_num (xs ++ r :: l2) * r.trials ≤
      r.successes * (x.trials * product_den (xs ++ r :: l2))
    have h1 : x.successes * (product_num (xs ++ r :: l2) * r.trials) ≤
        x.trials * (r.successes * product_den (xs ++ r :: l2)) := Nat.mul_le_mul hx ih'
    have h2 : x.successes * product_num (xs ++ r :: l2) * r.trials =
        x.successes * (product_num (xs ++ r :: l2) * r.trials) := Nat.mul_assoc _ _ _
    have h3 : x.trials * (r.successes * product_den (xs ++ r :: l2)) =
        r.successes * (x.trials * product_den (xs ++ r :: l2)) := Nat.mul_left_comm _ _ _
    rw [h2, ← h3]
    exact h1

/-! ## The invariants of scope `stats` -/

/-- Invariant `stats-counts-bounded`: 0 <= successes <= calls, first-attempt plus remedied
successes equal successes, and every family's passes are at most its trials (§7). -/
theorem stats_counts_bounded {α : Type} (outcomes : List (Outcome α)) :
    0 ≤ (tracked outcomes).calls.successes ∧
    (tracked outcomes).calls.successes ≤ (tracked outcomes).calls.trials ∧
    (tracked outcomes).first_attempt_successes + (tracked outcomes).remedied_successes =
      (tracked outcomes).calls.successes ∧
    every (fun f : String × Rate => f.2.successes ≤ f.2.trials) (tracked outcomes).families := by
  have hc := tracker_consistent outcomes
  have h1 := hc.first_le_successes
  refine ⟨Nat.zero_le _, hc.successes_le_calls, ?_, hc.families_valid⟩
  show (SuccessTracker.record_all {} outcomes).first_attempt +
      ((SuccessTracker.record_all {} outcomes).successes -
        (SuccessTracker.record_all {} outcomes).first_attempt) =
    (SuccessTracker.record_all {} outcomes).successes
  omega

/-- Invariant `stats-rate-unit`: P_succ and every family rate lie in [0, 1] (§7). -/
theorem stats_rate_unit {α : Type} (outcomes : List (Outcome α)) :
    (tracked outcomes).calls.in_unit ∧
    every (fun f : String × Rate => f.2.in_unit) (tracked outcomes).families := by
  have hc := tracker_consistent outcomes
  constructor
  · exact And.intro (Nat.zero_le _) hc.successes_le_calls
  · exact every_mono (fun f hf => And.intro (Nat.zero_le _) hf) _ hc.families_valid

/-- Invariant `stats-product-le-min`: The product-of-families estimate never exceeds the
rate of any family, hence the smallest (§7). For every family `r` among the measured ones,
`product ≤ r` by cross-multiplication. -/
theorem stats_product_le_min {α : Type} (outcomes : List (Outcome α)) (l1 l2 : List Rate)
    (r : Rate) (h : measured (tracked outcomes).families = l1 ++ r :: l2) :
    product_num (measured (tracked outcomes).families) * r.trials ≤
      r.successes * product_den (measured (tracked outcomes).families) := by
  have hv := measured_valid _ (tracker_consistent outcomes).families_valid
  have hv' : every (fun x : Rate => x.successes ≤ x.trials) (l1 ++ r :: l2) := by
    rw [← h]
    exact hv
  rw [h]
  exact product_le_member r l2 l1 hv'

/-- Invariant `stats-interval-contains`: The 95% interval lies in [0, 1] and contains the
point estimate (§7). Bounds are numerators over `scale`; the raw Wilson bounds are any
integers. -/
theorem stats_interval_contains (successes trials : Nat) (raw_low raw_high : Int)
    (h : successes ≤ trials) :
    0 ≤ (wilson_interval successes trials raw_low raw_high).low ∧
    (wilson_interval successes trials raw_low raw_high).low ≤
      (wilson_interval successes trials raw_low raw_high).high ∧
    (wilson_interval successes trials raw_low raw_high).high ≤
      ((wilson_interval successes trials raw_low raw_high).scale : Int) ∧
    (0 < trials →
      (wilson_interval successes trials raw_low raw_high).low ≤ (successes : Int) ∧
      (successes : Int) ≤ (wilson_interval successes trials raw_low raw_high).high) := by
  cases trials with
  | zero =>
    show (0 : Int) ≤ 0 ∧ (0 : Int) ≤ 1 ∧ (1 : Int) ≤ ((1 : Nat) : Int) ∧
      (0 < 0 → (0 : Int) ≤ (successes : Int) ∧ (successes : Int) ≤ 1)
    exact ⟨by omega, by omega, by omega, fun h0 => absurd h0 (Nat.lt_irrefl 0)⟩
  | succ n =>
    have a1 := le_imax_left 0 (imin (successes : Int) raw_low)
    have a2 := imax_le 0 (imin (successes : Int) raw_low) (successes : Int) (by omega)
      (imin_le_left (successes : Int) raw_low)
    have a3 := le_imin ((n + 1 : Nat) : Int) (imax (successes : Int) raw_high) (successes : Int)
      (by omega) (le_imax_left (successes : Int) raw_high)
    have a4 := imin_le_left ((n + 1 : Nat) : Int) (imax (successes : Int) raw_high)
    show 0 ≤ imax 0 (imin (successes : Int) raw_low) ∧
      imax 0 (imin (successes : Int) raw_low) ≤ imin ((n + 1 : Nat) : Int) (imax (successes : Int) raw_high) ∧
      imin ((n + 1 : Nat) : Int) (imax (successes : Int) raw_high) ≤ ((n + 1 : Nat) : Int) ∧
      (0 < n + 1 → imax 0 (imin (successes : Int) raw_low) ≤ (successes : Int) ∧
        (successes : Int) ≤ imin ((n + 1 : Nat) : Int) (imax (successes : Int) raw_high))
    exact ⟨a1, by omega, a4, fun _ => ⟨a2, a3⟩⟩

end HoareKernel
