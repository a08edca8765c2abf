#!/usr/bin/env bash
# SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
# SPDX-License-Identifier: MIT
#
# Sourced by Tools/run.sh (the coverage build of the tests) and Tools/check-docs.sh (the build the
# documentation plugin asks for). Both must pass exactly these flags: then the plugin finds the
# test build up to date instead of compiling the package again. They name the instrumentation as
# compiler flags rather than by --enable-code-coverage, which places them elsewhere in each
# command (C targets are not instrumented).
coverage_build_flags=(-Xswiftc -profile-coverage-mapping -Xswiftc -profile-generate)
