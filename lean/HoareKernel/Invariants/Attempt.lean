/-
One engine call and the events before the check of its answer (§4.1, §4.3).
Part of the proofs of spec/invariants.toml about the model of Pipeline.lean; see
Invariants.lean for the order of the parts.
-/
import HoareKernel.Invariants.Policies

namespace HoareKernel

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

end HoareKernel
