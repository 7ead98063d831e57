#!/usr/bin/env python3
"""The documented set-up, run as a new user runs it: in a fresh virtual
environment, README.md's "Set up" block and docs/guide/python.md's install
blocks exactly as written (read from the files, not copied here), then
python.md's Python blocks over a `perf record -g` recording named
perf.data (the first block as written; the second after what its first
line says it needs: the capture ingested with `--flat`, and an archive),
and docs/notebook.py run as a script from outside the checkout, after the
install its header names. A block that fails fails the check.

Usage: tests/docs_check.py [--keep]   (pip reaches PyPI, as a user's does)
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PASSED = []


def blocks(path, lang, section=None):
    """The fenced ```LANG blocks of a Markdown file (of the `## SECTION`
    when given), in order."""
    text = open(os.path.join(ROOT, path), encoding="utf-8").read()
    if section is not None:
        m = re.search(r"^## " + re.escape(section) + r"\n(.*?)(?=^## |\Z)", text, re.M | re.S)
        assert m, f"{path}: no section {section!r}"
        text = m.group(1)
    found = re.findall(r"^```" + re.escape(lang) + r"\n(.*?)^```", text, re.M | re.S)
    assert found, f"{path}: no {lang} block" + (f" in {section!r}" if section else "")
    return found


def run(what, cmd, cwd, env):
    """Runs CMD; its output is shown when it fails."""
    print(f"--- {what}: {' '.join(cmd) if len(' '.join(cmd)) < 200 else cmd[0] + ' …'}", flush=True)
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stdout.write(p.stdout[-4000:])
        sys.stdout.write(p.stderr[-4000:])
        raise SystemExit(f"FAILED: {what} (exit {p.returncode})")
    PASSED.append(what)
    print(f"ok: {what}", flush=True)
    return p.stdout


def sh(what, block, cwd, env):
    return run(what, ["bash", "-euo", "pipefail", "-c", block], cwd, env)


def main():
    tmp = tempfile.mkdtemp(prefix="trawl-docs-check-")
    try:
        check(tmp)
    finally:
        if "--keep" in sys.argv:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(PASSED)} passed")


def check(tmp):
    venv = os.path.join(tmp, "venv")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    env = dict(os.environ)
    for k in ("PYTHONPATH", "PYTHONHOME", "TRAWL_CHECKOUT"):
        env.pop(k, None)
    env["VIRTUAL_ENV"] = venv
    env["PATH"] = os.path.join(venv, "bin") + os.pathsep + env["PATH"]
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    py = os.path.join(venv, "bin", "python")

    # README's set-up, in the checkout as its paths say.
    for b in blocks("README.md", "sh", "Set up"):
        sh("README.md's set-up", b, ROOT, env)
    trawl = shutil.which("trawl", path=env["PATH"])
    assert trawl == os.path.join(venv, "bin", "trawl"), trawl
    built = os.path.join(ROOT, "target", "release", "trawl")
    if os.path.exists(built):
        want = subprocess.run([built, "--version"], capture_output=True, text=True).stdout
        got = subprocess.run([trawl, "--version"], capture_output=True, text=True).stdout
        assert got == want, f"the venv's trawl is {got!r}, this tree's build {want!r}"

    # python.md: its install blocks, then its Python blocks in a directory
    # holding a perf.data (a `perf record -g` of the bundled program).
    for i, b in enumerate(blocks("docs/guide/python.md", "sh")):
        sh(f"python.md's install block {i + 1}", b, ROOT, env)
    work = os.path.join(tmp, "work")
    os.makedirs(work)
    shutil.copy(os.path.join(ROOT, "fixtures", "perf", "hot-fp.data"), os.path.join(work, "perf.data"))
    py_blocks = blocks("docs/guide/python.md", "python")
    run("python.md's first Python block", [py, "-c", py_blocks[0]], work, env)
    assert os.path.exists(os.path.join(work, "cap", "perf_sample.parquet"))

    # The notebook's install (its header), then the notebook from outside
    # the checkout.
    nb = open(os.path.join(ROOT, "docs", "notebook.py"), encoding="utf-8").read()
    m = re.search(r'`(pip install "\./python\[[a-z,]+\]")`', nb)
    assert m, "docs/notebook.py names no install command"
    sh("the notebook's install", m.group(1), ROOT, env)
    outside = os.path.join(tmp, "elsewhere")
    os.makedirs(outside)
    run("docs/notebook.py from outside the checkout", [py, os.path.join(ROOT, "docs", "notebook.py")], outside, env)

    # python.md's second block: over `cap/` ingested with --flat and an
    # archive of two runs, as its first and last lines say.
    shutil.rmtree(os.path.join(work, "cap"))
    run("trawl ingest --flat", [trawl, "ingest", "--flat", "perf.data", "-o", "cap"], work, env)
    for r in ("run1", "run2"):
        os.makedirs(os.path.join(work, "runs", r))
        shutil.copy(os.path.join(work, "perf.data"), os.path.join(work, "runs", r, "perf.data"))
    run("trawl archive ingest --flat", [trawl, "archive", "ingest", "runs", "-o", "archive", "--flat"], work, env)
    run("python.md's second Python block", [py, "-c", py_blocks[1]], work, env)


if __name__ == "__main__":
    main()
