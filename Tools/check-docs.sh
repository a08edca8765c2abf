#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
# SPDX-License-Identifier: MIT
#
# Builds the DocC documentation of every library with a catalog (swift-docc-plugin) and fails on
# any warning: broken symbol links, unknown articles, malformed markup.
# Usage: Tools/check-docs.sh [target ...]   (default: all of them)
set -euo pipefail
cd "$(dirname "$0")/.."

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(Spezi SpeziAccount SpeziAccountStore SpeziAccountTesting SpeziTesting EventLogProtocol EventLogConformance EventLog PostgresEventLog Projections LMDB
        AccountStorePostgres AccountServer RemoteAccountService)
fi

# One invocation for every target: the plugin plans and builds once (twelve separate runs took
# 7 minutes on two cores, one takes about 3.5).
arguments=()
for target in "${targets[@]}"; do arguments+=(--target "$target"); done

# The plugin builds the targets before it extracts their symbols. Right after the coverage build of
# `Tools/run.sh test --coverage` (as in CI), the same compiler flags (Tools/coverage-flags.sh) let
# it find everything up to date instead of compiling the whole package again without them:
# 4 minutes instead of 12 on two cores. DOCS_BUILD=plain builds without them. Linux has no plugin
# sandbox, and disabling it there would only add a compiler flag that forces that rebuild.
build_flags=()
if [ "${DOCS_BUILD:-coverage}" = coverage ]; then
    # shellcheck source=Tools/coverage-flags.sh
    source Tools/coverage-flags.sh
    build_flags=("${coverage_build_flags[@]}")
fi
if [ "$(uname)" = Darwin ]; then build_flags+=(--disable-sandbox); fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! swift package "${build_flags[@]}" generate-documentation "${arguments[@]}" >"$log" 2>&1; then
    echo "docs: the documentation failed to build"
    tail -40 "$log"
    exit 1
fi
if grep -E "warning:|error:" "$log" | grep -v "^warning: 'swift-docc-plugin'" | grep -v "^warning: '[^']*': found [0-9]* file(s) which are unhandled" >/dev/null; then
    echo "docs: warnings:"
    grep -E -A3 "warning:|error:" "$log" | grep -v "^warning: '[^']*': found [0-9]* file(s) which are unhandled" | head -80
    exit 1
fi
echo "docs: ${#targets[@]} targets built without warnings (${targets[*]})"
