"""The CPU driver a wheel carries (session/drivers/): given to libsession's default registry as a
fallback before that registry is made, so that a machine without manifests gets no warning and
a machine with its own CPU driver keeps it.

Each case imports the package in a child interpreter from a folder laid out as pip installs the
wheel: the package's sources and this build's extension in session/, a manifest for this build's
CPU driver in session/drivers/.
"""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import session as ses

CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import session as ses
    assert ses.__file__.startswith(sys.argv[1]), ses.__file__
    g = ses.Graph()
    a = g.placeholder("a", np.float32, [None, 3])
    c = g.op("Mul", [a, a], name="c")
    with ses.Session(g, devices=["cpu:0"]) as s:
        out = s.eval(c, {a: np.full((2, 3), 3, np.float32)})
    assert (out == 9).all(), out
    try:
        ses._core.add_default_fallback(sys.argv[1])
        late = "accepted"
    except ses.FailedPreconditionError:
        late = "refused"
    print(json.dumps({"drivers": [[d["name"], d["manifest"], d["state"]] for d in ses.drivers()],
                      "late": late}))
""")


def _cpu_driver():
    return [d for d in ses.drivers() if d["name"] == "cpu"][0]


def _libsession_dir():
    """The folder of the libsession.so this process uses; None when the extension carries it."""
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "/libsession.so" in path:
                return os.path.dirname(path)
    return None


@pytest.fixture
def wheel_layout(tmp_path):
    """A folder holding session/ as a wheel installs it; returns (root, bundled manifest)."""
    package = tmp_path / "site" / "session"
    (package / "drivers").mkdir(parents=True)
    sources = os.path.dirname(ses.__file__)
    for name in os.listdir(sources):
        if name.endswith(".py"):
            shutil.copy(os.path.join(sources, name), package / name)
    shutil.copy(ses._core.__file__, package / os.path.basename(ses._core.__file__))
    cpu = _cpu_driver()
    with open(cpu["manifest"]) as f:
        manifest = json.load(f)
    manifest["library_path"] = os.path.realpath(cpu["library"])
    bundled = package / "drivers" / "cpu.json"
    bundled.write_text(json.dumps(manifest))
    return str(tmp_path / "site"), str(bundled)


def _run_child(root, driver_files):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SESSION_") and k not in ("PYTHONPATH", "XDG_CONFIG_HOME")}
    env["PYTHONPATH"] = root
    env["PYTHONNOUSERSITE"] = "1"
    env["SESSION_DRIVER_FILES"] = driver_files
    env["SESSION_LOADER_DEBUG"] = "warn"  # the default: the suite's environment says "error"
    libdir = _libsession_dir()
    if libdir:
        env["LD_LIBRARY_PATH"] = libdir + ":" + env.get("LD_LIBRARY_PATH", "")
    if "ASAN_OPTIONS" in env:  # the interpreter's own memory at exit is not this test's
        env["ASAN_OPTIONS"] = ":".join(
            [o for o in env["ASAN_OPTIONS"].split(":") if not o.startswith("detect_leaks=")]
            + ["detect_leaks=0"])
    r = subprocess.run([sys.executable, "-c", CHILD, root], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


def test_a_machine_without_manifests_uses_the_bundled_driver_without_a_warning(
        wheel_layout, tmp_path):
    root, bundled = wheel_layout
    empty = tmp_path / "no-manifests"
    empty.mkdir()
    out, stderr = _run_child(root, str(empty))
    assert "libsession:" not in stderr, stderr
    assert out["drivers"] == [["cpu", bundled, "ready"]]
    assert out["late"] == "refused"


def test_a_machine_with_its_own_cpu_driver_keeps_it_without_a_warning(wheel_layout):
    root, bundled = wheel_layout
    own = _cpu_driver()["manifest"]
    out, stderr = _run_child(root, own)
    assert "libsession:" not in stderr, stderr
    cpu = [d for d in out["drivers"] if d[0] == "cpu"]
    assert cpu == [["cpu", own, "ready"]]
    assert not any(d[1] == bundled for d in out["drivers"])


def test_fallbacks_must_be_absolute_paths_without_dot_components():
    for bad in ("drivers", "/a/../drivers", "/a/./drivers", "/a:/b"):
        with pytest.raises(ses.InvalidArgumentError):
            ses._core.add_default_fallback(bad)
    ses.drivers()  # makes this process's default registry, if nothing has yet
    with pytest.raises(ses.FailedPreconditionError):
        ses._core.add_default_fallback("/nonexistent/drivers")
