//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

// The throwaway PostgreSQL cluster is a product of its own (the benchmarks and users' tests start
// clusters too); the project's tests reach it through this target as before.
@_exported import PostgresTestServer
// Child processes that die with the test process (`ChildProcess`), for every test that starts one.
@_exported import TestProcesses
