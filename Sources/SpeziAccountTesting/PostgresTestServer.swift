//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

// `PostgresServer`: a throwaway PostgreSQL cluster (initdb on a free port, removed afterwards)
// for tests of a store on a shared PostgreSQL log, part of the test kit so that a team can test
// its several-app-server set-up against a real server, as this package's own tests do.
@_exported import PostgresTestServer
// `ChildProcess`: a child process with the shape of Foundation's `Process`, started with
// `posix_spawn`, holding none of this process's descriptors and ended with it (the cluster above
// runs under one; benchmarks start wrk with it).
@_exported import TestProcesses
