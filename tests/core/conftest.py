import polyphys
import pytest


@pytest.fixture
def rec():
    """The recording plugin, registered in-process for one test."""
    import recording_plugin as rp

    plugin = rp.Plugin()
    polyphys.register(plugin, name="recording")
    rp.CALLS.clear()
    yield rp
    polyphys.unregister(plugin)
