/-
Mirror of kernel/backoff.py (spec/pipeline.md §4.3): delays between the engine calls of
a remedy stage, in milliseconds.

Python draws `u ∈ [0, 1]` and adds `jitter · u` seconds. The model's random source
returns the jitter in milliseconds directly; a draw outside `[0, jitter]` counts as 0,
as a draw outside `[0, 1]` does in Python.
-/
import HoareKernel.Config

namespace HoareKernel

/-- `min value limit`, written out. -/
def cap (value limit : Nat) : Nat :=
  if value ≤ limit then value else limit

/-- The exponential part after `steps` growth steps: `min(delay, max_delay)`, then
`min(max_delay, d · backoff)` at every step. -/
def grow (retry : RetryPolicy) : Nat → Nat
  | 0 => cap retry.delay retry.max_delay
  | steps + 1 => cap (grow retry steps * retry.backoff) retry.max_delay

theorem grow_zero (retry : RetryPolicy) : grow retry 0 = cap retry.delay retry.max_delay := rfl

theorem grow_succ (retry : RetryPolicy) (steps : Nat) :
    grow retry (steps + 1) = cap (grow retry steps * retry.backoff) retry.max_delay := rfl

/-- The exponential part of the delay before the `retry_number`-th retry. -/
def base_delay (retry : RetryPolicy) (retry_number : Nat) : Nat :=
  grow retry (retry_number - 1)

/-- Milliseconds to sleep before the `retry_number`-th retry (1 = the first retry). -/
def backoff_delay (retry : RetryPolicy) (retry_number : Nat) (u : Nat) : Nat :=
  base_delay retry retry_number + (if u ≤ retry.jitter then u else 0)

theorem grow_le (retry : RetryPolicy) (steps : Nat) : grow retry steps ≤ retry.max_delay := by
  cases steps with
  | zero =>
    simp only [grow_zero, cap]
    split
    next h => exact h
    next => exact Nat.le_refl _
  | succ steps =>
    simp only [grow_succ, cap]
    split
    next h => exact h
    next => exact Nat.le_refl _

theorem base_delay_le (retry : RetryPolicy) (retry_number : Nat) :
    base_delay retry retry_number ≤ retry.max_delay :=
  grow_le retry (retry_number - 1)

theorem backoff_delay_le (retry : RetryPolicy) (retry_number u : Nat) :
    backoff_delay retry retry_number u ≤ retry.max_delay + retry.jitter := by
  have hb := base_delay_le retry retry_number
  unfold backoff_delay
  split
  next h => omega
  next => omega

end HoareKernel
