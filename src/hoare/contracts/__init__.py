"""The contract layer: ``@contract``, the ``Contract`` base class, and the per-class
runtime, per-call driver and call lifecycle behind them (one module each)."""

from hoare.contracts.base import Contract
from hoare.contracts.decorator import contract
from hoare.errors import InvalidValue

__all__ = ["Contract", "InvalidValue", "contract"]
