"""The checks that refuse: a repair that reads the wrong data is turned down or taken back.

Decides whether a placed blueprint reads a copy of a block, a placeholder or stale values, and
whether a refused field's data is gone from the page (a right refusal, not a failed heal).
"""
