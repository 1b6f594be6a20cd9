"""The page model: each page parsed once and indexed (texts, node kinds, labels, fingerprints).

It decides nothing about a heal: it reads the two pages and builds and checks CSS selectors on them,
for every later stage to ask.
"""
