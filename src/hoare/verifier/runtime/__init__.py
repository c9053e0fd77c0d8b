"""What the contract layer uses at call time: the pre-flight and constrained decoding."""
