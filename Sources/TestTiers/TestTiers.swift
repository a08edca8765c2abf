//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Foundation
import Testing

/// The test tiers. Plain `swift test` runs the **fast tier**: tests that need nothing but Swift
/// and the libraries the store links (liblmdb, libargon2, libicu), and finish in well under a
/// minute together. The **integration tier** adds what needs more: PostgreSQL, a browser,
/// valgrind, Python, a C compiler, schemathesis, crash and fault runs, and the long randomized
/// runs. `SPEZI_TEST_TIER=all` selects it; `Tools/run.sh test` and `.ci/run` always set it.
public enum TestTier {
    /// Whether this run includes the integration tier.
    public static let integration = ProcessInfo.processInfo.environment["SPEZI_TEST_TIER"] == "all"
}

extension Trait where Self == ConditionTrait {
    /// Runs the suite or test in the integration tier only; in the fast tier it is reported as
    /// skipped, with this reason (never silently).
    public static var integration: Self {
        .enabled(if: TestTier.integration, "integration tier (PostgreSQL, a browser, valgrind, Python, cc, long runs): SPEZI_TEST_TIER=all")
    }
}
