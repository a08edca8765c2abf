#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
# SPDX-License-Identifier: MIT
#
# The README's two commands on a fresh Debian or Ubuntu machine with Swift 6.3:
#   Tools/run.sh demo   installs what the store needs (liblmdb-dev, libargon2-dev, libicu-dev), then runs the demo on a store
#   Tools/run.sh test   installs what the tests need as well (valgrind, gcc, PostgreSQL, Python lmdb,
#                       schemathesis, Chromium with its driver and Selenium),
#                       then runs every test (swift test)
# Each installs only what is missing, with apt-get (as root, or through sudo) and pip.
# `Tools/run.sh test --coverage` records line coverage (what .ci/run does).
# A test run that goes on for TEST_TIME_LIMIT seconds after the build (default 900; a whole run
# takes about 70 s on two cores) is stopped: the tests still running and every thread's stack are
# printed, so a hang fails within minutes and names its place.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_install() {
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    echo "==> installing $*"
    $sudo apt-get update
    $sudo apt-get install -y "$@"
}

install_store_dependencies() {
    if ! pkg-config --exists lmdb 2>/dev/null || [ ! -f /usr/include/lmdb.h ] \
        || ! pkg-config --exists libargon2 2>/dev/null || [ ! -f /usr/include/argon2.h ] \
        || [ ! -f /usr/include/unicode/uspoof.h ]; then
        apt_install liblmdb-dev libargon2-dev libicu-dev pkg-config
    fi
}

# The API fuzzer's version (PyPI), pinned so that runs are comparable.
SCHEMATHESIS_VERSION="4.32.5"
SELENIUM_VERSION="4.51.0"
PROMETHEUS_CLIENT_VERSION="0.26.0"

install_test_dependencies() {
    install_store_dependencies
    # The constant-time test counts instructions with valgrind; the I/O fault tests build a shim with cc.
    local missing=()
    for tool in valgrind cc objcopy; do
        command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
    done
    if [ ${#missing[@]} -gt 0 ]; then apt_install valgrind gcc binutils; fi
    # The PostgreSQL backend's tests start throwaway clusters with initdb and pg_ctl.
    if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then apt_install postgresql; fi
    # The API test checks the account server against its OpenAPI document with schemathesis.
    if ! python3 -c "import schemathesis" 2>/dev/null; then
        if ! command -v pip3 >/dev/null 2>&1 && ! python3 -m pip --version >/dev/null 2>&1; then apt_install python3-pip; fi
        echo "==> installing schemathesis $SCHEMATHESIS_VERSION"
        python3 -m pip install --quiet "schemathesis==$SCHEMATHESIS_VERSION" \
            || python3 -m pip install --quiet --break-system-packages "schemathesis==$SCHEMATHESIS_VERSION"
    fi
    # The audit console's browser test drives headless Chromium (Debian's packages) with Selenium.
    if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1 \
        || ! command -v chromedriver >/dev/null 2>&1; then
        apt_install chromium chromium-driver
    fi
    if ! python3 -c "import selenium" 2>/dev/null; then
        if ! command -v pip3 >/dev/null 2>&1 && ! python3 -m pip --version >/dev/null 2>&1; then apt_install python3-pip; fi
        echo "==> installing selenium $SELENIUM_VERSION"
        python3 -m pip install --quiet "selenium==$SELENIUM_VERSION" \
            || python3 -m pip install --quiet --break-system-packages "selenium==$SELENIUM_VERSION"
    fi
    # The console's JavaScript is checked with node --check (WebAssetCheckTests).
    command -v node >/dev/null 2>&1 || apt_install nodejs
    # The metrics test parses /metrics with Prometheus' own Python client's text-format parser.
    if ! python3 -c "import prometheus_client" 2>/dev/null; then
        if ! command -v pip3 >/dev/null 2>&1 && ! python3 -m pip --version >/dev/null 2>&1; then apt_install python3-pip; fi
        echo "==> installing prometheus-client $PROMETHEUS_CLIENT_VERSION"
        python3 -m pip install --quiet "prometheus-client==$PROMETHEUS_CLIENT_VERSION" \
            || python3 -m pip install --quiet --break-system-packages "prometheus-client==$PROMETHEUS_CLIENT_VERSION"
    fi
    # The format test reads logs with Python's lmdb package, as FORMAT.md promises anyone can.
    if ! python3 -c "import lmdb" 2>/dev/null; then
        if ! command -v pip3 >/dev/null 2>&1 && ! python3 -m pip --version >/dev/null 2>&1; then apt_install python3-pip; fi
        echo "==> installing the Python lmdb package"
        python3 -m pip install --quiet lmdb || python3 -m pip install --quiet --break-system-packages lmdb
    fi
}

# Builds, then runs every test under the time limit above.
run_tests() {
    local flags=() build_flags=()
    if [ "${1:-}" = "--coverage" ]; then
        flags=(--enable-code-coverage)
        # shellcheck source=Tools/coverage-flags.sh
        source Tools/coverage-flags.sh
        build_flags=("${coverage_build_flags[@]}")
    fi
    swift build --build-tests "${build_flags[@]}"
    local log
    log="$(mktemp -t swift-test-XXXXXX.log)"
    # At most TEST_PARALLEL_WIDTH tests at once (default 12): with all 400 started together, a
    # run held ~1,700 descriptors and slowed the timing-sensitive fault tests (PostgreSQL took 9 s
    # to restart), and Foundation's Process.run can crash once about 1,355 are open: it lists
    # /proc/self/fd and copies each entry's whole 256-byte name, which reads past glibc's 32 KiB
    # listing buffer when it is full (swift-corelibs-foundation pull request 5472; seen here as a
    # SIGSEGV in Process.run, once in four unlimited runs).
    # Every tier: the fast one (what plain `swift test` runs) and the integration one.
    SPEZI_TEST_TIER=all swift test --skip-build "${flags[@]}" --experimental-maximum-parallelization-width "${TEST_PARALLEL_WIDTH:-12}" \
        > >(tee "$log") 2>&1 &
    local pid=$! limit="${TEST_TIME_LIMIT:-900}" waited=0
    while kill -0 "$pid" 2>/dev/null; do
        sleep 5
        waited=$((waited + 5))
        if [ "$waited" -ge "$limit" ]; then
            report_unfinished "$log" "$limit"
            pkill -KILL -f 'PackageTests\.xctest' || true
            wait "$pid" || true
            return 1
        fi
    done
    if wait "$pid"; then
        check_skips "$log"
        return
    fi
    if [ ${#flags[@]} -gt 0 ]; then salvage_coverage "$log" && check_skips "$log"; else return 1; fi
}

# No silent skip: every test skipped in the run (its output in $1) must be listed in
# Tests/allowed-skips.txt with its reason; with ALLOWED_SKIPS=none (CI) none may be skipped.
check_skips() {
    local skipped allowed name reason unexpected=0
    skipped="$(grep -aoE '(Test "[^"]*" skipped(: "[^"]*")?|Test Case .[^ ]* skipped)' "$1" || true)"
    local count=0
    [ -n "$skipped" ] && count=$(printf '%s\n' "$skipped" | wc -l)
    echo "==> skipped tests: $count"
    [ "$count" -eq 0 ] && return 0
    while IFS= read -r line; do
        name="$(printf '%s' "$line" | sed -E 's/^Test "([^"]*)".*/\1/')"
        allowed=""
        if [ "${ALLOWED_SKIPS:-}" != "none" ]; then
            while IFS=$'\t' read -r prefix reason; do
                case "$prefix" in ''|'#'*) continue ;; esac
                if [[ "$name" == "$prefix"* ]]; then allowed="$reason"; fi
            done < Tests/allowed-skips.txt
        fi
        if [ -n "$allowed" ]; then
            echo "    allowed: $line ($allowed)"
        else
            echo "    NOT ALLOWED: $line"
            unexpected=1
        fi
    done <<< "$skipped"
    if [ "$unexpected" -ne 0 ]; then
        echo "==> a test was skipped that may not be (Tests/allowed-skips.txt; ALLOWED_SKIPS=${ALLOWED_SKIPS:-})"
        return 1
    fi
}

# After a coverage run whose tests all passed but whose profile merge failed: the crash tests
# kill child processes on purpose, and one killed while it wrote its profile at exit leaves a
# truncated .profraw file that makes SwiftPM's merge fail. Such files are dropped (each named)
# and the rest merged. Any failed test, or any other cause, still fails the run.
salvage_coverage() {
    local log="$1"
    grep -q 'invalid instrumentation profile data' "$log" || return 1
    grep -q '✔ Test run with .* passed' "$log" || return 1
    if grep -q '✘ Test run' "$log" || grep -qE 'Executed [0-9]+ tests?, with [1-9]' "$log"; then return 1; fi
    local bin directory profdata file
    bin="$(swift build --show-bin-path)"
    directory="$bin/codecov"
    profdata="$(dirname "$(readlink -f "$(command -v swift)")")/llvm-profdata"
    [ -x "$profdata" ] || profdata=llvm-profdata
    for file in "$directory"/*.profraw; do
        if ! "$profdata" show "$file" > /dev/null 2>&1; then
            echo "==> coverage: dropping $(basename "$file"), a truncated profile (a process killed while writing it)"
            rm -f "$file"
        fi
    done
    "$profdata" merge -sparse "$directory"/*.profraw -o "$directory/default.profdata"
    echo "==> coverage: the other profiles merged; every test passed"
}

# What a test run (its output in $1, its limit $2) that did not end was doing: the tests started and never reported, then the
# stack of every thread of the test process (gdb, or the toolchain's lldb).
report_unfinished() {
    echo
    echo "==> the tests ran for $2 s without ending; still running:"
    comm -23 <(grep -o '◇ Test "[^"]*"' "$1" | sed 's/^◇ //' | sort -u) \
        <(grep -o '[✔✘] Test "[^"]*"' "$1" | sed 's/^[✔✘] //' | sort -u) || true
    local process
    for process in $(pgrep -f 'PackageTests\.xctest' || true); do
        echo "==> threads of process $process"
        if command -v gdb >/dev/null 2>&1; then
            gdb -p "$process" -batch -ex "thread apply all bt 25" 2>&1 | grep -E '^(Thread|#)' | cut -c1-240 || true
        else
            lldb -p "$process" --batch -o "thread backtrace all -c 25" 2>&1 | cut -c1-240 || true
        fi
    done
}

case "${1:-}" in
    demo)
        install_store_dependencies
        swift run accountctl demo
        ;;
    test)
        install_test_dependencies
        run_tests "${2:-}"
        ;;
    install-test-dependencies)
        install_test_dependencies
        ;;
    *)
        echo "usage: Tools/run.sh demo | test [--coverage]" >&2
        exit 2
        ;;
esac
