"""Off a terminal, progress is one line per stage, not carriage-return updates."""

from rrfbench.progress import progress


def test_lines_off_a_terminal(capsys):
    bar = progress(total=100, desc="stage", unit="cfg")
    for _ in range(10):
        bar.update(10)
    bar.close()
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("stage: started (100 cfg")
    assert lines[1].startswith("stage: done 100 cfg in")


def test_iterable_and_disabled(capsys):
    assert list(progress(range(3), desc="it")) == [0, 1, 2]
    assert list(progress(range(3), enabled=False)) == [0, 1, 2]
    assert capsys.readouterr().err.count("\n") == 2
