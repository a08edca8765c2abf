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
    targets=(Spezi SpeziAccount SpeziAccountStore SpeziAccountTesting EventLogProtocol EventLogConformance EventLog PostgresEventLog Projections LMDB
        AccountServer RemoteAccountService)
fi

failed=0
for target in "${targets[@]}"; do
    log=$(mktemp)
    if ! swift package --disable-sandbox generate-documentation --target "$target" >"$log" 2>&1; then
        echo "docs: $target failed to build"
        tail -40 "$log"
        failed=1
    elif grep -E "warning:|error:" "$log" | grep -v "^warning: 'swift-docc-plugin'" | grep -v "^warning: '[^']*': found [0-9]* file(s) which are unhandled" >/dev/null; then
        echo "docs: $target has warnings:"
        grep -E -A3 "warning:|error:" "$log" | head -60
        failed=1
    else
        echo "docs: $target built without warnings"
    fi
    rm -f "$log"
done
exit $failed
