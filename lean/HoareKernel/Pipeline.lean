/-
Mirror of kernel/pipeline.py (spec/pipeline.md §3–§4): one contracted call, phase by
phase, with the user's hooks, the engine and the random source as parameters.

* A check hook returns `Except.ok value` or raises (`Except.error`). Every hook may fail,
  so every theorem holds for hooks that raise.
* `Engine α` answers a `Generate(phase, attempt, input, feedback, previous)` effect with
  an answer or an error (§4.1, §6); the random source draws the jitter of the retry
  `n` of a stage (§4.3). Hooks are modelled as functions of their arguments: a Python
  hook that keeps state between calls is not covered beyond what its arguments tell it.
* Python's `run_call` returns `(outcome, value)` or raises `ContractViolationError`
  (`ResultTypeError` for the final type check); the model returns a `CallResult`. An
  exception raised by `forward` reaches the caller unchanged: `forward_raised`.
  `BaseException`s that are not `Exception`s (KeyboardInterrupt, SystemExit,
  cancellation) end a Python call at once and are outside the model.
* The call's trace (`Event`s) records the effects and the hook calls in order; the
  outcome's lists (violations, attempts, trials, delays) are projections of it, as
  `_Record` accumulates them in Python.

Python's pre stage (the inline check of candidate 0 in `run_call`, then `_repair(PRE, …)`)
is `stage_pre` here, its post stage (`_repair(POST, …)`) is `stage_post`; both run the
bounded loop `stage_loop` (Python: `_repair`).
-/
import HoareKernel.Config
import HoareKernel.Outcome
import HoareKernel.Predicate
import HoareKernel.Backoff
import HoareKernel.Effects

namespace HoareKernel

/-- What a pre-flight hook returned (§3.4). Python's hook may return any object: a
`PreflightResult` whose `verdict` is a `Verdict` is an answer; anything else is malformed,
known to the kernel only by its type's name (`type(answer).__name__`). -/
inductive PreflightAnswer where
  | answer (result : PreflightResult)
  | malformed (type_name : String)

/-- The user's side of a call (Python: `Hooks`). -/
structure Hooks (α : Type) where
  check_input : α → Except HookError α
  check_output : α → α → Except HookError α
  forward : α → Outcome α → Except HookError α
  pre_conditions : List (Predicate α) := []
  post_conditions : List (Predicate α) := []
  act : Option (α → Except HookError α) := none
  preflight : Option (α → Except HookError PreflightAnswer) := none
  check_result : Option (α → Except HookError α) := none
  on_violation : Option (Outcome α → Except HookError Unit) := none

/-- The engine, performed by the driver: `Generate(phase, attempt, input, feedback,
previous)` is answered by a raw output or an error (§4.1). -/
abbrev Engine (α : Type) : Type :=
  Phase → Nat → α → List Violation → Option α → Except HookError α

/-- What a call produces (Python: the returned pair, or the raised exception). -/
inductive CallResult (α : Type) where
  | returned (outcome : Outcome α) (value : α)
  | raised (outcome : Outcome α)
  | result_type_error (outcome : Outcome α)
  | forward_raised (error : HookError)

/-- The outcome a call result carries, if any. -/
def CallResult.outcome? {α : Type} : CallResult α → Option (Outcome α)
  | CallResult.returned outcome _ => some outcome
  | CallResult.raised outcome => some outcome
  | CallResult.result_type_error outcome => some outcome
  | CallResult.forward_raised _ => none

/-- A call: its result and its trace. -/
structure Run (α : Type) where
  result : CallResult α
  trace : List (Event α)

/-- The predicates of a phase. -/
def conditions {α : Type} (hooks : Hooks α) : Phase → List (Predicate α)
  | Phase.input => []
  | Phase.pre => hooks.pre_conditions
  | Phase.act => []
  | Phase.preflight => []
  | Phase.post => hooks.post_conditions
  | Phase.forward => []
  | Phase.result => []

/-- The message of a hook's exception: its text, else its class name. -/
def error_text (error : HookError) : String :=
  if error.message = "" then error.error_type else error.message

/-- Python: `_hook_violation`. -/
def hook_violation (kind : ViolationKind) (phase : Phase) (attempt : Nat) (policy : Policy)
    (error : HookError) : Violation :=
  { kind := kind, phase := phase, message := error_text error, attempt := attempt,
    policy := policy, error_type := some error.error_type }

/-! ## The bounded repair loop (§4) -/

/-- All earlier violations of a stage, in order. -/
def concat_all : List (List Violation) → List Violation
  | [] => []
  | vs :: rest => vs ++ concat_all rest

/-- The violations of the latest checked candidate, or none. -/
def latest : List (List Violation) → List Violation
  | [] => []
  | vs :: rest =>
    match rest with
    | [] => vs
    | _ :: _ => latest rest

/-- The feedback of the next engine call of a stage (§4.2). -/
def feedback (accumulate : Bool) (history : List (List Violation)) : List Violation :=
  match accumulate with
  | true => concat_all history
  | false => latest history

/-- The policies of a list of violations. -/
def policies : List Violation → List Policy
  | [] => []
  | v :: vs => v.policy :: policies vs

/-- What one engine call and the check of its answer gave. -/
inductive Checked (α : Type) where
  | accepted (raw : α) (candidate : α)
  | rejected (raw : Option α) (typed : Option α) (failures : List Violation) (fatal : Bool)

/-- One engine call of a stage: the verdict and the evaluation events. -/
structure AttemptOut (α : Type) where
  checked : Checked α
  trace : List (Event α)

/-- A candidate with no violation is accepted. -/
def verdict_of {α : Type} (raw candidate : α) : List Violation → Checked α
  | [] => Checked.accepted raw candidate
  | v :: vs => Checked.rejected (some raw) (some candidate) (v :: vs) false

/-- Engine call `call` of a stage and the check of its answer (§4.1): the engine may
raise (an `error` violation, no candidate), the type check may raise (a `type`
violation), else the phase's predicates are evaluated on the candidate. -/
def attempt_once {α : Type} (engine : Engine α) (hooks : Hooks α) (cfg : ContractConfig)
    (phase : Phase) (check : α → α → Except HookError α) (context : α → Option α)
    (call : Nat) (subject : α) (fb : List Violation) (previous : Option α) : AttemptOut α :=
  match engine phase call subject fb previous with
  | Except.error err =>
    { checked := Checked.rejected none none
        [hook_violation ViolationKind.error phase call cfg.policy err] err.fatal,
      trace := [] }
  | Except.ok raw =>
    match check raw subject with
    | Except.error err =>
      { checked := Checked.rejected (some raw) none
          [hook_violation ViolationKind.type phase call cfg.policy err] false,
        trace := [] }
    | Except.ok candidate =>
      let ev := evaluate (conditions hooks phase) candidate (context subject) phase call cfg.policy
      { checked := verdict_of raw candidate ev.violations,
        trace := [Event.evaluate phase call ev.evaluated ev.trials] }

/-- The backoff sleep before engine call `call` of a stage: none before the first (§4.3). -/
def pause {α : Type} (cfg : ContractConfig) (random : Phase → Nat → Nat) (phase : Phase)
    (call : Nat) : List (Event α) :=
  if 1 < call then [Event.sleep (backoff_delay cfg.retry (call - 1) (random phase (call - 1)))]
  else []

/-- The events of an engine call up to the check of its answer. -/
def lead {α : Type} (cfg : ContractConfig) (random : Phase → Nat → Nat) (phase : Phase)
    (call : Nat) (subject : α) (fb : List Violation) (previous : Option α)
    (checks : List (Event α)) : List (Event α) :=
  pause cfg random phase call ++ Event.generate phase call subject fb previous :: checks

/-- Python: the `Attempt` appended to `rec.attempts`. -/
def record {α : Type} (phase : Phase) (number : Nat) (raw : Option α) (fb : List Violation)
    (failures : List Violation) : Attempt α :=
  { phase := phase, number := number, raw := raw, feedback := fb, violations := failures }

/-- The pre stage keeps repairing the latest well-typed input (`follow`); the post stage
keeps its input. -/
def next_subject {α : Type} (follow : Bool) (subject : α) : Option α → α
  | some candidate =>
    match follow with
    | true => candidate
    | false => subject
  | none => subject

/-- How a stage ends: an accepted candidate, or a failure with its deciding policy. -/
inductive StageEnd (α : Type) where
  | accepted (value : α)
  | failed (policy : Policy)

structure StageOut (α : Type) where
  ending : StageEnd α
  trace : List (Event α)

/-- Engine calls `call, call+1, …` of a stage with `k` calls left (§4; Python: `_repair`).
A `FatalEngineError` ends the stage after its attempt, failing with the strictest policy of
that attempt's violations, i.e. the contract's (§4.4). -/
def stage_loop {α : Type} (engine : Engine α) (random : Phase → Nat → Nat) (hooks : Hooks α)
    (cfg : ContractConfig) (phase : Phase) (check : α → α → Except HookError α)
    (context : α → Option α) (follow : Bool) :
    Nat → Nat → α → List (List Violation) → Option α → StageOut α
  | 0, _, _, history, _ =>
    { ending := StageEnd.failed (strictest (policies (latest history))), trace := [] }
  | k + 1, call, subject, history, previous =>
    let fb := feedback cfg.accumulate_errors history
    let t := attempt_once engine hooks cfg phase check context call subject fb previous
    let head := lead cfg random phase call subject fb previous t.trace
    match t.checked with
    | Checked.accepted raw candidate =>
      { ending := StageEnd.accepted candidate,
        trace := head ++ [Event.attempt (record phase call (some raw) fb [])] }
    | Checked.rejected raw typed failures fatal =>
      match quick failures with
      | true =>
        { ending := StageEnd.failed Policy.quick_enforce,
          trace := head ++ [Event.attempt (record phase call raw fb failures), Event.fail failures] }
      | false =>
        match fatal with
        | true =>
          { ending := StageEnd.failed (strictest (policies failures)),
            trace := head ++ [Event.attempt (record phase call raw fb failures), Event.fail failures] }
        | false =>
          let rest := stage_loop engine random hooks cfg phase check context follow k (call + 1)
            (next_subject follow subject typed) (history ++ [failures]) raw
          { ending := rest.ending,
            trace := (head ++ [Event.attempt (record phase call raw fb failures),
              Event.fail failures]) ++ rest.trace }

/-- The type check of a repaired input. -/
def pre_check {α : Type} (hooks : Hooks α) (raw : α) (_subject : α) : Except HookError α :=
  hooks.check_input raw

/-- The type check of an engine answer for the input used. -/
def post_check {α : Type} (hooks : Hooks α) (raw : α) (subject : α) : Except HookError α :=
  hooks.check_output raw subject

/-- Pre-conditions have no context. -/
def no_context {α : Type} (_subject : α) : Option α := none

/-- Post-conditions see the input used. -/
def as_context {α : Type} (subject : α) : Option α := some subject

/-- The pre stage (§3.2, §4): candidate 0 is the caller's input, then at most
`pre_remedy_budget` engine repairs. -/
def stage_pre {α : Type} (engine : Engine α) (random : Phase → Nat → Nat) (hooks : Hooks α)
    (cfg : ContractConfig) (given : α) : StageOut α :=
  let first := evaluate (conditions hooks Phase.pre) given none Phase.pre 0 cfg.policy
  let checked : List (Event α) := [Event.evaluate Phase.pre 0 first.evaluated first.trials]
  match first.violations with
  | [] => { ending := StageEnd.accepted given, trace := checked }
  | v :: vs =>
    match quick (v :: vs) with
    | true =>
      { ending := StageEnd.failed Policy.quick_enforce, trace := checked ++ [Event.fail (v :: vs)] }
    | false =>
      let rest := stage_loop engine random hooks cfg Phase.pre (pre_check hooks) no_context true
        cfg.pre_remedy_budget 1 given [v :: vs] none
      { ending := rest.ending, trace := checked ++ Event.fail (v :: vs) :: rest.trace }

/-- The post stage (§3.5, §4): at most `generation_budget` engine calls. -/
def stage_post {α : Type} (engine : Engine α) (random : Phase → Nat → Nat) (hooks : Hooks α)
    (cfg : ContractConfig) (used : α) : StageOut α :=
  stage_loop engine random hooks cfg Phase.post (post_check hooks) as_context false
    cfg.generation_budget 1 used [] none

/-! ## The contract: phases 1–5 (§3.1–§3.5) -/

/-- §3.3: the optional `act` transformation. -/
def act_phase {α : Type} (hooks : Hooks α) (policy : Policy) (accepted : α) : Except Violation α :=
  match hooks.act with
  | none => Except.ok accepted
  | some act =>
    match act accepted with
    | Except.ok used => Except.ok used
    | Except.error err => Except.error (hook_violation ViolationKind.error Phase.act 0 policy err)

/-- A pre-flight hook that raises, or returns something that is not a verdict, counts as
`unknown` (§3.4; Python: `_preflight`). -/
def run_preflight {α : Type} (check : α → Except HookError PreflightAnswer) (used : α) :
    PreflightResult :=
  match check used with
  | Except.ok (PreflightAnswer.answer result) => result
  | Except.ok (PreflightAnswer.malformed type_name) =>
    { verdict := Verdict.unknown,
      reason := "pre-flight check returned a " ++ type_name ++ ", not a verdict" }
  | Except.error err =>
    { verdict := Verdict.unknown,
      reason := "pre-flight check raised " ++ err.error_type ++ ": " ++ err.message }

/-- §3.4: skipped without a hook or under `ignore`. -/
def preflight_phase {α : Type} (hooks : Hooks α) (policy : Policy) (used : α) :
    Option PreflightResult :=
  match hooks.preflight with
  | none => none
  | some check =>
    match policy with
    | Policy.ignore => none
    | Policy.observe => some (run_preflight check used)
    | Policy.enforce => some (run_preflight check used)
    | Policy.quick_enforce => some (run_preflight check used)

def is_unsat : Option PreflightResult → Bool
  | none => false
  | some answer =>
    match answer.verdict with
    | Verdict.satisfiable => false
    | Verdict.unsatisfiable => true
    | Verdict.unknown => false

def preflight_reason : Option PreflightResult → String
  | none => ""
  | some answer => answer.reason

/-- The `unsatisfiable` violation of §3.4. -/
def unsat_violation (answer : Option PreflightResult) (policy : Policy) : Violation :=
  { kind := ViolationKind.unsatisfiable, phase := Phase.preflight,
    message := if preflight_reason answer = "" then "no output can satisfy the post-conditions"
      else preflight_reason answer,
    attempt := 0, policy := policy }

def preflight_events {α : Type} : Option PreflightResult → List (Event α)
  | none => []
  | some answer => [Event.preflight answer]

/-- How the contract ends: success with the input used and the result, or failure with
the deciding policy and the original input. -/
inductive ContractEnd (α : Type) where
  | succeeded (used : α) (result : α)
  | failed (policy : Policy) (original : α)

structure ContractOut (α : Type) where
  ending : ContractEnd α
  trace : List (Event α)
  preflight : Option PreflightResult

def post_ending {α : Type} (original used : α) : StageEnd α → ContractEnd α
  | StageEnd.accepted result => ContractEnd.succeeded used result
  | StageEnd.failed policy => ContractEnd.failed policy original

/-- Phases 3–5, once the pre stage accepted an input. -/
def after_pre {α : Type} (engine : Engine α) (random : Phase → Nat → Nat) (hooks : Hooks α)
    (cfg : ContractConfig) (original accepted : α) : ContractOut α :=
  match act_phase hooks cfg.policy accepted with
  | Except.error violation =>
    { ending := ContractEnd.failed cfg.policy original,
      trace := [Event.enter Phase.act, Event.fail [violation]], preflight := none }
  | Except.ok used =>
    let answer := preflight_phase hooks cfg.policy used
    let checked : List (Event α) :=
      Event.enter Phase.act :: Event.enter Phase.preflight :: preflight_events answer
    match is_unsat answer with
    | true =>
      { ending := ContractEnd.failed cfg.policy original,
        trace := checked ++ [Event.fail [unsat_violation answer cfg.policy]], preflight := answer }
    | false =>
      let post := stage_post engine random hooks cfg used
      { ending := post_ending original used post.ending,
        trace := checked ++ Event.enter Phase.post :: post.trace, preflight := answer }

/-- Phases 1–5 (§3.1–§3.5). -/
def contract {α : Type} (engine : Engine α) (random : Phase → Nat → Nat) (hooks : Hooks α)
    (cfg : ContractConfig) (raw_input : α) : ContractOut α :=
  match hooks.check_input raw_input with
  | Except.error err =>
    { ending := ContractEnd.failed cfg.policy raw_input,
      trace := [Event.fail [hook_violation ViolationKind.type Phase.input 0 cfg.policy err]],
      preflight := none }
  | Except.ok original =>
    let pre := stage_pre engine random hooks cfg original
    match pre.ending with
    | StageEnd.failed policy =>
      { ending := ContractEnd.failed policy original,
        trace := Event.enter Phase.pre :: pre.trace, preflight := none }
    | StageEnd.accepted accepted =>
      let rest := after_pre engine random hooks cfg original accepted
      { ending := rest.ending, trace := Event.enter Phase.pre :: (pre.trace ++ rest.trace),
        preflight := rest.preflight }

/-! ## Forward, handler and result check (§3.6, §3.7) -/

/-- Python: `_Record.outcome`. -/
def make_outcome {α : Type} (success : Bool) (result : Option α) (original_input input_used : α)
    (policy : Policy) (c : ContractOut α) (exception : Option ContractViolationError) :
    Outcome α :=
  { success := success, result := result, original_input := original_input,
    input_used := input_used, policy := policy, violations := violations_of c.trace,
    attempts := attempts_of c.trace, trials := trials_of c.trace, delays := delays_of c.trace,
    preflight := c.preflight, exception := exception, handler_error := none }

/-- The handler runs once; if it raises, its error is recorded and the call goes on. -/
def call_handler {α : Type} (hooks : Hooks α) (outcome : Outcome α) : Outcome α :=
  match hooks.on_violation with
  | none => outcome
  | some handler =>
    match handler outcome with
    | Except.ok _ => outcome
    | Except.error err =>
      { outcome with handler_error := some (err.error_type ++ ": " ++ err.message) }

def handler_events {α : Type} (hooks : Hooks α) : List (Event α) :=
  match hooks.on_violation with
  | none => []
  | some _ => [Event.handler]

/-- The final type check, unless `graceful` (§3.7); `none` when it is not applied. -/
def result_check {α : Type} (hooks : Hooks α) (graceful : Bool) (value : α) :
    Option (Except HookError α) :=
  match graceful with
  | true => none
  | false =>
    match hooks.check_result with
    | none => none
    | some check => some (check value)

/-- Python: `_forward`: `forward` runs exactly once, then the result check. A failed result
check is a `type` violation, so it records the contract's policy (§2.2), not the outcome's
deciding policy. -/
def forward_phase {α : Type} (hooks : Hooks α) (cfg : ContractConfig) (input : α)
    (outcome : Outcome α) : Run α :=
  match hooks.forward input outcome with
  | Except.error err => { result := CallResult.forward_raised err, trace := [Event.forward input] }
  | Except.ok value =>
    match result_check hooks cfg.retry.graceful value with
    | none =>
      { result := CallResult.returned outcome value,
        trace := [Event.forward input, Event.enter Phase.result] }
    | some (Except.ok _) =>
      { result := CallResult.returned outcome value,
        trace := [Event.forward input, Event.enter Phase.result, Event.check_result value] }
    | some (Except.error err) =>
      { result := CallResult.result_type_error
          { outcome with violations := outcome.violations ++
              [hook_violation ViolationKind.type Phase.result 0 cfg.policy err] },
        trace := [Event.forward input, Event.enter Phase.result, Event.check_result value] }

/-- The outcome's `exception`: none with `graceful` (§3.7). -/
def exception_for (graceful : Bool) (error : ContractViolationError) :
    Option ContractViolationError :=
  match graceful with
  | true => none
  | false => some error

/-- The outcome of a failed contract (§3.6): `input_used` is the original input. -/
def failure_outcome {α : Type} (cfg : ContractConfig) (raw_input original : α) (policy : Policy)
    (c : ContractOut α) : Outcome α :=
  make_outcome false none raw_input original policy c
    (exception_for cfg.retry.graceful { policy := policy, violations := violations_of c.trace })

/-- The outcome of a successful contract: `input_used` is the post-act input. -/
def success_outcome {α : Type} (cfg : ContractConfig) (raw_input used result : α)
    (c : ContractOut α) : Outcome α :=
  make_outcome true (some result) raw_input used cfg.policy c none

/-- Python: `_fall_back`: a failed contract, decided by `policy` (§3.6). -/
def fall_back {α : Type} (hooks : Hooks α) (cfg : ContractConfig) (raw_input original : α)
    (policy : Policy) (c : ContractOut α) : Run α :=
  let outcome := failure_outcome cfg raw_input original policy c
  match policy with
  | Policy.ignore =>
    let run := forward_phase hooks cfg original outcome
    { result := run.result, trace := Event.enter Phase.forward :: run.trace }
  | Policy.observe =>
    let run := forward_phase hooks cfg original (call_handler hooks outcome)
    { result := run.result, trace := Event.enter Phase.forward :: (handler_events hooks ++ run.trace) }
  | Policy.enforce =>
    { result := CallResult.raised (call_handler hooks outcome),
      trace := Event.enter Phase.forward :: handler_events hooks }
  | Policy.quick_enforce =>
    { result := CallResult.raised outcome, trace := [Event.enter Phase.forward] }

/-- Phases 6–7 after the contract. -/
def conclude {α : Type} (hooks : Hooks α) (cfg : ContractConfig) (raw_input : α)
    (c : ContractOut α) : Run α :=
  match c.ending with
  | ContractEnd.succeeded used result =>
    let run := forward_phase hooks cfg used (success_outcome cfg raw_input used result c)
    { result := run.result, trace := Event.enter Phase.forward :: run.trace }
  | ContractEnd.failed policy original => fall_back hooks cfg raw_input original policy c

/-- One contracted call (Python: `run_call` driven to completion). -/
def run_call {α : Type} (engine : Engine α) (random : Phase → Nat → Nat) (hooks : Hooks α)
    (cfg : ContractConfig) (raw_input : α) : Run α :=
  let c := contract engine random hooks cfg raw_input
  let finish := conclude hooks cfg raw_input c
  { result := finish.result, trace := c.trace ++ finish.trace }

/-! ## The driver's `Sleep` (§6)

The driver performs each `Sleep` effect; an exception it raises there is not a contract
matter: it ends the call at once, unchanged (no handler, no `forward`, no outcome).
`sleeper n` is the driver's answer to the `n`-th `Sleep` of the call (from 0). Every `Sleep`
belongs to a stage, so to the contract's events (`conclude` has none). -/

/-- How a driven call ends: `run_call` ran to its end, or performing a `Sleep` raised
`error` after the events `trace` (up to and including that `Sleep`). -/
inductive Driven (α : Type) where
  | finished (run : Run α)
  | sleep_raised (error : HookError) (trace : List (Event α))

def Driven.trace {α : Type} : Driven α → List (Event α)
  | Driven.finished run => run.trace
  | Driven.sleep_raised _ events => events

def is_sleep {α : Type} : Event α → Bool
  | Event.sleep _ => true
  | _ => false

/-- One more event before the interruption. -/
def later : Option (HookError × Nat) → Option (HookError × Nat)
  | none => none
  | some found => some (found.1, found.2 + 1)

/-- The first `Sleep` whose performance raised: its error and the number of events up to and
including it; `n` counts the `Sleep`s before. -/
def interrupted {α : Type} (sleeper : Nat → Except HookError Unit) :
    Nat → List (Event α) → Option (HookError × Nat)
  | _, [] => none
  | n, ev :: rest =>
    match is_sleep ev with
    | false => later (interrupted sleeper n rest)
    | true =>
      match sleeper n with
      | Except.error err => some (err, 1)
      | Except.ok _ => later (interrupted sleeper (n + 1) rest)

/-- One contracted call driven to its end, or to the first `Sleep` that raised (§6). -/
def run_driven {α : Type} (engine : Engine α) (random : Phase → Nat → Nat) (hooks : Hooks α)
    (cfg : ContractConfig) (sleeper : Nat → Except HookError Unit) (raw_input : α) :
    Driven α :=
  match interrupted sleeper 0 (contract engine random hooks cfg raw_input).trace with
  | none => Driven.finished (run_call engine random hooks cfg raw_input)
  | some found =>
    Driven.sleep_raised found.1 ((contract engine random hooks cfg raw_input).trace.take found.2)

end HoareKernel
