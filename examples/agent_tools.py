"""A contract agent with two tools, offline: cyllama's ContractAgent API on hoare.

Each tool carries contracts (`@pre`/`@post`, a `contract_assert` inside); the agent
checks the task, every tool call and the final answer. `make verify` (`hoare verify
examples/`) checks the tools' conditions and the declared `ToolChain` with z3. The
engine is a scripted stand-in for a model, so this runs with no API key (`--live` is
not offered: point `engine=` at an `OpenAIEngine` to use a real one).

Run: ``python examples/agent_tools.py``
"""

from __future__ import annotations

import json
import sys

from hoare.agents import (
    ContractAgent,
    ContractPolicy,
    ToolChain,
    contract_assert,
    post,
    pre,
    tool,
)
from hoare.engines import FunctionEngine, Request

PRICES = {"kettle": 25.0, "toaster": 40.0}
ITEMS = tuple(PRICES)  # a tuple: z3 models membership in it (a dict may change)


@tool
@pre(lambda item: item in ITEMS, "a product of the catalogue")
@post(lambda price: price > 0, "prices are positive")
def price_of(item: str) -> float:
    """The price of one item of the catalogue, in euros."""
    return PRICES[item]


@tool
@pre(lambda amount: amount > 0, "a positive amount")
@pre(lambda amount, rate: 0 <= rate <= 0.5, "discounts of at most 50%")
def discounted(amount: float, rate: float) -> float:
    """The amount after a discount rate between 0 and 0.5."""
    result = round(amount * (1 - rate), 2)
    contract_assert(result <= amount, "a discount never raises the price")
    return result


# The order the agent calls them in: `hoare verify` checks that every price
# `price_of` may return (a positive float) passes `discounted`'s conditions on `amount`.
PRICE_THEN_DISCOUNT = ToolChain(price_of, discounted, feed={"discounted": "amount"})


def scripted_model(request: Request) -> str:
    """Answers like a model that follows the action format: price, discount, answer."""
    observations = [m.content for m in request.messages if m.content.startswith("Observation")]
    if not observations:
        return json.dumps({"tool": "price_of", "args": {"item": "kettle"}})
    if len(observations) == 1:
        price = float(observations[0].split(": ", 1)[1])
        return json.dumps({"tool": "discounted", "args": {"amount": price, "rate": 0.2}})
    final = observations[-1].split(": ", 1)[1]
    return json.dumps({"answer": f"The kettle costs {final} euros after the discount."})


def main() -> int:
    agent = ContractAgent(FunctionEngine(scripted_model), tools=[price_of, discounted],
                          policy=ContractPolicy.ENFORCE, agent_type="constrained",
                          task_precondition=lambda task: len(task.strip()) > 0,
                          answer_postcondition=lambda answer: "euros" in answer)
    result = agent.run("What does a kettle cost with a 20% discount?")
    for event in result.events:
        print(f"{event.type.value:>12}: {event.content}")
    print("success:", result.success, "| contract checks:", agent.get_contract_stats())
    return 0 if result.success else 1


if __name__ == "__main__":
    sys.exit(main())
