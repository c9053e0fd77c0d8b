/-
Proofs of the invariants of spec/invariants.toml (scope `call`), about the model of
Pipeline.lean. Each invariant has one theorem named as its `lean` entry, with a
docstring naming the invariant id; the statistics invariants are in Stats.lean.

Every theorem holds for all hooks, engines and random sources, failing ones included.
The lemmas first follow the structure of the model: an engine call (`attempt_once`), the
bounded loop (`stage_loop`), the two stages, phases 3–5 (`after_pre`), the contract, and
phases 6–7 (`conclude`). A call's trace is the contract's trace followed by `conclude`'s.
-/
import HoareKernel.Invariants.Events
import HoareKernel.Invariants.Evaluation
import HoareKernel.Invariants.Policies
import HoareKernel.Invariants.Attempt
import HoareKernel.Invariants.Loop
import HoareKernel.Invariants.Stages
import HoareKernel.Invariants.Contract
import HoareKernel.Invariants.Conclude
import HoareKernel.Invariants.Call
