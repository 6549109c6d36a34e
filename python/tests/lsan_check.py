"""Runs a command (the pytest suite) under the ASan build with leak detection, and fails on the
leaks that are ours.

The interpreter is not built with ASan and frees little of its own memory at exit, so a plain
LeakSanitizer run always reports leaks; suppressions cannot tell them apart, because every leak's
stack passes through the interpreter. This script sends the sanitizer's reports to files, passes
every report that is not a leak through unchanged (it fails the run), and counts a leak as ours
when a frame of its allocation stack is in libsession, a driver or the extension's sources: such
a leak is printed and fails the run. The interpreter's own leaks are only counted.

Usage: lsan_check.py COMMAND [ARG]...   (meson test python in a build with -Db_sanitize=address)
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

# The exit status the sanitizer uses for leaks (and errors) in the child: told apart from
# pytest's own statuses (0-5) and from signals.
SANITIZER_EXIT = 23
SEPARATOR = "=" * 65
# Frames in the project's code: its source folders, or the libraries it builds.
OURS = re.compile(r"(libsession/|plugins/|python/src/|libsession\.so|ses_[a-z]+\.so|_core\.)")


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    logdir = tempfile.mkdtemp(prefix="lsan_check.")
    try:
        env = dict(os.environ)
        options = [o for o in env.get("ASAN_OPTIONS", "").split(":")
                   if o and not o.startswith(("detect_leaks=", "exitcode=", "log_path="))]
        options += ["detect_leaks=1", f"exitcode={SANITIZER_EXIT}",
                    f"log_path={os.path.join(logdir, 'asan')}"]
        env["ASAN_OPTIONS"] = ":".join(options)
        rc = subprocess.call(argv, env=env)
        ours = theirs = errors = 0
        for path in sorted(glob.glob(os.path.join(logdir, "asan.*"))):
            with open(path, errors="replace") as f:
                text = f.read()
            for report in text.split(SEPARATOR):
                if not report.strip():
                    continue
                if "ERROR: LeakSanitizer" not in report:
                    errors += 1
                    print(SEPARATOR + report, file=sys.stderr)
                    continue
                for leak in re.split(r"\n(?=(?:Direct|Indirect) leak of )", report):
                    if not re.match(r"(Direct|Indirect) leak of ", leak):
                        continue
                    if OURS.search(leak):
                        ours += 1
                        print(leak.rstrip() + "\n", file=sys.stderr)
                    else:
                        theirs += 1
        print(f"lsan_check: {ours} leak(s) in libsession or the extension, {theirs} of the "
              f"interpreter's own (not counted), {errors} other sanitizer report(s)")
        if ours or errors:
            return 1
        # A sanitizer exit with only the interpreter's leaks reported is a pass.
        return 0 if rc == SANITIZER_EXIT else rc
    finally:
        shutil.rmtree(logdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
