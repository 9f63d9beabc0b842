"""Off a terminal, progress is one line per stage, not carriage-return updates."""

from rrfbench.core.progress import progress


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


def test_long_stages_print_the_rate_and_an_eta(capsys, monkeypatch):
    from rrfbench.core import progress as P

    clock = iter([0.0, 40.0, 50.0, 100.0, 130.0, 131.0])
    monkeypatch.setattr(P.time, "perf_counter", lambda: next(clock))
    bar = progress(total=100, desc="dense: encode", unit="text")   # t0 = 0
    bar.update(20)            # t = 40: 30 s since the last line: 20/100, 0.5/s, ETA 160 s
    bar.update(20)            # t = 50: only 10 s later, no line
    bar.update(20)            # t = 100: 60/100 at 0.6/s, ETA 67 s
    bar.update(40)            # t = 130: done, no progress line (the end line says so)
    bar.close()               # t = 131
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == ["dense: encode: started (100 text to do)",
                     "dense: encode: 20/100 text (20%), 0.5 text/s, ETA 2 min 40 s",
                     "dense: encode: 60/100 text (60%), 0.6 text/s, ETA 1 min 07 s",
                     "dense: encode: done 100 text in 131.0 s"]
