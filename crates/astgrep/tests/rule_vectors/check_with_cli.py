"""Checks every vector of ast-grep-config-rules.json against the ast-grep CLI.

Usage: python3 check_with_cli.py [path/to/ast-grep]  (needs PyYAML). Prints each vector on
which the CLI disagrees with the expected result; the Rust test checks this crate.
"""
import json
import os
import subprocess
import sys
import tempfile

import yaml

CLI = sys.argv[1] if len(sys.argv) > 1 else "ast-grep"
HERE = os.path.dirname(os.path.abspath(__file__))
EXT = {"tsx": "tsx", "typescript": "ts", "python": "py", "go": "go", "rust": "rs", "c": "c",
       "java": "java", "javascript": "js"}


def run(work, case, source, update=False):
    config = dict(case["rule"]) if "rule" in case["rule"] else {"rule": case["rule"]}
    config.update(id="x", language=case["lang"], severity="hint")
    src = os.path.join(work, "src." + EXT[case["lang"]])
    rule = os.path.join(work, "rule.yml")
    with open(src, "w") as f:
        f.write(source)
    with open(rule, "w") as f:
        yaml.safe_dump(config, f, allow_unicode=True)
    args = [CLI, "scan", "-r", rule, src] + (["--update-all"] if update else ["--json=compact"])
    done = subprocess.run(args, capture_output=True, text=True)
    with open(src) as f:
        return done, f.read()


def main():
    with open(os.path.join(HERE, "ast-grep-config-rules.json")) as f:
        vectors = json.load(f)
    bad = []
    with tempfile.TemporaryDirectory() as work:
        for case in vectors["matches"]:
            for key, want in (("found", True), ("not_found", False)):
                for source in case[key]:
                    done, _ = run(work, case, source)
                    try:
                        found = len(json.loads(done.stdout)) > 0
                    except ValueError:
                        bad.append((case["test"], "refused", done.stderr.strip()[-120:]))
                        continue
                    if found != want:
                        bad.append((case["test"], key, source))
        for case in vectors["lines"]:
            done, _ = run(work, case, case["source"])
            got = sorted({m["range"]["start"]["line"] + 1 for m in json.loads(done.stdout or "[]")})
            if got != case["lines"]:
                bad.append((case["test"], "lines", got))
        for case in vectors["fixes"]:
            _, fixed = run(work, case, case["source"], update=True)
            if fixed != case["fixed"]:
                bad.append((case["test"], "fixed", fixed))
        for case in vectors["refused"]:
            done, _ = run(work, case, "x")
            if "Error" not in done.stderr:
                bad.append((case["test"], "the CLI accepts it", ""))
        for case in vectors["accepted"]:
            done, _ = run(work, case, "x")
            if "Cannot parse rule" in done.stderr:
                bad.append((case["test"], "the CLI refuses it", done.stderr.strip()[-120:]))
    for b in bad:
        print(*b, sep="\t")
    print(f"{len(bad)} disagreements")


if __name__ == "__main__":
    main()
