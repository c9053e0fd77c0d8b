/-
The Lean 4 model of hoare's kernel (kernel/*.py), with one theorem per invariant of
spec/invariants.toml whose scope is `call` or `stats`. Lake builds only what this root
imports, so every module is listed here.
-/
import HoareKernel.Config
import HoareKernel.Outcome
import HoareKernel.Predicate
import HoareKernel.Backoff
import HoareKernel.Effects
import HoareKernel.Pipeline
import HoareKernel.Stats
import HoareKernel.Invariants
import HoareKernel.Traces
