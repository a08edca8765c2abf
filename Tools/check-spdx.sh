#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
# SPDX-License-Identifier: MIT
#
# REUSE-style licensing check: every tracked source file (Swift, C, headers, module maps, Python,
# shell scripts, CI scripts) must carry both an SPDX-FileCopyrightText and an
# SPDX-License-Identifier: MIT line. Prints the files that don't and exits 1 if there are any.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=0
checked=0
while IFS= read -r file; do
    checked=$((checked + 1))
    if ! grep -q "SPDX-FileCopyrightText:" "$file" || ! grep -q "SPDX-License-Identifier: MIT" "$file"; then
        echo "missing SPDX header: $file"
        missing=$((missing + 1))
    fi
done < <(git ls-files | grep -E '\.(swift|c|h|py|sh|modulemap)$|^\.ci/run$')

if [ "$missing" -gt 0 ]; then
    echo "SPDX check: $missing of $checked source files lack the header"
    exit 1
fi
echo "SPDX check: all $checked source files carry SPDX-FileCopyrightText and SPDX-License-Identifier: MIT"
