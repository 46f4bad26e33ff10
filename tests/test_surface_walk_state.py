"""The walker's state: a change entered for a block is put back when it is left, however."""

from types import SimpleNamespace

import pytest

from canary.surface.extract.state import WalkState


def state() -> WalkState:
    return WalkState(SimpleNamespace(module_of={"m.py": "m"}), "m.py", emit=True)


def test_entered_puts_back_exactly_what_it_changed_even_on_an_exception():
    walk = state()
    walk.tested = 3

    def inside() -> None:
        with walk.entered(guarded=2, function=7):
            walk.tested = 5  # not entered: kept
            assert (walk.guarded, walk.function) == (2, 7)
            raise RuntimeError

    with pytest.raises(RuntimeError):
        inside()
    assert (walk.guarded, walk.function, walk.tested) == (0, 0, 5)


def test_restored_puts_back_what_a_block_changed_as_it_went():
    walk = state()
    with walk.restored("guarded", "present"):
        walk.guarded += 1
        walk.present |= {"+x.y"}
        with walk.entered(guarded=walk.guarded + 1):
            assert walk.guarded == 2
        assert walk.guarded == 1
    assert (walk.guarded, walk.present) == (0, frozenset())


def test_a_name_the_state_does_not_have_is_an_error_not_a_new_attribute():
    with pytest.raises(KeyError):
        state().entered(gaurded=1)
