/-
Mirror of kernel/config.py (spec/pipeline.md §2): the violation policy, the retry
parameters and the contract configuration.

Modelling choices: every duration is a natural number of milliseconds (Python: float
seconds) and `backoff` is a natural multiplier (Python: any finite float ≥ 0). Python
validates `tries ≥ 1` when a `RetryPolicy` is built; the model allows `tries = 0`, and
the theorems that need `tries ≥ 1` take it as a hypothesis.
-/

namespace HoareKernel

/-- What a violation does to the call (§2.2), weakest first. The constructors are the
Python enum *values* of `Policy`. -/
inductive Policy where
  | ignore
  | observe
  | enforce
  | quick_enforce
  deriving Repr, DecidableEq

/-- Position in the strictness order ignore < observe < enforce < quick_enforce
(Python: `Policy.rank`). -/
def Policy.rank : Policy → Nat
  | Policy.ignore => 0
  | Policy.observe => 1
  | Policy.enforce => 2
  | Policy.quick_enforce => 3

/-- The stricter of two policies. -/
def stricter (p q : Policy) : Policy :=
  if q.rank ≤ p.rank then p else q

/-- The strictest policy of a list (Python: `strictest`). Python rejects the empty list;
the kernel never passes one, and here it gives the weakest policy, `ignore`. -/
def strictest : List Policy → Policy
  | [] => Policy.ignore
  | p :: ps => stricter p (strictest ps)

/-- Retry parameters of the remedy loops (§2.1). Delays in milliseconds. -/
structure RetryPolicy where
  tries : Nat := 5
  delay : Nat := 500
  max_delay : Nat := 15000
  jitter : Nat := 100
  backoff : Nat := 2
  graceful : Bool := false
  deriving Repr

/-- Everything that shapes one contracted call besides its hooks (§2). -/
structure ContractConfig where
  pre_remedy : Bool := false
  post_remedy : Bool := true
  accumulate_errors : Bool := false
  policy : Policy := Policy.observe
  retry : RetryPolicy := {}
  deriving Repr

/-- Engine calls allowed in the post stage: `tries` with post-remedy, else exactly 1. -/
def ContractConfig.generation_budget (config : ContractConfig) : Nat :=
  match config.post_remedy with
  | true => config.retry.tries
  | false => 1

/-- Engine calls allowed in the pre stage: `tries` with pre-remedy, else 0. -/
def ContractConfig.pre_remedy_budget (config : ContractConfig) : Nat :=
  match config.pre_remedy with
  | true => config.retry.tries
  | false => 0

end HoareKernel
