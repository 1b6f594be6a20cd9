"""The verdict: how far a repair that passed the checks may be trusted.

Decides the heal's confidence where the placing stages left it low: corroborated by the
alignment of the changed fields with the fields found again, or staged for a person.
"""
