"""Knob parsing and checking (``--set name=value``), exact messages: found by mutmut
(`mutmut run "rrfbench.systems.presets.base*"`: Knob.parse / Knob.check survivors)."""

import pytest

from rrfbench.core.errors import InputError
from rrfbench.systems.presets.base import Knob

FLAG = Knob("vector", True)
WHOLE = Knob("top_k", 5, 1, 50, integer=True)
OPT = Knob("minScore", None, 0.0, 1.0, optional=True)
FIXED = Knob("k", 60, 1, 100, fixed=True, note="hard-coded")
FREE = Knob("order", ["a", "b"])


@pytest.mark.parametrize("knob, text, want", [
    (FLAG, "true", True), (FLAG, " Yes ", True), (FLAG, "1", True), (FLAG, "ON", True),
    (FLAG, "false", False), (FLAG, "no", False), (FLAG, "0", False), (FLAG, "Off", False),
    (WHOLE, "7", 7), (WHOLE, " 50 ", 50), (WHOLE, "1", 1), (WHOLE, "3.0", 3.0),
    (OPT, "off", None), (OPT, "None", None), (OPT, "NULL", None), (OPT, "0.25", 0.25),
    (FIXED, "60", 60), (FREE, '["b", "a"]', ["b", "a"]),
])
def test_parse_accepts(knob, text, want):
    got = knob.parse(text)
    assert got == want and type(got) is type(want)


@pytest.mark.parametrize("knob, text, message", [
    (FLAG, "maybe", "--set vector: 'maybe' is not true or false"),
    (WHOLE, "abc", "--set top_k: 'abc' is not a whole number in [1, 50]"),
    (WHOLE, "2.5", "knob top_k: 2.5 is not a whole number in [1, 50]"),
    (WHOLE, "true", "knob top_k: True is not a whole number in [1, 50]"),
    (WHOLE, '"5"', "knob top_k: '5' is not a whole number in [1, 50]"),
    (WHOLE, "0", "knob top_k: 0 is outside the system's range [1, 50]"),
    (WHOLE, "51", "knob top_k: 51 is outside the system's range [1, 50]"),
    (WHOLE, "off", "--set top_k: 'off' is not a whole number in [1, 50]"),
    (OPT, "x", "--set minScore: 'x' is not a number in [0, 1] or off"),
    (OPT, "1.5", "knob minScore: 1.5 is outside the system's range [0, 1]"),
    (FIXED, "10", "knob k is fixed at 60 in this system (hard-coded)"),
    (FREE, "[1,", "--set order: '[1,' is not a value"),
])
def test_parse_refuses_with_the_exact_message(knob, text, message):
    with pytest.raises(InputError) as e:
        knob.parse(text)
    assert str(e.value) == message


def test_check_flags_and_fixed_without_note():
    with pytest.raises(InputError) as e:
        FLAG.check(1)
    assert str(e.value) == "knob vector: 1 is not true or false"
    with pytest.raises(InputError) as e:
        Knob("k", 60, 1, 100, fixed=True).check(61)
    assert str(e.value) == "knob k is fixed at 60 in this system"
    OPT.check(None)  # off is a setting of an optional knob
    with pytest.raises(InputError):
        WHOLE.check(None)
    assert WHOLE.check(1) is None and WHOLE.check(50) is None


def test_hits_by_query_cuts_at_the_depth_inclusive():
    from rrfbench.core.runs import Run
    from rrfbench.systems.presets.base import Hit, hits_by_query

    run = Run.from_dict({"q1": {f"d{i}": 10.0 - i for i in range(5)},
                         "q2": {"x": 2.0, "y": 1.0}}, "r")
    assert hits_by_query(run, 3)["q1"] == [Hit("d0", 10.0), Hit("d1", 9.0), Hit("d2", 8.0)]
    assert len(hits_by_query(run, None)["q1"]) == 5 and len(hits_by_query(run, 1)["q2"]) == 1
    assert list(hits_by_query(run, 2)) == ["q1", "q2"]


def test_finish_keeps_the_limit_and_names_the_cut():
    """The base system's finish: sorted by score (stable ties), the top ``limit`` kept, the rest
    labelled ``cut: limit`` (what ``explain`` prints)."""
    from rrfbench.systems.presets import PRESETS
    from rrfbench.systems.presets.base import Preset

    out, stage = Preset.finish(PRESETS["nexusai"], {"a": 1.0, "b": 3.0, "c": 3.0, "d": 0.5}, {}, 2)
    assert out == [("b", 3.0), ("c", 3.0)]
    assert stage == {"b": "kept", "c": "kept", "a": "cut: limit", "d": "cut: limit"}
