#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
# SPDX-License-Identifier: MIT
#
# The README's two commands on a fresh Debian or Ubuntu machine with Swift 6.3:
#   Tools/run.sh demo   installs what the store needs (liblmdb-dev, libargon2-dev), then runs the demo on a store
#   Tools/run.sh test   installs what the tests need as well (valgrind, gcc, PostgreSQL, Python lmdb,
#                       schemathesis, Chromium with its driver and Selenium),
#                       then runs every test (swift test)
# Each installs only what is missing, with apt-get (as root, or through sudo) and pip.
# `Tools/run.sh test --coverage` records line coverage (what .ci/run does).
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
        || ! pkg-config --exists libargon2 2>/dev/null || [ ! -f /usr/include/argon2.h ]; then
        apt_install liblmdb-dev libargon2-dev pkg-config
    fi
}

# The API fuzzer's version (PyPI), pinned so that runs are comparable.
SCHEMATHESIS_VERSION="4.32.5"
SELENIUM_VERSION="4.51.0"

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
    # The format test reads logs with Python's lmdb package, as FORMAT.md promises anyone can.
    if ! python3 -c "import lmdb" 2>/dev/null; then
        if ! command -v pip3 >/dev/null 2>&1 && ! python3 -m pip --version >/dev/null 2>&1; then apt_install python3-pip; fi
        echo "==> installing the Python lmdb package"
        python3 -m pip install --quiet lmdb || python3 -m pip install --quiet --break-system-packages lmdb
    fi
}

case "${1:-}" in
    demo)
        install_store_dependencies
        swift run accountctl demo
        ;;
    test)
        install_test_dependencies
        if [ "${2:-}" = "--coverage" ]; then swift test --enable-code-coverage; else swift test; fi
        ;;
    install-test-dependencies)
        install_test_dependencies
        ;;
    *)
        echo "usage: Tools/run.sh demo | test [--coverage]" >&2
        exit 2
        ;;
esac
