"""The healing ladder (healerd.core.ladder.ladder.HealingLadder) and its ports (ports.py)."""
