#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
# SPDX-License-Identifier: MIT
"""Breaks each listed defence in turn and checks that its test fails.

Each mutant in Tools/mutants/mutants.toml names a file, a piece of one line (`from`, found on
exactly one line of the file), what it becomes (`to`), and the tests that must fail with it (a
`swift test --filter` pattern). For each selected mutant this script applies the change, rebuilds
(incrementally), runs those tests in every tier, and restores the file, whatever happens. A mutant
whose tests pass has *survived*: its defence has no test that catches its absence, and the run
fails. A mutant that does not build is an error of the list (the line changed): the run fails too.

    Tools/mutants/run.py                 every mutant
    Tools/mutants/run.py --random 1      one chosen at random (what CI runs)
    Tools/mutants/run.py decoy-hash ...  the named ones
    Tools/mutants/run.py --list          the list
    Tools/mutants/run.py --check         every mutant's `from` on exactly one line (no build; CI)
    --coverage                           build with the coverage flags (after a coverage build, as
                                         in CI, so that nothing is rebuilt from scratch)
    --no-rebuild                         leave the last mutant's build (CI, where nothing follows)
"""
import argparse
import os
import random
import subprocess
import sys
import time
import tomllib

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LIST = os.path.join(ROOT, "Tools", "mutants", "mutants.toml")


def load():
    with open(LIST, "rb") as handle:
        mutants = tomllib.load(handle)
    for name, mutant in mutants.items():
        for key in ("file", "from", "to", "tests", "defence"):
            if key not in mutant:
                raise SystemExit(f"mutant {name}: no {key}")
    return mutants


def coverage_flags():
    # The same flags as Tools/coverage-flags.sh, read from it.
    script = "source Tools/coverage-flags.sh && printf '%s\\n' \"${coverage_build_flags[@]}\""
    output = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [line for line in output.split("\n") if line]


def run(command, log, timeout):
    started = time.monotonic()
    with open(log, "a") as out:
        out.write(f"\n$ {' '.join(command)}\n")
        out.flush()
        try:
            status = subprocess.run(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, timeout=timeout,
                                    env=dict(os.environ, SPEZI_TEST_TIER="all")).returncode
        except subprocess.TimeoutExpired:
            status = None
    return status, time.monotonic() - started


def mutate(name, mutant, build_flags, log):
    path = os.path.join(ROOT, mutant["file"])
    with open(path, encoding="utf-8") as handle:
        original = handle.read()
    lines = original.split("\n")
    hits = [index for index, line in enumerate(lines) if mutant["from"] in line]
    if len(hits) != 1:
        return "list-error", f"`from` is on {len(hits)} lines of {mutant['file']} (it must be on exactly one)"
    index = hits[0]
    lines[index] = lines[index].replace(mutant["from"], mutant["to"], 1)
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines))
        status, seconds = run(["swift", "build", "--build-tests"] + build_flags, log, 3600)
        if status != 0:
            return "list-error", f"does not build (see {log})"
        status, seconds = run(["swift", "test", "--skip-build", "--filter", mutant["tests"]], log, 1800)
        if status is None:
            return "killed", f"its tests hung past 30 minutes ({seconds:.0f} s)"
        if status == 0:
            return "survived", f"{mutant['tests']} passed with the defence removed"
        return "killed", f"{mutant['tests']} failed ({seconds:.0f} s)"
    finally:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(original)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*")
    parser.add_argument("--random", type=int, default=0)
    parser.add_argument("--coverage", action="store_true")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--no-rebuild", action="store_true")
    parser.add_argument("--check", action="store_true")
    arguments = parser.parse_args()
    mutants = load()
    if arguments.check:
        # Every mutant's line still there, once: a refactor that moves a defence's line would
        # otherwise be found only when a random pick lands on that mutant.
        stale = []
        for name, mutant in mutants.items():
            with open(os.path.join(ROOT, mutant["file"]), encoding="utf-8") as handle:
                hits = sum(1 for line in handle if mutant["from"] in line)
            if hits != 1:
                stale.append(f"{name}: `from` is on {hits} lines of {mutant['file']} (it must be on exactly one)")
        for line in stale:
            print(f"==> {line}")
        print(f"==> {len(mutants) - len(stale)} of {len(mutants)} mutants point at one line each")
        return 1 if stale else 0
    if arguments.list:
        for name, mutant in mutants.items():
            print(f"{name}: {mutant['defence']} ({mutant['file']}) -> {mutant['tests']}")
        return 0
    names = arguments.names or list(mutants)
    unknown = [name for name in names if name not in mutants]
    if unknown:
        raise SystemExit(f"no such mutant: {', '.join(unknown)}")
    if arguments.random:
        names = random.sample(names, min(arguments.random, len(names)))
    build_flags = coverage_flags() if arguments.coverage else []
    log = os.path.join(ROOT, ".build", "mutants.log")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    open(log, "w").close()
    # The tree as it is must build first: a mutant that does not build is then the list's fault.
    status, _ = run(["swift", "build", "--build-tests"] + build_flags, log, 3600)
    if status != 0:
        print(f"==> the unchanged tree does not build (see {log}): no mutant was tried")
        return 1
    results = []
    for name in names:
        print(f"==> mutant {name}: {mutants[name]['defence']}", flush=True)
        outcome, detail = mutate(name, mutants[name], build_flags, log)
        print(f"    {outcome}: {detail}", flush=True)
        results.append((name, outcome))
    # The tree is restored; build it so that what follows runs the real code.
    status = 0
    if not arguments.no_rebuild:
        status, _ = run(["swift", "build", "--build-tests"] + build_flags, log, 3600)
    killed = sum(1 for _, outcome in results if outcome == "killed")
    print(f"==> {killed} of {len(results)} mutants killed (log: {log})")
    bad = [f"{name} ({outcome})" for name, outcome in results if outcome != "killed"]
    if bad:
        print("==> not killed: " + ", ".join(bad))
    return 0 if not bad and status == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
