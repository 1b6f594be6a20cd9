"""The checks that refuse: a repair that reads the wrong data is turned down or taken back.

Decides whether there is anything to heal, whether a placed blueprint reads a copy of a block, a
placeholder or stale values, and whether a refused field's data is gone from the page.
"""
