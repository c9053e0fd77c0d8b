/-
Phases 6–7 (§3.6–§3.7): forward, handler and the result check.
Part of the proofs of spec/invariants.toml about the model of Pipeline.lean; see
Invariants.lean for the order of the parts.
-/
import HoareKernel.Invariants.Contract

namespace HoareKernel

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

end HoareKernel
