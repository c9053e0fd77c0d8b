/-
The pre stage and the post stage (§3.2, §3.5, §4).
Part of the proofs of spec/invariants.toml about the model of Pipeline.lean; see
Invariants.lean for the order of the parts.
-/
import HoareKernel.Invariants.Loop

namespace HoareKernel

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

theorem post_beats_fatal (M : Nat) (e : HookError) (hfatal : e.fatal = true)
    (he : ∀ (s : α) (fb : List Violation) (prev : Option α),
      engine Phase.post M s fb prev = Except.error e) (hM : 1 ≤ M) (used : α) :
    ∃ b, beats (stage_post engine random hooks cfg used).trace = spaced Phase.post b ∧ b ≤ M :=
  loop_beats_fatal_first engine random hooks cfg Phase.post (post_check hooks) as_context false
    M e hfatal he hM cfg.generation_budget 1 used [] none rfl

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

theorem pre_generates (given : α) :
    generated_feedback (stage_pre engine random hooks cfg given).trace =
      recorded_feedback (attempts_of (stage_pre engine random hooks cfg given).trace) := by
  cases hv : (evaluate (conditions hooks Phase.pre) given none Phase.pre 0 cfg.policy).violations with
  | nil =>
    simp only [stage_pre, hv, generated_feedback_cons, generated_feedback_nil, generate_part,
      attempts_of_cons, attempts_of_nil, attempt_part, recorded_feedback, List.nil_append]
  | cons v vs =>
    cases hq : quick (v :: vs) with
    | true =>
      simp only [stage_pre, hv, hq, generated_feedback_append, generated_feedback_cons,
        generated_feedback_nil, generate_part, attempts_of_append, attempts_of_cons,
        attempts_of_nil, attempt_part, recorded_feedback, List.nil_append]
    | false =>
      simp only [stage_pre, hv, hq, generated_feedback_append, generated_feedback_cons,
        generated_feedback_nil, generate_part, attempts_of_append, attempts_of_cons,
        attempts_of_nil, attempt_part, List.nil_append]
      exact loop_generates engine random hooks cfg Phase.pre (pre_check hooks) no_context true
        cfg.pre_remedy_budget 1 given [v :: vs] none

theorem post_generates (used : α) :
    generated_feedback (stage_post engine random hooks cfg used).trace =
      recorded_feedback (attempts_of (stage_post engine random hooks cfg used).trace) :=
  loop_generates engine random hooks cfg Phase.post (post_check hooks) as_context false
    cfg.generation_budget 1 used [] none

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

end HoareKernel
