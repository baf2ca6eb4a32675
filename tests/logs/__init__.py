"""Golden replays: recorded inputs and the facts they produced (see regenerate.py)."""
