"""The example notebook (docs/notebook.py, Jupytext percent format) runs
in a Jupyter kernel from start to end, and its figures display: the flame
graph as inline SVG, the timeline as PNG, tables as HTML."""

import os

import jupytext
import nbclient

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_example_notebook_runs_and_displays_its_figures():
    path = os.path.join(ROOT, "docs", "notebook.py")
    nb = jupytext.read(path)
    nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": os.path.dirname(path)}}
    ).execute()
    kinds = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            assert out.get("output_type") != "error", out
            for mime in out.get("data", {}):
                kinds[mime] = kinds.get(mime, 0) + 1
    assert kinds.get("image/svg+xml", 0) >= 1, kinds
    assert kinds.get("image/png", 0) >= 1, kinds
    assert kinds.get("text/html", 0) >= 4, kinds
    svg = next(
        o["data"]["image/svg+xml"]
        for c in nb.cells
        for o in c.get("outputs", [])
        if "image/svg+xml" in o.get("data", {})
    )
    assert "spin_a" in svg, "the flame graph shows the hot function"


def test_example_notebook_runs_as_a_script_from_elsewhere(tmp_path):
    import subprocess
    import sys

    path = os.path.join(ROOT, "docs", "notebook.py")
    env = {k: v for k, v in os.environ.items() if k != "TRAWL_CHECKOUT"}
    r = subprocess.run([sys.executable, path], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
