//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import Metrics
import MetricsTestKit

/// The test process's metrics backend, bootstrapped on first use (swift-metrics allows one
/// bootstrap per process, and every test target runs in the same one). Touch it before opening
/// what reports metrics: a metric made before the bootstrap goes nowhere.
public enum TestMetricsBackend {
    public static let shared: TestMetrics = {
        let metrics = TestMetrics()
        MetricsSystem.bootstrap(metrics)
        return metrics
    }()

    /// The total of the counter `label` with `dimensions` so far; 0 while no such counter was made.
    public static func counterTotal(_ label: String, _ dimensions: [(String, String)]) -> Int64 {
        (try? shared.expectCounter(label, dimensions).totalValue) ?? 0
    }
}
