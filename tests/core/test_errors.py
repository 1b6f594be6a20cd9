"""One exception base: every exception healerd raises on purpose is a HealerdError, the
expected refusals are Refusals, and each keeps the builtin base callers catch it by."""

import builtins

import pytest

from healerd.adapters.fetch import FetchError
from healerd.adapters.sandbox import ParserRejected
from healerd.config import ConfigError
from healerd.control.client import DaemonUnreachable
from healerd.control.protocol import ControlError
from healerd.control.server import ControlServerError
from healerd.core.blueprint import BlueprintError
from healerd.core.errors import HealerdError, Refusal
from healerd.core.extract import PageTooLarge
from healerd.core.htmldiff import DiffBudgetExceeded
from healerd.daemon import StateDirInUse
from healerd.private import UnsafePath
from healerd.store.db import DatabaseCorrupt
from healerd.store.faults import StorageUnavailable
from healerd.store.lifecycle import IllegalTransition
from healerd.store.memory import FixMemoryError
from healerd.store.migrations import SchemaTooNew
from healerd.store.sources import SourceExists, SourceNotFound
from healerd.store.versions import VersionNotFound

BUILTIN_BASES = {
    FetchError: Exception, ParserRejected: Exception, ConfigError: ValueError, DaemonUnreachable: Exception,
    ControlError: Exception, ControlServerError: RuntimeError, BlueprintError: ValueError,
    PageTooLarge: ValueError, DiffBudgetExceeded: Exception, StateDirInUse: Exception, UnsafePath: Exception,
    DatabaseCorrupt: Exception, StorageUnavailable: Exception, IllegalTransition: Exception,
    FixMemoryError: Exception, SchemaTooNew: RuntimeError, SourceExists: ValueError, SourceNotFound: KeyError,
    VersionNotFound: KeyError,
}
REFUSALS = {IllegalTransition, SourceExists, VersionNotFound, FixMemoryError}


@pytest.mark.parametrize("cls", list(BUILTIN_BASES), ids=lambda c: c.__name__)
def test_every_exception_is_a_healerd_error_and_keeps_its_builtin_base(cls):
    assert issubclass(cls, HealerdError)
    assert issubclass(cls, BUILTIN_BASES[cls])
    assert issubclass(cls, Refusal) == (cls in REFUSALS)
    assert not hasattr(builtins, cls.__name__), f"{cls.__name__} shadows a builtin"
