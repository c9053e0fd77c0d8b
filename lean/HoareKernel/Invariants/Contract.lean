/-
Phases 1–5 (§3.1–§3.5): input check, pre stage, act, pre-flight, post stage.
Part of the proofs of spec/invariants.toml about the model of Pipeline.lean; see
Invariants.lean for the order of the parts.
-/
import HoareKernel.Invariants.Stages

namespace HoareKernel

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

/-- A pre-flight hook that returns something that is not a verdict counts as `unknown`
(§3.4; Python: `_preflight`): it never blocks the call. -/
theorem run_preflight_malformed {α : Type} (check : α → Except HookError PreflightAnswer)
    (used : α) (type_name : String)
    (h : check used = Except.ok (PreflightAnswer.malformed type_name)) :
    (run_preflight check used).verdict = Verdict.unknown := by
  simp only [run_preflight, h]

/-- A pre-flight hook that raises counts as `unknown` (§3.4): it never blocks the call. -/
theorem run_preflight_raised {α : Type} (check : α → Except HookError PreflightAnswer)
    (used : α) (err : HookError) (h : check used = Except.error err) :
    (run_preflight check used).verdict = Verdict.unknown := by
  simp only [run_preflight, h]

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

/-- Phases 3–5 make at most `B` post-stage engine calls when every post stage does. -/
theorem after_pre_beats_bound (B : Nat)
    (hpost : ∀ (used : α), ∃ b, beats (stage_post engine random hooks cfg used).trace =
      spaced Phase.post b ∧ b ≤ B)
    (original accepted : α) :
    ∃ b, beats (after_pre engine random hooks cfg original accepted).trace = spaced Phase.post b ∧
      b ≤ B := by
  cases ha : act_phase hooks cfg.policy accepted with
  | error violation =>
    refine ⟨0, ?_, Nat.zero_le _⟩
    simp only [after_pre, ha] <;> rfl
  | ok used =>
    have hpb := preflight_beats (α := α) (preflight_phase hooks cfg.policy used)
    cases hu : is_unsat (preflight_phase hooks cfg.policy used) with
    | true =>
      refine ⟨0, ?_, Nat.zero_le _⟩
      simp only [after_pre, ha, hu, beats_append, beats_cons, beats_nil, beat_part, hpb,
        List.nil_append, List.append_nil] <;> rfl
    | false =>
      obtain ⟨b, hb, hle⟩ := hpost used
      refine ⟨b, ?_, hle⟩
      simp only [after_pre, ha, hu, beats_append, beats_cons, beats_nil, beat_part, hpb, hb,
        List.nil_append, List.append_nil]

/-- The contract makes at most `B` post-stage engine calls when every post stage does. -/
theorem contract_beats_bound (B : Nat)
    (hpost : ∀ (used : α), ∃ b, beats (stage_post engine random hooks cfg used).trace =
      spaced Phase.post b ∧ b ≤ B)
    (raw_input : α) :
    ∃ a b, beats (contract engine random hooks cfg raw_input).trace =
        spaced Phase.pre a ++ spaced Phase.post b ∧ b ≤ B := by
  cases hi : hooks.check_input raw_input with
  | error err =>
    refine ⟨0, 0, ?_, Nat.zero_le _⟩
    simp only [contract, hi] <;> rfl
  | ok original =>
    obtain ⟨a, ha, _⟩ := pre_beats engine random hooks cfg original
    cases hs : (stage_pre engine random hooks cfg original).ending with
    | failed p =>
      refine ⟨a, 0, ?_, Nat.zero_le _⟩
      simp only [contract, hi, hs, beats_cons, beat_part, ha, spaced, List.nil_append,
        List.append_nil]
    | accepted acc =>
      obtain ⟨b, hb, hbl⟩ := after_pre_beats_bound engine random hooks cfg B hpost original acc
      refine ⟨a, b, ?_, hbl⟩
      simp only [contract, hi, hs, beats_cons, beats_append, beat_part, ha, hb, List.nil_append]

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

end HoareKernel
