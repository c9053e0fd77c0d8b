/-
The whole call (§3): one theorem per `call` invariant of spec/invariants.toml.
Part of the proofs of spec/invariants.toml about the model of Pipeline.lean; see
Invariants.lean for the order of the parts.
-/
import HoareKernel.Invariants.Conclude

namespace HoareKernel

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

/-- Invariant `fatal-engine-error-stops`, on the whole call: After a FatalEngineError, its
stage makes no further engine call and sleeps no more (§4.4). When the engine raises the same
`FatalEngineError` at post-stage call `M` whatever it is asked, the call's `Generate`/`Sleep`
effects are those of some pre-stage calls and at most `M` post-stage calls, each later call
after exactly one sleep and nothing after the last: no post-stage call or sleep after call
`M`. -/
theorem fatal_engine_error_stops_call (M : Nat) (e : HookError) (hfatal : e.fatal = true)
    (he : ∀ (s : α) (fb : List Violation) (prev : Option α),
      engine Phase.post M s fb prev = Except.error e) (hM : 1 ≤ M) :
    ∃ a b, beats (run_call engine random hooks cfg raw_input).trace =
        spaced Phase.pre a ++ spaced Phase.post b ∧ b ≤ M := by
  obtain ⟨a, b, hab, hle⟩ := contract_beats_bound engine random hooks cfg M
    (fun used => post_beats_fatal engine random hooks cfg M e hfatal he hM used) raw_input
  refine ⟨a, b, ?_, hle⟩
  rw [run_call_trace, beats_append, hab, conclude_beats, List.append_nil]

/-- Invariant `feedback-exact`: Engine call n of a stage receives exactly the violations of
the latest checked candidate, or with accumulate_errors all earlier violations of the stage
in order (§4.2). For the pre stage the first checked candidate is the caller's input. -/
theorem feedback_exact :
    (∀ x0, fed cfg.accumulate_errors
      [(evaluate (conditions hooks Phase.pre) x0 none Phase.pre 0 cfg.policy).violations]
      (attempts_of (stage_pre engine random hooks cfg x0).trace)) ∧
    (∀ used, fed cfg.accumulate_errors [] (attempts_of (stage_post engine random hooks cfg used).trace)) :=
  ⟨fun x0 => pre_fed engine random hooks cfg x0, fun used => post_fed engine random hooks cfg used⟩

/-- Invariant `feedback-exact`, on the effects the engine receives: the `Generate` effects of
each stage carry, in order, the feedback recorded with its attempts, which `feedback_exact`
shows is exactly the violations of the latest checked candidate, or with accumulate_errors
all earlier violations of the stage (§4.2). -/
theorem feedback_exact_generate :
    (∀ x0, generated_feedback (stage_pre engine random hooks cfg x0).trace =
      recorded_feedback (attempts_of (stage_pre engine random hooks cfg x0).trace)) ∧
    (∀ used, generated_feedback (stage_post engine random hooks cfg used).trace =
      recorded_feedback (attempts_of (stage_post engine random hooks cfg used).trace)) :=
  ⟨fun x0 => pre_generates engine random hooks cfg x0,
    fun used => post_generates engine random hooks cfg used⟩

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

/-! ### The driver's `Sleep` (§6) -/

theorem interrupted_none {β : Type} (sleeper : Nat → Except HookError Unit)
    (hs : ∀ n, sleeper n = Except.ok ()) :
    ∀ (l : List (Event β)) (n : Nat), interrupted sleeper n l = none := by
  intro l
  induction l with
  | nil =>
    intro n
    first
      | rfl
      | (simp only [interrupted]; done)
  | cons ev rest ih =>
    intro n
    cases hb : is_sleep ev with
    | false => simp only [interrupted, hb, ih, later]
    | true => simp only [interrupted, hb, hs, ih, later]

/-- When no `Sleep` raises, the driven call is `run_call` (§6). -/
theorem run_driven_finished (sleeper : Nat → Except HookError Unit)
    (hs : ∀ n, sleeper n = Except.ok ()) :
    run_driven engine random hooks cfg sleeper raw_input =
      Driven.finished (run_call engine random hooks cfg raw_input) := by
  simp only [run_driven, interrupted_none (β := α) sleeper hs]

/-- §6: an exception raised while performing a `Sleep` ends the call at once, unchanged: the
call's events are a prefix of the contract's, ending at that `Sleep`, so no handler, no
`forward` and no result check ran. -/
theorem sleep_raised_ends_call (sleeper : Nat → Except HookError Unit) (err : HookError)
    (t : List (Event α))
    (h : run_driven engine random hooks cfg sleeper raw_input = Driven.sleep_raised err t) :
    tally handler_count t = 0 ∧ tally forward_count t = 0 ∧ tally check_count t = 0 ∧
      ∃ rest, (contract engine random hooks cfg raw_input).trace = t ++ rest := by
  have ht : t = (run_driven engine random hooks cfg sleeper raw_input).trace := by
    rw [h] <;> rfl
  cases hi : interrupted sleeper 0 (contract engine random hooks cfg raw_input).trace with
  | none =>
    simp only [run_driven, hi] at h <;> cases h
  | some found =>
    have ht2 : t = (contract engine random hooks cfg raw_input).trace.take found.2 := by
      rw [ht]
      simp only [run_driven, hi, Driven.trace]
    have hsplit : (contract engine random hooks cfg raw_input).trace.take found.2 ++
        (contract engine random hooks cfg raw_input).trace.drop found.2 =
        (contract engine random hooks cfg raw_input).trace := by
      rw [List.take_append_drop]
    have hh := tally_append handler_count
      ((contract engine random hooks cfg raw_input).trace.take found.2)
      ((contract engine random hooks cfg raw_input).trace.drop found.2)
    have hf := tally_append forward_count
      ((contract engine random hooks cfg raw_input).trace.take found.2)
      ((contract engine random hooks cfg raw_input).trace.drop found.2)
    have hk := tally_append check_count
      ((contract engine random hooks cfg raw_input).trace.take found.2)
      ((contract engine random hooks cfg raw_input).trace.drop found.2)
    rw [hsplit] at hh hf hk
    have h0 := contract_handler_zero engine random hooks cfg raw_input
    have h1 := contract_forward_zero engine random hooks cfg raw_input
    have h2 := contract_check_zero engine random hooks cfg raw_input
    rw [ht2]
    exact ⟨by omega, by omega, by omega, ⟨_, hsplit.symm⟩⟩

end Call

/-! ## feedback-exact on the whole call

The stage theorems (`pre_generates`, `post_generates`) say each stage's `Generate` effects
carry the feedback recorded with its attempts. A call's trace is the contract's trace and
then `conclude`'s; every event outside the two stages is *quiet* (neither an engine call
nor an attempt), so the property carries over to `run_call`'s trace. -/

/-- An event that is neither an engine call (`Generate`) nor an attempt record. -/
def quiet {β : Type} : Event β → Prop
  | Event.enter _ => True
  | Event.evaluate _ _ _ _ => True
  | Event.fail _ => True
  | Event.generate _ _ _ _ _ => False
  | Event.attempt _ => False
  | Event.sleep _ => True
  | Event.preflight _ => True
  | Event.handler => True
  | Event.forward _ => True
  | Event.check_result _ => True

/-- The `Generate` effects of a trace carry, in order, the feedback recorded with its
attempts. -/
def feedback_balanced {β : Type} (trace : List (Event β)) : Prop :=
  generated_feedback trace = recorded_feedback (attempts_of trace)

theorem recorded_feedback_append {β : Type} (l2 : List (Attempt β)) :
    ∀ (l1 : List (Attempt β)),
      recorded_feedback (l1 ++ l2) = recorded_feedback l1 ++ recorded_feedback l2 := by
  intro l1
  induction l1 with
  | nil => rfl
  | cons a rest ih =>
    have h1 : recorded_feedback ((a :: rest) ++ l2) =
        a.feedback :: recorded_feedback (rest ++ l2) := rfl
    have h2 : recorded_feedback (a :: rest) = a.feedback :: recorded_feedback rest := rfl
    rw [h1, h2, ih, List.cons_append]

theorem balanced_append {β : Type} {l1 l2 : List (Event β)} (h1 : feedback_balanced l1)
    (h2 : feedback_balanced l2) : feedback_balanced (l1 ++ l2) := by
  unfold feedback_balanced at h1 h2 ⊢
  rw [generated_feedback_append, attempts_of_append, recorded_feedback_append, h1, h2]

theorem quiet_balanced {β : Type} : ∀ (l : List (Event β)), every quiet l → feedback_balanced l := by
  intro l
  induction l with
  | nil => intro _; exact rfl
  | cons e rest ih =>
    intro h
    have he := every_head h
    have hr := ih (every_tail h)
    have hg : generate_part e = [] := by
      cases e <;> first | rfl | exact absurd he id
    have ha : attempt_part e = [] := by
      cases e <;> first | rfl | exact absurd he id
    unfold feedback_balanced at hr ⊢
    simp only [generated_feedback_cons, attempts_of_cons, hg, ha, List.nil_append, hr]

theorem balanced_cons_quiet {β : Type} {e : Event β} {l : List (Event β)} (he : quiet e)
    (hl : feedback_balanced l) : feedback_balanced (e :: l) := by
  have h := balanced_append (quiet_balanced [e] (every_cons he every_nil)) hl
  exact h

theorem finishing_quiet {β : Type} : ∀ (e : Event β), finishing e → quiet e := by
  intro e h
  cases e <;> first | exact trivial | exact absurd h id

theorem preflight_quiet {β : Type} (answer : Option PreflightResult) :
    every quiet (preflight_events answer : List (Event β)) := by
  cases answer with
  | none => exact every_nil
  | some a => exact every_cons trivial every_nil

section Feedback

variable {α : Type} (engine : Engine α) (random : Phase → Nat → Nat) (hooks : Hooks α)
  (cfg : ContractConfig)

theorem after_pre_balanced (original accepted : α) :
    feedback_balanced (after_pre engine random hooks cfg original accepted).trace := by
  cases ha : act_phase hooks cfg.policy accepted with
  | error violation =>
    simp only [after_pre, ha]
    exact quiet_balanced _ (every_cons trivial (every_cons trivial every_nil))
  | ok used =>
    have hpf := preflight_quiet (β := α) (preflight_phase hooks cfg.policy used)
    cases hu : is_unsat (preflight_phase hooks cfg.policy used) with
    | true =>
      simp only [after_pre, ha, hu]
      exact quiet_balanced _
        (every_append (every_cons trivial (every_cons trivial hpf)) (every_cons trivial every_nil))
    | false =>
      have hpost : feedback_balanced (stage_post engine random hooks cfg used).trace :=
        post_generates engine random hooks cfg used
      simp only [after_pre, ha, hu]
      exact balanced_append (quiet_balanced _ (every_cons trivial (every_cons trivial hpf)))
        (balanced_cons_quiet trivial hpost)

theorem contract_balanced (raw_input : α) :
    feedback_balanced (contract engine random hooks cfg raw_input).trace := by
  cases hi : hooks.check_input raw_input with
  | error err =>
    simp only [contract, hi]
    exact quiet_balanced _ (every_cons trivial every_nil)
  | ok original =>
    have hpre : feedback_balanced (stage_pre engine random hooks cfg original).trace :=
      pre_generates engine random hooks cfg original
    cases hs : (stage_pre engine random hooks cfg original).ending with
    | failed p =>
      simp only [contract, hi, hs]
      exact balanced_cons_quiet trivial hpre
    | accepted acc =>
      have hrest := after_pre_balanced engine random hooks cfg original acc
      simp only [contract, hi, hs]
      exact balanced_cons_quiet trivial (balanced_append hpre hrest)

/-- Invariant `feedback-exact`, on the effects of the whole call: every `Generate` effect of
`run_call`'s trace carries, in order, the feedback recorded with the call's attempts (the
latest violations, or with `accumulate_errors` all of the stage's, by `feedback_exact`). -/
theorem feedback_exact_call (raw_input : α) :
    generated_feedback (run_call engine random hooks cfg raw_input).trace =
      recorded_feedback (attempts_of (run_call engine random hooks cfg raw_input).trace) := by
  have h := balanced_append (contract_balanced engine random hooks cfg raw_input)
    (quiet_balanced _ (every_mono finishing_quiet _
      (conclude_every hooks cfg raw_input (contract engine random hooks cfg raw_input))))
  rw [run_call_trace]
  exact h

end Feedback

end HoareKernel
