//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

// `PostgresServer`: a throwaway PostgreSQL cluster (initdb on a free port, removed afterwards)
// for tests of a store on a shared PostgreSQL log, part of the test kit so that a team can test
// its several-app-server set-up against a real server, as this package's own tests do.
@_exported import PostgresTestServer
