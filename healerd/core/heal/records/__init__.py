"""Finding the records: on a listing, which nodes of the current page are the records' containers.

Decides the containers (by the old values, by shape, the old items kept, a listing split in places)
and what the old values were like, before any field is placed inside them.
"""
