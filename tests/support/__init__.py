"""What tests import: the real daemon and site classes, page builders and helper servers.

Fixtures stay in conftest.py; nothing here imports a test module or conftest."""
