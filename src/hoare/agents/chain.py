"""``ToolChain``: a declared order of tool calls, for ``hoare verify`` to check.

``ToolChain(search, summarize, feed={"summarize": "text"})`` says that ``search``'s
result is passed, as it is, to ``summarize``'s parameter ``text``. ``hoare verify``
then checks that every result ``search``'s return type and post-conditions allow
passes ``summarize``'s pre-conditions, whatever its other parameters are.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from hoare.agents.tool import Tool

__all__ = ["ToolChain"]


class ToolChain:
    """Tools called in order, each result fed to the named parameter of the next."""

    def __init__(self, *tools: Tool | Callable[..., Any], feed: Mapping[str, str],
                 name: str | None = None) -> None:
        if len(tools) < 2:
            raise ValueError("ToolChain needs at least two tools")
        self.tools = tuple(t if isinstance(t, Tool) else Tool(t) for t in tools)
        self.feed = dict(feed)
        self.name = name
        names = [t.name for t in self.tools]
        unknown = sorted(set(self.feed) - set(names[1:]))
        if unknown:
            raise ValueError(f"ToolChain feed names {unknown}, which are not tools after the "
                             f"first in the chain ({names})")
        for tool in self.tools[1:]:
            parameter = self.feed.get(tool.name)
            if parameter is None:
                raise ValueError(f"ToolChain feed must name the parameter of {tool.name!r} "
                                 f"that receives the previous result, e.g. "
                                 f"feed={{{tool.name!r}: '<parameter>'}}")
            parameters = inspect.signature(inspect.unwrap(tool.func)).parameters
            if parameter not in parameters:
                raise ValueError(f"ToolChain feed: {tool.name!r} has no parameter "
                                 f"{parameter!r} (it has {list(parameters)})")

    def links(self) -> list[tuple[Tool, Tool, str]]:
        """``(tool, next tool, parameter of the next fed with the result)``."""
        return [(a, b, self.feed[b.name]) for a, b in zip(self.tools, self.tools[1:], strict=False)]

    def __repr__(self) -> str:
        return f"ToolChain({', '.join(t.name for t in self.tools)}, feed={self.feed!r})"
