#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
# SPDX-License-Identifier: MIT
#
# Prints the line coverage of the library targets (Sources/, without the macro plug-in, which the
# compiler runs in a separate process, and without the executables in Tools/) after
# `swift test --enable-code-coverage`, and fails below the floor.
# Usage: Tools/coverage.sh [minimum percent, default 70]
set -euo pipefail
cd "$(dirname "$0")/.."
minimum="${1:-70}"

bin=$(swift build --show-bin-path)
profile="$bin/codecov/default.profdata"
tests="$bin/SpeziAccountStorePackageTests.xctest"
if [ ! -f "$profile" ] || [ ! -f "$tests" ]; then
    echo "coverage: run 'swift test --enable-code-coverage' first (no $profile or $tests)"
    exit 2
fi
llvm_cov="$(dirname "$(readlink -f "$(command -v swift)")")/llvm-cov"
[ -x "$llvm_cov" ] || llvm_cov=llvm-cov

# Only files under Sources/, except the macro plug-in.
report=$("$llvm_cov" report "$tests" -instr-profile="$profile" \
    -ignore-filename-regex='(\.build|/Tests/|/Tools/|/Benchmarks/|/Sources/SpeziAccountMacros/)')
echo "$report" | awk '/\.(swift|c) / { printf "  %-60s %8s\n", $1, $10 }'
total=$(echo "$report" | awk '/^TOTAL/ { gsub("%", "", $10); print $10 }')
echo "line coverage of the library targets: ${total}% (floor ${minimum}%)"
awk -v total="$total" -v minimum="$minimum" 'BEGIN { exit (total + 0 >= minimum + 0) ? 0 : 1 }' || {
    echo "coverage below ${minimum}%"
    exit 1
}
