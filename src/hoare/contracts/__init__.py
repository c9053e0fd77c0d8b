"""The contract layer: the decorator, the per-class runtime, the per-call driver that runs
the kernel's generator, and the call's lifecycle."""

from hoare.contracts.core import Contract, InvalidValue, contract

__all__ = ["Contract", "InvalidValue", "contract"]
