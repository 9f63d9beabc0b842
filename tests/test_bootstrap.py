"""The installer the Makefile runs (``rrfbench/_bootstrap.py``): uv told what pip would use, and
pip whenever uv cannot. It runs by path before any dependency exists, so it is loaded here by
path too."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bootstrap():
    spec = importlib.util.spec_from_file_location("_bootstrap", ROOT / "rrfbench" / "_bootstrap.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


PIP_CONFIG = """\
:env:.cert='/etc/ssl/certs/ca-certificates.crt'
:env:.find-links='/opt/wheels'
global.constraint='/etc/xdg/pip/constraints.txt'
global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'
global.find-links='/opt/wheels'
"""


def test_uv_gets_pips_indexes_find_links_and_constraints(monkeypatch):
    b = _bootstrap()
    monkeypatch.setattr(b.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(
        a, 0, stdout=PIP_CONFIG, stderr=""))
    s = b.pip_settings()
    assert s == {"find-links": ["/opt/wheels"],
                 "constraint": ["/etc/xdg/pip/constraints.txt"],
                 "extra-index-url": ["file:///opt/pypi/simple", "file:///opt/pypi-more/simple"]}
    cmd = b.uv_command(["-e", ".[dense]"], s)
    assert cmd[:5] == [sys.executable, "-m", "uv", "pip", "install"]
    assert cmd[-2:] == ["-e", ".[dense]"]
    joined = " ".join(cmd)
    assert "--index-strategy unsafe-best-match" in joined  # pip's rule: best version anywhere
    assert "-c constraints.txt -c /etc/xdg/pip/constraints.txt" in joined
    assert ("--extra-index-url file:///opt/pypi/simple --extra-index-url "
            "file:///opt/pypi-more/simple --find-links /opt/wheels") in joined
    assert "--index-url" not in joined.replace("--extra-index-url", "")


def test_pip_installs_when_uv_cannot(monkeypatch, capsys):
    b = _bootstrap()
    calls = []

    def run(cmd, **kw):
        calls.append(cmd)
        if cmd[:4] == [sys.executable, "-m", "pip", "config"]:
            return subprocess.CompletedProcess(cmd, 0, stdout="", stderr="")
        return subprocess.CompletedProcess(cmd, 2 if cmd[2] == "uv" else 0)

    monkeypatch.setattr(b.subprocess, "run", run)
    assert b.main(["-e", ".[dense]"]) == 0
    assert calls[-1][-3:] == ["--no-compile", "-e", ".[dense]"] and calls[-1][2] == "pip"
    assert "uv could not install (exit 2); installing with pip" in capsys.readouterr().err
    calls.clear()
    monkeypatch.setattr(b.subprocess, "run", lambda cmd, **kw: calls.append(cmd) or
                        subprocess.CompletedProcess(cmd, 1 if cmd[-1] == "uv" else 0))
    assert b.main(["-e", "."]) == 0
    assert [c[2] for c in calls] == ["pip", "pip"]  # uv not installable: pip alone


def test_no_arguments_is_usage_and_exit_2():
    p = subprocess.run([sys.executable, str(ROOT / "rrfbench" / "_bootstrap.py")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.startswith("usage: python rrfbench/_bootstrap.py")
