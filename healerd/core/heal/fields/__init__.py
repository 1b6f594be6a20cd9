"""Placing the fields: which node of the current page (or of each record) carries each field.

Decides each field's selector, by its old value, its label, its position or anchored on the fields
found again; a field no evidence places clearly is refused here.
"""
