#!/usr/bin/env python3
# SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
# SPDX-License-Identifier: MIT
"""Checks the audit console's resource files (Sources/AccountServer/Console) before they ship.

- console.html: parsed with html.parser; every opened element that needs a closing tag is closed
  in order, no inline script or handler attribute (the page's CSP allows the one script file
  only), and every id that console.js looks up with getElementById exists.
- console.css: comments closed, braces balanced, every declaration block non-empty.
- console.js: `node --check` (a syntax error fails), strict mode.

Usage: check_web_assets.py DIRECTORY. Prints one line per problem; exit status 1 when any.
"""
import html.parser
import re
import subprocess
import sys
from pathlib import Path

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Structure(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.ids, self.problems = [], set(), []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "id":
                self.ids.add(value)
            if name.startswith("on"):
                self.problems.append(f"console.html: inline handler {name} on <{tag}> (the CSP refuses it)")
        if tag not in VOID:
            self.stack.append((tag, self.getpos()[0]))

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1][0] != tag:
            open_tag = self.stack[-1] if self.stack else ("nothing", 0)
            self.problems.append(f"console.html:{self.getpos()[0]}: </{tag}> closes <{open_tag[0]}> of line {open_tag[1]}")
            return
        self.stack.pop()

    def handle_data(self, data):
        if self.stack and self.stack[-1][0] == "script" and data.strip():
            self.problems.append(f"console.html:{self.getpos()[0]}: an inline script (the CSP allows only the script file)")


def check_html(text, script):
    parser = Structure()
    parser.feed(text)
    parser.close()
    problems = parser.problems
    problems += [f"console.html:{line}: <{tag}> is never closed" for tag, line in parser.stack]
    for wanted in sorted(set(re.findall(r"getElementById\(\"([^\"]+)\"\)", script))):
        if wanted not in parser.ids:
            problems.append(f"console.js looks up #{wanted}, which console.html does not have")
    return problems


def check_css(text):
    problems = []
    if text.count("/*") != text.count("*/"):
        problems.append("console.css: a comment is not closed")
    stripped = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    depth = 0
    for line_number, line in enumerate(stripped.splitlines(), 1):
        for character in line:
            depth += {"{": 1, "}": -1}.get(character, 0)
            if depth < 0:
                problems.append(f"console.css:{line_number}: a closing brace without an opening one")
                depth = 0
    if depth:
        problems.append(f"console.css: {depth} block(s) not closed")
    for selector in re.findall(r"([^{}]+)\{\s*\}", stripped):
        problems.append(f"console.css: an empty block for {selector.strip()[:60]}")
    return problems


def check_js(path, text):
    problems = []
    if '"use strict";' not in text.split("\n", 5)[-1] and '"use strict";' not in text[:400]:
        problems.append("console.js: not in strict mode")
    run = subprocess.run(["node", "--check", str(path)], capture_output=True, text=True)
    if run.returncode != 0:
        problems.append("console.js: " + (run.stderr.strip().splitlines() or ["node --check failed"])[0])
    return problems


def main():
    directory = Path(sys.argv[1])
    script = (directory / "console.js").read_text()
    problems = check_html((directory / "console.html").read_text(), script)
    problems += check_css((directory / "console.css").read_text())
    problems += check_js(directory / "console.js", script)
    for problem in problems:
        print(problem)
    print(f"checked console.html, console.css, console.js: {len(problems)} problem(s)")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
