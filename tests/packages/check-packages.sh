#!/usr/bin/env bash
# The Debian packages (debian/, sdk/template/debian/), end to end on this machine, as root:
#
#   1. debian/changelog's version is meson.build's project version;
#   2. dpkg-buildpackage -b builds every package from a clean copy of the checkout (tracked and
#      untracked-but-not-ignored files: no build folder comes along), with nocheck (the test
#      suite already ran in scripts/test's own build folders) and, where no CUDA toolkit is at
#      $CUDA_HOME (default /usr/local/cuda), the profile pkg.session.nocuda;
#   3. lintian on every package: no error, no warning (debian/*.lintian-overrides explain those
#      that stay);
#   4. libsession0 session-tools session-driver-cpu installed: `session-info --json` lists
#      exactly the cpu driver, found in /usr/share/session/drivers.d;
#   5. an administrator's manifest in /etc/session/drivers.d overrides the packaged one of the
#      same name (removed again afterwards);
#   6. session-driver-opencl installed: cpu and opencl listed, `session-run` runs a model on
#      opencl:0 with --fallback deny and the result is right; a dpkg-divert of opencl.json
#      disables the driver and removing the diversion brings it back;
#   7. python3-session installed: the system's python3 imports it and evaluates on cpu:0;
#   8. the template's vendor package session-driver-acme, built from the installed
#      /usr/share/session/sdk/template with its own debian/, passes lintian, installs, and
#      session-info lists it ready with its device; session-driver-test proves it; where
#      session-driver-cuda was built, it installs and session-info says what it lacks (no GPU:
#      "no-devices"; no CUDA runtime: "vendor runtime missing" naming the library);
#   9. everything purged: no package of ours is left and no file they installed remains.
#
# Whatever happens, it purges what it installed before exiting. It prints one line per check
# ("PASS: ..." / "FAIL: ..."), then "N passed, N failed" (counted by scripts/test's
# `packages` configuration) and "check-packages: PASS" or "check-packages: FAIL".
#
# Usage (root, Debian 12, after scripts/setup-debian): tests/packages/check-packages.sh [WORKDIR]
# WORKDIR (default: a fresh folder under /tmp) keeps the sources, the .deb files and the logs.
set -uo pipefail
# The whole script is one compound command, read before it runs: editing the file while it runs
# (its build takes minutes) cannot change what runs.
{

root=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-$(mktemp -d /tmp/session-packages.XXXXXX)}
mkdir -p "$work"
work=$(cd "$work" && pwd)
cuda_home=${CUDA_HOME:-/usr/local/cuda}
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
libdir=/usr/lib/$multiarch
py=/usr/bin/python3

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "PASS: $*"; }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
check() {  # check "what" command...: PASS/FAIL on the command's status
    local what=$1
    shift
    if "$@"; then pass "$what"; else fail "$what"; fi
}
finish() {
    echo "$passed passed, $failed failed"
    if [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]; then
        echo "check-packages: PASS"
        exit 0
    fi
    echo "check-packages: FAIL (logs in $work)"
    exit 1
}

if [ "$(id -u)" -ne 0 ]; then
    fail "check-packages needs root (it installs and purges packages)"
    finish
fi

export DEBIAN_FRONTEND=noninteractive
apt_get() { apt-get -o DPkg::Lock::Timeout=900 -y -q "$@"; }

# Our packages, as debian/control and the template's name them.
our_packages() {
    sed -n 's/^Package: //p' "$root/debian/control" "$root/sdk/template/debian/control"
}
installed_of_ours() {
    local p
    for p in $(our_packages); do
        dpkg-query -W -f='${db:Status-Status}\n' "$p" 2>/dev/null | grep -qv '^not-installed$' &&
            echo "$p"
    done
}

etc_dir=/etc/session
etc_existed=0
[ -e "$etc_dir" ] && etc_existed=1
diverted=0
# Headers a `meson install` put under /usr/local (scripts/main-job does) come first on the
# compiler's include path and would shadow the packaged ones the template must build against:
# set aside while the template builds, put back here.
local_headers=/usr/local/include/session
local_headers_aside=
cleanup() {
    local left
    if [ -n "$local_headers_aside" ]; then
        mv "$local_headers_aside" "$local_headers"
        local_headers_aside=
    fi
    if [ "$diverted" -eq 1 ]; then
        dpkg-divert --quiet --local --rename --remove /usr/share/session/drivers.d/opencl.json
        diverted=0
    fi
    rm -f "$etc_dir/drivers.d/cpu.json"
    if [ "$etc_existed" -eq 0 ]; then
        rmdir "$etc_dir/drivers.d" "$etc_dir" 2>/dev/null
    fi
    left=$(installed_of_ours)
    if [ -n "$left" ]; then
        # shellcheck disable=SC2086
        apt_get purge $left >>"$work/purge.log" 2>&1
    fi
}
trap 'cleanup' EXIT
trap 'echo "check-packages: interrupted"; exit 130' INT TERM

echo "=== check-packages: work folder $work ==="
left=$(installed_of_ours)
if [ -n "$left" ]; then
    echo "note: purging packages of ours left installed before: $left"
    # shellcheck disable=SC2086
    apt_get purge $left >"$work/purge-before.log" 2>&1
fi

# --- 1. versions -------------------------------------------------------------------------------
meson_version=$(sed -n "s/^  version: '\([^']*\)',$/\1/p" "$root/meson.build" | head -1)
deb_version=$(dpkg-parsechangelog -l "$root/debian/changelog" -SVersion)
check "debian/changelog's version ($deb_version) is meson.build's ($meson_version)" \
    test "${deb_version%%-*}" = "$meson_version"

# --- 2. build ----------------------------------------------------------------------------------
src=$work/src
rm -rf "$src" && mkdir -p "$src"
(cd "$root" && git ls-files -z -co --exclude-standard | tar --null -T - -cf -) | tar -xf - -C "$src"
profiles=()
if [ ! -x "$cuda_home/bin/nvcc" ]; then
    profiles=(-Ppkg.session.nocuda)
    echo "note: no CUDA toolkit at $cuda_home: building with the profile pkg.session.nocuda" \
        "(no session-driver-cuda)"
fi
echo "=== dpkg-buildpackage -b -us -uc ${profiles[*]} (log: $work/build.log) ==="
start=$(date +%s)
(cd "$src" && CUDA_HOME=$cuda_home DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" \
    dpkg-buildpackage -b -us -uc "${profiles[@]}") >"$work/build.log" 2>&1
rc=$?
echo "build took $(( ($(date +%s) - start) / 60 )) min $(( ($(date +%s) - start) % 60 )) s"
if [ "$rc" -ne 0 ]; then
    tail -30 "$work/build.log"
    fail "dpkg-buildpackage (exit $rc; log $work/build.log)"
    finish
fi
pass "dpkg-buildpackage built: $(cd "$work" && echo *.deb)"

deb() {  # the .deb file of package $1
    local f
    f=$(ls "$work/$1"_*.deb 2>/dev/null | head -1)
    [ -n "$f" ] || { echo "no .deb for $1 in $work" >&2; return 1; }
    echo "$f"
}
for p in $(sed -n 's/^Package: //p' "$src/debian/control"); do
    if [ "$p" = session-driver-cuda ] && [ ${#profiles[@]} -gt 0 ]; then
        continue
    fi
    deb "$p" >/dev/null || fail "package $p was not built"
done
if [ ${#profiles[@]} -eq 0 ]; then
    dpkg-deb --fsys-tarfile "$(deb session-driver-cuda)" | tar -xOf - \
        ".$libdir/session/drivers/ses_cuda.so" >"$work/ses_cuda.so"
    needed=$(readelf -d "$work/ses_cuda.so" | grep NEEDED)
    check "the CUDA driver does not link libcuda (it needs: $(echo "$needed" | sed 's/.*\[\(.*\)\]/\1/' | tr '\n' ' '))" \
        bash -c 'grep -q "libcudart\.so" <<<"$0" && ! grep -q "libcuda\.so" <<<"$0"' "$needed"
fi

# --- 3. lintian --------------------------------------------------------------------------------
changes=$(ls "$work"/libsession_*.changes | head -1)
echo "=== lintian $changes ==="
lintian --fail-on error,warning --info "$changes" 2>&1 | tee "$work/lintian.log"
check "lintian on every package: no error or warning" test "${PIPESTATUS[0]}" -eq 0

# The files our packages hold, and which of them are there before installing (shared folders).
all_files() {
    local f
    for f in "$work"/*.deb; do
        dpkg-deb --fsys-tarfile "$f" | tar -tf - | sed 's|^\./|/|; s|/$||' | grep -v '^/\?$'
    done | sort -u
}
all_files | while read -r f; do [ -e "$f" ] || [ -L "$f" ] && echo "$f"; done >"$work/there-before.txt"

# Installed tools run with no SESSION_* variable and no user manifest folder. A libsession
# installed by `meson install` under /usr/local comes first in ld.so.conf and would shadow the
# package's: then the tools are run with the package's folder first.
home=$work/home
mkdir -p "$home"
run_clean() {
    env -u SESSION_DRIVER_FILES -u SESSION_ADD_DRIVER_FILES -u SESSION_DRIVERS_SELECT \
        -u SESSION_DRIVERS_DISABLE -u XDG_CONFIG_HOME HOME="$home" ${ld_path:+LD_LIBRARY_PATH=$ld_path} "$@"
}
ld_path=
install_debs() {  # install_debs package...: from the .deb files built here
    local files=() p
    for p in "$@"; do files+=("$(deb "$p")") || return 1; done
    echo "=== apt-get install --no-install-recommends $* ==="
    apt_get install --no-install-recommends "${files[@]}" >>"$work/install.log" 2>&1 ||
        { tail -20 "$work/install.log"; return 1; }
}
# Prints the drivers session-info --json lists: "name state manifest library devices..." lines.
drivers_listed() {
    run_clean session-info --json >"$work/session-info.json" 2>"$work/session-info.err" || {
        cat "$work/session-info.err"
        return 1
    }
    "$py" -c '
import json, sys
info = json.load(open(sys.argv[1]))
for d in info["drivers"]:
    print(d["name"], d["state"], d["manifest"], d["library"], " ".join(d["devices"]))
' "$work/session-info.json"
}
expect_drivers() {  # expect_drivers "cpu opencl": exactly these, each ready with a device
    local want=$1 got
    drivers_listed >"$work/drivers.txt" || return 1
    sed 's/^/    /' "$work/drivers.txt"
    got=$(awk '{print $1}' "$work/drivers.txt" | sort | tr '\n' ' ' | sed 's/ $//')
    [ "$got" = "$(tr ' ' '\n' <<<"$want" | sort | tr '\n' ' ' | sed 's/ $//')" ] || {
        echo "    listed: '$got', expected: '$want'"
        return 1
    }
    awk -v d="$libdir/session/drivers" '
        $2 != "ready" || NF < 5 { print "    " $1 ": state " $2 ", devices: " (NF < 5 ? "none" : $5); bad = 1 }
        $3 != "/usr/share/session/drivers.d/" $1 ".json" { print "    " $1 ": manifest " $3; bad = 1 }
        $4 != d "/ses_" $1 ".so" { print "    " $1 ": library " $4; bad = 1 }
        END { exit bad }' "$work/drivers.txt"
}

# --- 4. libsession0, session-tools, session-driver-cpu -----------------------------------------
# libsession-mpi0 comes along: session-worker and the training example link it.
if install_debs libsession0 libsession-mpi0 session-tools session-driver-cpu; then
    pass "installed libsession0 libsession-mpi0 session-tools session-driver-cpu"
else
    fail "installing libsession0 session-tools session-driver-cpu (log $work/install.log)"
    finish
fi
resolved=$(ldd /usr/bin/session-info | awk '$1 == "libsession.so.0" {print $3}')
if [ "$resolved" != "$libdir/libsession.so.0" ]; then
    echo "note: /usr/bin/session-info resolves libsession.so.0 to $resolved (installed outside" \
        "the packages, e.g. meson install under /usr/local): the checks run with" \
        "LD_LIBRARY_PATH=$libdir"
    ld_path=$libdir
fi
check "session-info --json lists exactly the cpu driver, ready, from the package's manifest" \
    expect_drivers "cpu"
check "/etc/session is not created by the packages" \
    bash -c '[ "$0" -eq 1 ] || [ ! -e /etc/session ]' "$etc_existed"

# --- 5. an administrator's override in /etc/session/drivers.d ----------------------------------
etc_override() {
    mkdir -p "$etc_dir/drivers.d"
    "$py" - "$etc_dir/drivers.d/cpu.json" <<'EOF'
import json, sys
m = json.load(open("/usr/share/session/drivers.d/cpu.json"))
m["options"] = {"driver.cpu.threads": "1"}
json.dump(m, open(sys.argv[1], "w"), indent=2)
EOF
    drivers_listed >"$work/drivers-etc.txt" || return 1
    sed 's/^/    /' "$work/drivers-etc.txt"
    # The /etc manifest's driver is the one that answers; the packaged one is refused as a
    # duplicate (or not listed).
    awk '$1 == "cpu" && $2 == "ready" && $3 == "/etc/session/drivers.d/cpu.json" { ok = 1 }
         $1 == "cpu" && $2 == "ready" && $3 != "/etc/session/drivers.d/cpu.json" { dup = 1 }
         END { exit !(ok && !dup) }' "$work/drivers-etc.txt"
    local rc=$?
    rm -f "$etc_dir/drivers.d/cpu.json"
    [ "$etc_existed" -eq 1 ] || rmdir "$etc_dir/drivers.d" "$etc_dir"
    return $rc
}
check "a manifest in /etc/session/drivers.d overrides the packaged one of the same name" etc_override

# --- 6. session-driver-opencl ------------------------------------------------------------------
if install_debs session-driver-opencl; then
    pass "installed session-driver-opencl"
else
    fail "installing session-driver-opencl (log $work/install.log)"
fi
check "session-info --json lists exactly cpu and opencl, both ready" expect_drivers "cpu opencl"
run_on_opencl() {
    local d=$work/run model=/usr/include/onnx/backend/test/data/node/test_add/model.onnx
    mkdir -p "$d"
    [ -f "$model" ] || { echo "    $model missing (libonnx-testdata)"; return 1; }
    "$py" -c '
import numpy as np, sys
rng = np.random.default_rng(7)
np.save(sys.argv[1] + "/x.npy", rng.standard_normal((3, 4, 5)).astype(np.float32))
np.save(sys.argv[1] + "/y.npy", rng.standard_normal((3, 4, 5)).astype(np.float32))' "$d" || return 1
    run_clean session-run "$model" --device opencl:0 --fallback deny --input x="$d/x.npy" \
        --input y="$d/y.npy" --output sum="$d/sum.npy" --stats 2>&1 | sed 's/^/    /'
    [ "${PIPESTATUS[0]}" -eq 0 ] || return 1
    "$py" -c '
import numpy as np, sys
x, y, s = (np.load(sys.argv[1] + "/" + n + ".npy") for n in ("x", "y", "sum"))
sys.exit(0 if s.shape == x.shape and np.array_equal(s, x + y) else 1)' "$d"
}
check "session-run runs test_add on opencl:0 (--fallback deny) and sum = x + y" run_on_opencl
disable_by_divert() {
    dpkg-divert --quiet --local --rename --divert /usr/share/session/drivers.d/opencl.json.disabled \
        --add /usr/share/session/drivers.d/opencl.json || return 1
    diverted=1
    expect_drivers "cpu" || return 1
    dpkg-divert --quiet --local --rename --remove /usr/share/session/drivers.d/opencl.json || return 1
    diverted=0
    expect_drivers "cpu opencl"
}
check "dpkg-divert of opencl.json disables the OpenCL driver; removing it brings it back" \
    disable_by_divert

# --- 7. python3-session ------------------------------------------------------------------------
python_package() {
    local where path=
    install_debs python3-session || return 1
    # A `session` package installed by `meson install` under /usr/local comes first in sys.path.
    where=$(cd / && run_clean "$py" -c 'import session; print(session.__file__)')
    if [ "${where#/usr/lib/python3/dist-packages/}" = "$where" ]; then
        echo "note: $py imports session from $where (installed outside the packages): the" \
            "check runs with PYTHONPATH=/usr/lib/python3/dist-packages"
        path=/usr/lib/python3/dist-packages
    fi
    (cd / && run_clean ${path:+env PYTHONPATH=$path} "$py" -c '
import numpy as np, session as ses
assert ses.__file__.startswith("/usr/lib/python3/dist-packages/"), ses.__file__
g = ses.Graph()
a = g.placeholder("a", np.float32, [None, 3])
b = g.constant("b", np.full(3, 2, np.float32))
c = g.op("Mul", [a, b], name="c")
with ses.Session(g, devices=["cpu:0"]) as s:
    r = s.eval(c, {a: np.arange(6, dtype=np.float32).reshape(2, 3)})
assert np.array_equal(r, 2 * np.arange(6, dtype=np.float32).reshape(2, 3)), r
print("    session", ses.__file__, [d["name"] for d in ses.drivers()])')
}
check "python3-session: /usr/bin/python3 imports it and evaluates a graph on cpu:0" python_package

# --- 8. the template's vendor package ----------------------------------------------------------
vendor_package() {
    install_debs libsession-dev session-driver-sdk || return 1
    local t=$work/vendor/session-driver-acme
    rm -rf "$work/vendor" && mkdir -p "$work/vendor"
    cp -R /usr/share/session/sdk/template "$t" || return 1
    if [ -d "$local_headers" ] && ! dpkg -S "$local_headers" >/dev/null 2>&1; then
        echo "note: $local_headers (installed outside the packages) is set aside while the" \
            "template builds, so that it builds against the packaged headers"
        local_headers_aside=$local_headers.check-packages-aside.$$
        mv "$local_headers" "$local_headers_aside" || return 1
    fi
    echo "=== dpkg-buildpackage -b -us -uc in a copy of /usr/share/session/sdk/template ==="
    (cd "$t" && dpkg-buildpackage -b -us -uc) >"$work/vendor-build.log" 2>&1
    local built=$?
    if [ -n "$local_headers_aside" ]; then
        mv "$local_headers_aside" "$local_headers"
        local_headers_aside=
    fi
    [ "$built" -eq 0 ] || { tail -30 "$work/vendor-build.log"; return 1; }
    echo "=== lintian on session-driver-acme ==="
    lintian --fail-on error,warning --info "$work"/vendor/session-driver-acme_*.changes 2>&1 |
        tee "$work/vendor-lintian.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || return 1
    cp "$work"/vendor/session-driver-acme_*.deb "$work/" || return 1
    install_debs session-driver-acme || return 1
    expect_drivers "cpu opencl acme" || return 1
    echo "=== session-driver-test acme ==="
    run_clean session-driver-test acme >"$work/driver-test.log" 2>&1
    local rc=$?
    tail -3 "$work/driver-test.log" | sed 's/^/    /'
    return $rc
}
check "the template's session-driver-acme builds, passes lintian, installs, loads and passes" \
    vendor_package

# --- 8b. session-driver-cuda, where it was built ------------------------------------------------
# No GPU here: with NVIDIA's runtime reachable the driver is listed with no devices (or ready on
# a GPU machine); without it, failed with "vendor runtime missing" naming the library.
cuda_package() {
    install_debs session-driver-cuda || return 1
    drivers_listed >"$work/drivers-cuda.txt" || return 1
    "$py" -c '
import json, sys
d = [d for d in json.load(open(sys.argv[1]))["drivers"] if d["name"] == "cuda"]
if not d:
    sys.exit("    cuda not listed")
d = d[0]
cause = (d["error"] or {}).get("message", "")
print("    cuda:", d["state"], d["devices"], cause)
ok = d["state"] in ("ready", "no-devices") or (
    d["state"] == "failed" and "vendor runtime missing" in cause)
sys.exit(0 if ok else 1)' "$work/session-info.json" || return 1
    run_clean session-info | sed -n '/^  cuda /,/^  [a-z]/p' | sed 's/^/    /'
    [ "${PIPESTATUS[0]}" -eq 0 ]
}
if [ ${#profiles[@]} -eq 0 ]; then
    check "session-driver-cuda installs; session-info says what it lacks" cuda_package
fi

# --- 9. purge ----------------------------------------------------------------------------------
purge_all() {
    local left
    left=$(installed_of_ours)
    echo "=== apt-get purge $(echo $left) ==="
    # shellcheck disable=SC2086
    [ -z "$left" ] || apt_get purge $left >>"$work/purge.log" 2>&1 || return 1
    left=$(installed_of_ours)
    [ -z "$left" ] || { echo "    still installed: $left"; return 1; }
    all_files | while read -r f; do
        if { [ -e "$f" ] || [ -L "$f" ]; } && ! grep -qxF "$f" "$work/there-before.txt"; then
            echo "$f"
        fi
    done >"$work/left-behind.txt"
    [ -e /etc/session ] && [ "$etc_existed" -eq 0 ] && echo /etc/session >>"$work/left-behind.txt"
    if [ -s "$work/left-behind.txt" ]; then
        echo "    left behind:"
        sed 's/^/      /' "$work/left-behind.txt"
        return 1
    fi
}
check "purged: no package of ours installed, no file of theirs left" purge_all

finish
}
