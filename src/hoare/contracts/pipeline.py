"""``Pipeline(a, b, ...)``: contracts run in sequence, each output the next input.

``hoare verify`` checks that the post-conditions and output type of every stage
imply the pre-conditions of the next one (composition).
"""

from __future__ import annotations

from typing import Any

from hoare.contracts.base import Contract

__all__ = ["Pipeline"]


class Pipeline:
    """A sequence of contract instances; calling it feeds each result to the next."""

    def __init__(self, *stages: Contract[Any, Any], name: str | None = None) -> None:
        if not stages:
            raise ValueError("Pipeline needs at least one contract instance")
        for index, stage in enumerate(stages):
            if not isinstance(stage, Contract) or not hasattr(type(stage), "__hoare__"):
                raise TypeError(f"Pipeline stage {index} must be an instance of a @contract "
                                f"class, got {stage!r}")
        self.stages: tuple[Contract[Any, Any], ...] = stages
        self.name = name

    def __call__(self, value: Any, **kwargs: Any) -> Any:
        for stage in self.stages:
            value = stage(value, **kwargs)
        return value

    async def acall(self, value: Any, **kwargs: Any) -> Any:
        for stage in self.stages:
            value = await stage.acall(value, **kwargs)
        return value

    def __repr__(self) -> str:
        inner = ", ".join(type(s).__qualname__ for s in self.stages)
        return f"Pipeline({inner})"
