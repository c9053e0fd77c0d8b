/-
The bounded repair loop `stage_loop` (§4).
Part of the proofs of spec/invariants.toml about the model of Pipeline.lean; see
Invariants.lean for the order of the parts.
-/
import HoareKernel.Invariants.Attempt

namespace HoareKernel

/-! ## The bounded loop (§4) -/

/-! ### The feedback of the `Generate` effects -/

/-- The feedback a `Generate` effect carries to the engine (§4.2). -/
def generate_part {α : Type} : Event α → List (List Violation)
  | Event.enter _ => []
  | Event.evaluate _ _ _ _ => []
  | Event.fail _ => []
  | Event.generate _ _ _ fb _ => [fb]
  | Event.attempt _ => []
  | Event.sleep _ => []
  | Event.preflight _ => []
  | Event.handler => []
  | Event.forward _ => []
  | Event.check_result _ => []

/-- The feedback of the `Generate` effects of a trace, in order. -/
def generated_feedback {α : Type} (trace : List (Event α)) : List (List Violation) :=
  collect generate_part trace

/-- The feedback recorded with each attempt, in order. -/
def recorded_feedback {α : Type} : List (Attempt α) → List (List Violation)
  | [] => []
  | a :: rest => a.feedback :: recorded_feedback rest

theorem generated_feedback_nil {α : Type} : generated_feedback ([] : List (Event α)) = [] := rfl

theorem generated_feedback_cons {α : Type} (e : Event α) (l : List (Event α)) :
    generated_feedback (e :: l) = generate_part e ++ generated_feedback l := rfl

theorem generated_feedback_append {α : Type} (l1 l2 : List (Event α)) :
    generated_feedback (l1 ++ l2) = generated_feedback l1 ++ generated_feedback l2 :=
  collect_append generate_part l1 l2

theorem attempt_generates {α : Type} (engine : Engine α) (hooks : Hooks α) (cfg : ContractConfig)
    (phase : Phase) (check : α → α → Except HookError α) (context : α → Option α) (call : Nat)
    (subject : α) (fb : List Violation) (previous : Option α) :
    generated_feedback
      (attempt_once engine hooks cfg phase check context call subject fb previous).trace = [] := by
  rcases attempt_shape engine hooks cfg phase check context call subject fb previous with h | ⟨trials, h⟩ <;>
    rw [h] <;> rfl

theorem pause_generates {α : Type} (cfg : ContractConfig) (random : Phase → Nat → Nat)
    (phase : Phase) (call : Nat) :
    generated_feedback (pause cfg random phase call : List (Event α)) = [] := by
  rcases pause_shape (α := α) cfg random phase call with h | h <;> rw [h] <;> rfl

theorem head_generates {α : Type} (engine : Engine α) (random : Phase → Nat → Nat)
    (hooks : Hooks α) (cfg : ContractConfig) (phase : Phase) (check : α → α → Except HookError α)
    (context : α → Option α) (call : Nat) (subject : α) (history : List (List Violation))
    (previous : Option α) :
    generated_feedback (lead cfg random phase call subject (feedback cfg.accumulate_errors history)
      previous (attempt_once engine hooks cfg phase check context call subject
        (feedback cfg.accumulate_errors history) previous).trace) =
      [feedback cfg.accumulate_errors history] := by
  have ht := attempt_generates engine hooks cfg phase check context call subject
    (feedback cfg.accumulate_errors history) previous
  have hp := pause_generates (α := α) cfg random phase call
  simp only [lead, generated_feedback_append, generated_feedback_cons, generate_part, ht, hp,
    List.nil_append, List.cons_append, List.append_nil]

section Loop

variable {α : Type} (engine : Engine α) (random : Phase → Nat → Nat) (hooks : Hooks α)
  (cfg : ContractConfig) (phase : Phase) (check : α → α → Except HookError α)
  (context : α → Option α)

/-! ### One step of `stage_loop`, proved once

Every proof below rewrites `stage_loop` with these lemmas by name instead of unfolding the
recursive definition itself (see ../shared/lean-guide.md, "Proof habits"). -/

theorem stage_loop_zero (follow : Bool) (call : Nat) (subject : α)
    (history : List (List Violation)) (previous : Option α) :
    stage_loop engine random hooks cfg phase check context follow 0 call subject history previous =
      ({ ending := StageEnd.failed (strictest (policies (latest history))), trace := [] } :
        StageOut α) := by
  first
    | rfl
    | (simp only [stage_loop]; done)

theorem stage_loop_accepted (follow : Bool) (k call : Nat) (subject : α)
    (history : List (List Violation)) (previous : Option α) {raw candidate : α}
    (hc : (attempt_once engine hooks cfg phase check context call subject
      (feedback cfg.accumulate_errors history) previous).checked = Checked.accepted raw candidate) :
    stage_loop engine random hooks cfg phase check context follow (k + 1) call subject history
        previous =
      ({ ending := StageEnd.accepted candidate,
         trace := lead cfg random phase call subject (feedback cfg.accumulate_errors history)
             previous (attempt_once engine hooks cfg phase check context call subject
               (feedback cfg.accumulate_errors history) previous).trace ++
           [Event.attempt (record phase call (some raw) (feedback cfg.accumulate_errors history)
             [])] } : StageOut α) := by
  first
    | (simp only [stage_loop, hc]; done)
    | (unfold stage_loop; simp only [hc]; done)
    | (simp [stage_loop, hc]; done)

theorem stage_loop_quick (follow : Bool) (k call : Nat) (subject : α)
    (history : List (List Violation)) (previous : Option α) {raw typed : Option α}
    {failures : List Violation} {fatal : Bool}
    (hc : (attempt_once engine hooks cfg phase check context call subject
      (feedback cfg.accumulate_errors history) previous).checked =
        Checked.rejected raw typed failures fatal)
    (hq : quick failures = true) :
    stage_loop engine random hooks cfg phase check context follow (k + 1) call subject history
        previous =
      ({ ending := StageEnd.failed Policy.quick_enforce,
         trace := lead cfg random phase call subject (feedback cfg.accumulate_errors history)
             previous (attempt_once engine hooks cfg phase check context call subject
               (feedback cfg.accumulate_errors history) previous).trace ++
           [Event.attempt (record phase call raw (feedback cfg.accumulate_errors history) failures),
             Event.fail failures] } : StageOut α) := by
  first
    | (simp only [stage_loop, hc, hq]; done)
    | (unfold stage_loop; simp only [hc, hq]; done)
    | (simp [stage_loop, hc, hq]; done)

theorem stage_loop_fatal (follow : Bool) (k call : Nat) (subject : α)
    (history : List (List Violation)) (previous : Option α) {raw typed : Option α}
    {failures : List Violation} {fatal : Bool}
    (hc : (attempt_once engine hooks cfg phase check context call subject
      (feedback cfg.accumulate_errors history) previous).checked =
        Checked.rejected raw typed failures fatal)
    (hq : quick failures = false) (hfa : fatal = true) :
    stage_loop engine random hooks cfg phase check context follow (k + 1) call subject history
        previous =
      ({ ending := StageEnd.failed (strictest (policies failures)),
         trace := lead cfg random phase call subject (feedback cfg.accumulate_errors history)
             previous (attempt_once engine hooks cfg phase check context call subject
               (feedback cfg.accumulate_errors history) previous).trace ++
           [Event.attempt (record phase call raw (feedback cfg.accumulate_errors history) failures),
             Event.fail failures] } : StageOut α) := by
  first
    | (simp only [stage_loop, hc, hq, hfa]; done)
    | (unfold stage_loop; simp only [hc, hq, hfa]; done)
    | (simp [stage_loop, hc, hq, hfa]; done)

theorem stage_loop_continue (follow : Bool) (k call : Nat) (subject : α)
    (history : List (List Violation)) (previous : Option α) {raw typed : Option α}
    {failures : List Violation} {fatal : Bool}
    (hc : (attempt_once engine hooks cfg phase check context call subject
      (feedback cfg.accumulate_errors history) previous).checked =
        Checked.rejected raw typed failures fatal)
    (hq : quick failures = false) (hfa : fatal = false) :
    stage_loop engine random hooks cfg phase check context follow (k + 1) call subject history
        previous =
      ({ ending := (stage_loop engine random hooks cfg phase check context follow k (call + 1)
             (next_subject follow subject typed) (history ++ [failures]) raw).ending,
         trace := (lead cfg random phase call subject (feedback cfg.accumulate_errors history)
             previous (attempt_once engine hooks cfg phase check context call subject
               (feedback cfg.accumulate_errors history) previous).trace ++
           [Event.attempt (record phase call raw (feedback cfg.accumulate_errors history) failures),
             Event.fail failures]) ++
           (stage_loop engine random hooks cfg phase check context follow k (call + 1)
             (next_subject follow subject typed) (history ++ [failures]) raw).trace } :
        StageOut α) := by
  first
    | (simp only [stage_loop, hc, hq, hfa]; done)
    | (unfold stage_loop; simp only [hc, hq, hfa]; done)
    | (simp [stage_loop, hc, hq, hfa]; done)

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
      simp only [stage_loop_accepted engine random hooks cfg phase check context follow k call
          subject history previous hc]
      exact every_append hH (every_cons trivial every_nil)
    | rejected raw typed failures fatal =>
      cases hq : quick failures with
      | true =>
        simp only [stage_loop_quick engine random hooks cfg phase check context follow k call
            subject history previous hc hq, hq]
        exact every_append hH (every_cons trivial (every_cons trivial every_nil))
      | false =>
        cases hfa : fatal with
        | true =>
          simp only [stage_loop_fatal engine random hooks cfg phase check context follow k call
              subject history previous hc hq hfa, hq, hfa]
          exact every_append hH (every_cons trivial (every_cons trivial every_nil))
        | false =>
          have hr := ih (call + 1) (next_subject follow subject typed) (history ++ [failures]) raw
          simp only [stage_loop_continue engine random hooks cfg phase check context follow k call
              subject history previous hc hq hfa, hq, hfa]
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
      simp only [stage_loop_accepted engine random hooks cfg phase check context follow k call
          subject history previous hc, beats_append, hH, hp, beats_cons, beats_nil, beat_part,
        List.nil_append, List.cons_append, List.append_nil, List.append_assoc]
    | rejected raw typed failures fatal =>
      cases hq : quick failures with
      | true =>
        refine ⟨1, ?_, by omega⟩
        rw [h1]
        simp only [stage_loop_quick engine random hooks cfg phase check context follow k call
            subject history previous hc hq, hq, beats_append, hH, hp, beats_cons, beats_nil,
          beat_part, List.nil_append, List.cons_append, List.append_nil, List.append_assoc]
      | false =>
        cases hfa : fatal with
        | true =>
          refine ⟨1, ?_, by omega⟩
          rw [h1]
          simp only [stage_loop_fatal engine random hooks cfg phase check context follow k call
              subject history previous hc hq hfa, hq, hfa, beats_append, hH, hp, beats_cons,
              beats_nil, beat_part,
            List.nil_append, List.cons_append, List.append_nil, List.append_assoc]
        | false =>
          obtain ⟨m, hm, hle⟩ := ih (call + 1) (next_subject follow subject typed)
            (history ++ [failures]) raw (by omega)
          refine ⟨m + 1, ?_, by omega⟩
          simp only [stage_loop_continue engine random hooks cfg phase check context follow k call
              subject history previous hc hq hfa, hq, hfa, beats_append, hH, hp, hm, beats_cons,
              beats_nil,
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
      simp only [stage_loop_accepted engine random hooks cfg phase check context follow k call
          subject history previous hc, beats_append, hH, hp, beats_cons, beats_nil, beat_part,
        List.nil_append, List.cons_append, List.append_nil, List.append_assoc]
    | rejected raw typed failures fatal =>
      cases hq : quick failures with
      | true =>
        refine ⟨1, ?_, by omega, fun _ => by omega⟩
        rw [h1]
        simp only [stage_loop_quick engine random hooks cfg phase check context follow k call
            subject history previous hc hq, hq, beats_append, hH, hp, beats_cons, beats_nil,
          beat_part, List.nil_append, List.cons_append, List.append_nil, List.append_assoc]
      | false =>
        cases hfa : fatal with
        | true =>
          refine ⟨1, ?_, by omega, fun _ => by omega⟩
          rw [h1]
          simp only [stage_loop_fatal engine random hooks cfg phase check context follow k call
              subject history previous hc hq hfa, hq, hfa, beats_append, hH, hp, beats_cons,
              beats_nil, beat_part,
            List.nil_append, List.cons_append, List.append_nil, List.append_assoc]
        | false =>
          obtain ⟨m, hm, hle⟩ := loop_beats_later engine random hooks cfg phase check context follow
            k (call + 1) (next_subject follow subject typed) (history ++ [failures]) raw (by omega)
          refine ⟨m + 1, ?_, by omega, fun _ => by omega⟩
          simp only [stage_loop_continue engine random hooks cfg phase check context follow k call
              subject history previous hc hq hfa, hq, hfa, beats_append, hH, hp, hm, beats_cons,
              beats_nil,
            beat_part, spaced, List.nil_append, List.cons_append, List.append_nil, List.append_assoc]

/-- When the engine raises the same `FatalEngineError` at call `M` of the stage whatever it is
asked, a stage entered at a later call `call ≤ M` makes no engine call after call `M`. -/
theorem loop_beats_fatal_later (follow : Bool) (M : Nat) (e : HookError) (hfatal : e.fatal = true)
    (he : ∀ (s : α) (fb : List Violation) (prev : Option α),
      engine phase M s fb prev = Except.error e) :
    ∀ (k call : Nat) (subject : α) (history : List (List Violation)) (previous : Option α),
      2 ≤ call → call ≤ M →
      ∃ m, beats (stage_loop engine random hooks cfg phase check context follow k call subject
        history previous).trace = pairs phase m ∧ m + call ≤ M + 1 := by
  intro k
  induction k with
  | zero =>
    intro call subject history previous _ hcm
    exact ⟨0, rfl, by omega⟩
  | succ k ih =>
    intro call subject history previous hcall hcm
    have hH := head_beats engine random hooks cfg phase check context call subject history previous
    have hp := pause_beats_later (α := α) cfg random phase call hcall
    have h1 : pairs phase 1 = [Beat.pause, Beat.call phase] := rfl
    cases hc : (attempt_once engine hooks cfg phase check context call subject
        (feedback cfg.accumulate_errors history) previous).checked with
    | accepted raw candidate =>
      refine ⟨1, ?_, by omega⟩
      rw [h1]
      simp only [stage_loop_accepted engine random hooks cfg phase check context follow k call
          subject history previous hc, beats_append, hH, hp, beats_cons, beats_nil, beat_part,
        List.nil_append, List.cons_append, List.append_nil, List.append_assoc]
    | rejected raw typed failures fatal =>
      cases hq : quick failures with
      | true =>
        refine ⟨1, ?_, by omega⟩
        rw [h1]
        simp only [stage_loop_quick engine random hooks cfg phase check context follow k call
            subject history previous hc hq, hq, beats_append, hH, hp, beats_cons, beats_nil,
          beat_part, List.nil_append, List.cons_append, List.append_nil, List.append_assoc]
      | false =>
        cases hfa : fatal with
        | true =>
          refine ⟨1, ?_, by omega⟩
          rw [h1]
          simp only [stage_loop_fatal engine random hooks cfg phase check context follow k call
              subject history previous hc hq hfa, hq, hfa, beats_append, hH, hp, beats_cons,
              beats_nil, beat_part,
            List.nil_append, List.cons_append, List.append_nil, List.append_assoc]
        | false =>
          by_cases hnext : call + 1 ≤ M
          · obtain ⟨m, hm, hle⟩ := ih (call + 1) (next_subject follow subject typed)
              (history ++ [failures]) raw (by omega) hnext
            refine ⟨m + 1, ?_, by omega⟩
            simp only [stage_loop_continue engine random hooks cfg phase check context follow k call
                subject history previous hc hq hfa, hq, hfa, beats_append, hH, hp, hm, beats_cons,
                beats_nil,
              beat_part, pairs, List.nil_append, List.cons_append, List.append_nil, List.append_assoc]
          · exfalso
            have hcM : call = M := by omega
            have he' : engine phase call subject (feedback cfg.accumulate_errors history) previous =
                Except.error e := by
              rw [hcM]
              exact he _ _ _
            have hc2 := attempt_fatal engine hooks cfg phase check context call subject
              (feedback cfg.accumulate_errors history) previous e he'
            rw [hc2] at hc
            injection hc with h1' h2' h3' h4'
            rw [hfatal] at h4'
            exact absurd (h4'.trans hfa) (by decide)

/-- When the engine raises the same `FatalEngineError` at call `M ≥ 1` of the stage whatever
it is asked, the stage makes at most `M` engine calls: none after call `M` (§4.4). -/
theorem loop_beats_fatal_first (follow : Bool) (M : Nat) (e : HookError)
    (hfatal : e.fatal = true)
    (he : ∀ (s : α) (fb : List Violation) (prev : Option α),
      engine phase M s fb prev = Except.error e) (hM : 1 ≤ M) :
    ∀ (k call : Nat) (subject : α) (history : List (List Violation)) (previous : Option α),
      call = 1 →
      ∃ m, beats (stage_loop engine random hooks cfg phase check context follow k call subject
        history previous).trace = spaced phase m ∧ m ≤ M := by
  intro k call subject history previous hcall
  cases k with
  | zero => exact ⟨0, rfl, Nat.zero_le _⟩
  | succ k =>
    have hH := head_beats engine random hooks cfg phase check context call subject history previous
    have hp := pause_beats_first (α := α) cfg random phase call (by omega)
    have h1 : spaced phase 1 = [Beat.call phase] := rfl
    cases hc : (attempt_once engine hooks cfg phase check context call subject
        (feedback cfg.accumulate_errors history) previous).checked with
    | accepted raw candidate =>
      refine ⟨1, ?_, by omega⟩
      rw [h1]
      simp only [stage_loop_accepted engine random hooks cfg phase check context follow k call
          subject history previous hc, beats_append, hH, hp, beats_cons, beats_nil, beat_part,
        List.nil_append, List.cons_append, List.append_nil, List.append_assoc]
    | rejected raw typed failures fatal =>
      cases hq : quick failures with
      | true =>
        refine ⟨1, ?_, by omega⟩
        rw [h1]
        simp only [stage_loop_quick engine random hooks cfg phase check context follow k call
            subject history previous hc hq, hq, beats_append, hH, hp, beats_cons, beats_nil,
          beat_part, List.nil_append, List.cons_append, List.append_nil, List.append_assoc]
      | false =>
        cases hfa : fatal with
        | true =>
          refine ⟨1, ?_, by omega⟩
          rw [h1]
          simp only [stage_loop_fatal engine random hooks cfg phase check context follow k call
              subject history previous hc hq hfa, hq, hfa, beats_append, hH, hp, beats_cons,
              beats_nil, beat_part,
            List.nil_append, List.cons_append, List.append_nil, List.append_assoc]
        | false =>
          by_cases hnext : call + 1 ≤ M
          · obtain ⟨m, hm, hle⟩ := loop_beats_fatal_later engine random hooks cfg phase check
              context follow M e hfatal he k (call + 1) (next_subject follow subject typed)
              (history ++ [failures]) raw (by omega) hnext
            refine ⟨m + 1, ?_, by omega⟩
            simp only [stage_loop_continue engine random hooks cfg phase check context follow k call
                subject history previous hc hq hfa, hq, hfa, beats_append, hH, hp, hm, beats_cons,
                beats_nil,
              beat_part, spaced, List.nil_append, List.cons_append, List.append_nil, List.append_assoc]
          · exfalso
            have hcM : call = M := by omega
            have he' : engine phase call subject (feedback cfg.accumulate_errors history) previous =
                Except.error e := by
              rw [hcM]
              exact he _ _ _
            have hc2 := attempt_fatal engine hooks cfg phase check context call subject
              (feedback cfg.accumulate_errors history) previous e he'
            rw [hc2] at hc
            injection hc with h1' h2' h3' h4'
            rw [hfatal] at h4'
            exact absurd (h4'.trans hfa) (by decide)

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
      simp only [stage_loop_accepted engine random hooks cfg phase check context follow k call
          subject history previous hc, tally_append, tally_cons, tally_nil, e2, quick_part] at h
      omega
    | rejected raw typed failures fatal =>
      have e2 : quick_part (Event.attempt (record phase call raw
        (feedback cfg.accumulate_errors history) failures) : Event α) = 0 := rfl
      cases hq : quick failures with
      | true =>
        constructor
        · simp only [stage_loop_quick engine random hooks cfg phase check context follow k call
              subject history previous hc hq, hq]
        · simp only [stage_loop_quick engine random hooks cfg phase check context follow k call
              subject history previous hc hq, hq]
          rw [after_quick_clean_append _ _ hH]
          simp only [after_quick, stops, hq]
      | false =>
        have e1 : quick_part (Event.fail failures : Event α) = 0 := by
          simp only [quick_part, quick_count, hq]
        cases hfa : fatal with
        | true =>
          exfalso
          simp only [stage_loop_fatal engine random hooks cfg phase check context follow k call
              subject history previous hc hq hfa, hq, hfa, tally_append, tally_cons, tally_nil, e1,
            e2, quick_part, quick_count] at h
          omega
        | false =>
          simp only [stage_loop_continue engine random hooks cfg phase check context follow k call
              subject history previous hc hq hfa, hq, hfa, tally_append, tally_cons, tally_nil, e1,
            e2, quick_part, quick_count] at h
          have hpos : 0 < tally quick_part (stage_loop engine random hooks cfg phase check context
            follow k (call + 1) (next_subject follow subject typed) (history ++ [failures]) raw).trace := by
            omega
          obtain ⟨h1, h2⟩ := ih (call + 1) (next_subject follow subject typed) (history ++ [failures])
            raw hpos
          constructor
          · simp only [stage_loop_continue engine random hooks cfg phase check context follow k call
                subject history previous hc hq hfa, hq, hfa]
            exact h1
          · simp only [stage_loop_continue engine random hooks cfg phase check context follow k call
                subject history previous hc hq hfa, hq, hfa]
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
    simp only [stage_loop_zero engine random hooks cfg phase check context follow call
        subject history previous] at hp
    cases hp
    exact strictest_ranked r _ (policies_ranked r _ (latest_ranked r history hh))
  | succ k ih =>
    intro call subject history previous hh p hp
    cases hc : (attempt_once engine hooks cfg phase check context call subject
        (feedback cfg.accumulate_errors history) previous).checked with
    | accepted raw candidate =>
      simp only [stage_loop_accepted engine random hooks cfg phase check context follow k call
          subject history previous hc] at hp <;> cases hp
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
          simp only [stage_loop_fatal engine random hooks cfg phase check context follow k call
              subject history previous hc hq hfa, hq, hfa] at hp
          cases hp
          exact strictest_ranked r _ (policies_ranked r _ hf)
        | false =>
          simp only [stage_loop_continue engine random hooks cfg phase check context follow k call
              subject history previous hc hq hfa, hq, hfa] at hp
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
    simp only [stage_loop_zero engine random hooks cfg phase check context false call
        subject history previous] at h <;> cases h
  | succ k ih =>
    intro call subject history previous c h
    cases hc : (attempt_once engine hooks cfg phase check context call subject
        (feedback cfg.accumulate_errors history) previous).checked with
    | accepted raw candidate =>
      have ha := attempt_accepted engine hooks cfg phase check context call subject
        (feedback cfg.accumulate_errors history) previous raw candidate hc
      simp only [stage_loop_accepted engine random hooks cfg phase check context false k call
          subject history previous hc] at h
      cases h
      exact ⟨raw, call, ha.1, ha.2⟩
    | rejected raw typed failures fatal =>
      cases hq : quick failures with
      | true =>
        simp only [stage_loop_quick engine random hooks cfg phase check context false k call
            subject history previous hc hq, hq] at h <;> cases h
      | false =>
        cases hfa : fatal with
        | true =>
          simp only [stage_loop_fatal engine random hooks cfg phase check context false k call
              subject history previous hc hq hfa, hq, hfa] at h <;> cases h
        | false =>
          simp only [stage_loop_continue engine random hooks cfg phase check context false k call
              subject history previous hc hq hfa, hq, hfa] at h
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
      simp only [stage_loop_accepted engine random hooks cfg phase check context follow k call
          subject history previous hc, attempts_of_append, hA, attempts_of_cons, attempts_of_nil,
        attempt_part, List.nil_append, List.cons_append, List.append_nil]
      exact fed_cons rfl (fed_nil _ _)
    | rejected raw typed failures fatal =>
      cases hq : quick failures with
      | true =>
        simp only [stage_loop_quick engine random hooks cfg phase check context follow k call
            subject history previous hc hq, hq, attempts_of_append, hA, attempts_of_cons,
          attempts_of_nil, attempt_part, List.nil_append, List.cons_append, List.append_nil]
        exact fed_cons rfl (fed_nil _ _)
      | false =>
        cases hfa : fatal with
        | true =>
          simp only [stage_loop_fatal engine random hooks cfg phase check context follow k call
              subject history previous hc hq hfa, hq, hfa, attempts_of_append, hA, attempts_of_cons,
            attempts_of_nil, attempt_part, List.nil_append, List.cons_append, List.append_nil]
          exact fed_cons rfl (fed_nil _ _)
        | false =>
          have hr := ih (call + 1) (next_subject follow subject typed) (history ++ [failures]) raw
          simp only [stage_loop_continue engine random hooks cfg phase check context follow k call
              subject history previous hc hq hfa, hq, hfa, attempts_of_append, hA, attempts_of_cons,
            attempts_of_nil, attempt_part, List.nil_append, List.cons_append, List.append_nil]
          exact fed_cons rfl hr

/-- The `Generate` effects of a stage carry, in order, the feedback recorded with its
attempts. -/
theorem loop_generates (follow : Bool) :
    ∀ (k call : Nat) (subject : α) (history : List (List Violation)) (previous : Option α),
      generated_feedback (stage_loop engine random hooks cfg phase check context follow k call
        subject history previous).trace =
      recorded_feedback (attempts_of (stage_loop engine random hooks cfg phase check context
        follow k call subject history previous).trace) := by
  intro k
  induction k with
  | zero =>
    intro call subject history previous
    first
      | rfl
      | (simp only [stage_loop_zero engine random hooks cfg phase check context follow call
            subject history previous, generated_feedback_nil, attempts_of_nil,
            recorded_feedback]; done)
  | succ k ih =>
    intro call subject history previous
    have hG := head_generates engine random hooks cfg phase check context call subject history
      previous
    have hA := head_attempts engine random hooks cfg phase check context call subject history
      previous
    cases hc : (attempt_once engine hooks cfg phase check context call subject
        (feedback cfg.accumulate_errors history) previous).checked with
    | accepted raw candidate =>
      simp only [stage_loop_accepted engine random hooks cfg phase check context follow k call
          subject history previous hc, generated_feedback_append, generated_feedback_cons,
        generated_feedback_nil, generate_part, hG, attempts_of_append, attempts_of_cons,
        attempts_of_nil, attempt_part, hA, recorded_feedback, record, List.nil_append,
        List.cons_append, List.append_nil]
    | rejected raw typed failures fatal =>
      cases hq : quick failures with
      | true =>
        simp only [stage_loop_quick engine random hooks cfg phase check context follow k call
            subject history previous hc hq, generated_feedback_append, generated_feedback_cons,
          generated_feedback_nil, generate_part, hG, attempts_of_append, attempts_of_cons,
          attempts_of_nil, attempt_part, hA, recorded_feedback, record, List.nil_append,
          List.cons_append, List.append_nil]
      | false =>
        cases hfa : fatal with
        | true =>
          simp only [stage_loop_fatal engine random hooks cfg phase check context follow k call
              subject history previous hc hq hfa, generated_feedback_append,
            generated_feedback_cons, generated_feedback_nil, generate_part, hG,
            attempts_of_append, attempts_of_cons, attempts_of_nil, attempt_part, hA,
            recorded_feedback, record, List.nil_append, List.cons_append, List.append_nil]
        | false =>
          have hr := ih (call + 1) (next_subject follow subject typed) (history ++ [failures]) raw
          simp only [stage_loop_continue engine random hooks cfg phase check context follow k call
              subject history previous hc hq hfa, generated_feedback_append,
            generated_feedback_cons, generated_feedback_nil, generate_part, hG, hr,
            attempts_of_append, attempts_of_cons, attempts_of_nil, attempt_part, hA,
            recorded_feedback, record, List.nil_append, List.cons_append, List.append_nil]

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
    · simp only [stage_loop_quick engine random hooks cfg phase check context follow k call
          subject history previous hc hq, hq, beats_append, hH, beats_cons, beats_nil, beat_part,
        List.nil_append, List.append_nil]
    · simp only [stage_loop_quick engine random hooks cfg phase check context follow k call
          subject history previous hc hq, hq]
      exact congrArg StageEnd.failed hp.symm
  | false =>
    have h0 : Policy.ignore.rank ≤ cfg.policy.rank := Nat.zero_le _
    have hs : strictest (policies [hook_violation ViolationKind.error phase call cfg.policy e]) =
        cfg.policy := by
      show stricter cfg.policy Policy.ignore = cfg.policy
      unfold stricter
      rw [if_pos h0]
    constructor
    · simp only [stage_loop_fatal engine random hooks cfg phase check context follow k call
          subject history previous hc hq rfl, hq, beats_append, hH, beats_cons, beats_nil,
        beat_part, List.nil_append, List.append_nil]
    · simp only [stage_loop_fatal engine random hooks cfg phase check context follow k call
          subject history previous hc hq rfl, hq, hs]

end Loop

end HoareKernel
