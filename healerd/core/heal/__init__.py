"""The built-in selector healer, a pipeline whose order `pipeline.heal` writes once.

    page/      the page model: both pages parsed and indexed once; selectors built and checked
    records/   a listing's record containers on the current page
    fields/    each field placed: by value, by label, by position, anchored on the fields found
    checks/    the checks that refuse: copies of a block, placeholders, stale values, data gone
    verdict/   how far the repair may be trusted: corroboration of low-confidence heals

`listing.py` and `single_record.py` are the two routes through records and fields (a listing,
a single record); `evidence.py` holds what every stage shares (thresholds, `HealResult`).
"""
