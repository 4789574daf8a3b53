"""Checks every vector of ast-grep-config-rules.json against the ast-grep CLI.

Usage: python3 check_with_cli.py [path/to/ast-grep] [--only NAME]. Needs nothing but Python:
each rule config is written as JSON, which YAML reads. Prints each vector on which the CLI
disagrees with the expected result and the count of those that agree; the Rust test
(`tests/rule_vectors.rs`) checks this crate against the same expectations.
"""
import json
import os
import subprocess
import sys
import tempfile

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
CLI = ARGS[0] if ARGS else "ast-grep"
ONLY = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
HERE = os.path.dirname(os.path.abspath(__file__))
EXT = {"tsx": "tsx", "typescript": "ts", "python": "py", "go": "go", "rust": "rs", "c": "c",
       "cpp": "cpp", "dart": "dart", "java": "java", "javascript": "js", "bash": "sh",
       "json": "json"}


def run(work, case, source, update=False):
    """Runs the vector's rule on `source`; returns (matches or None when refused, stderr, text)."""
    config = dict(case["rule"]) if "rule" in case["rule"] else {"rule": case["rule"]}
    config.setdefault("id", "x")
    config.setdefault("severity", "hint")
    config["language"] = case["lang"]
    src = os.path.join(work, "src." + EXT[case["lang"]])
    rule = os.path.join(work, "rule.yml")
    with open(src, "w") as f:
        f.write(source)
    with open(rule, "w") as f:
        json.dump(config, f, ensure_ascii=False)
    args = [CLI, "scan", "-r", rule, src] + (["--update-all"] if update else ["--json=compact"])
    done = subprocess.run(args, capture_output=True, text=True, cwd=work)
    with open(src) as f:
        text = f.read()
    if update:
        return None, done.stderr, text
    try:
        return json.loads(done.stdout), done.stderr, text
    except ValueError:
        return None, done.stderr, text


def disagreement(work, group, case):
    # A rule config is read before any code: an empty file only shows whether it is read.
    if group == "refused":
        found, _, _ = run(work, case, "")
        return None if found is None else "the CLI accepts it"
    if group == "accepted":
        found, err, _ = run(work, case, "")
        return None if found is not None else "the CLI refuses it: " + err.strip()[-160:]
    if group == "matches":
        wrong = []
        for key, want in (("found", True), ("not_found", False)):
            for source in case[key]:
                found, err, _ = run(work, case, source)
                if found is None:
                    return "the CLI refuses it: " + err.strip()[-160:]
                if bool(found) != want:
                    wrong.append(f"{key}: {source!r}")
        return "; ".join(wrong) or None
    found, err, _ = run(work, case, case["source"])
    if found is None:
        return "the CLI refuses it: " + err.strip()[-160:]
    if group == "lines":
        got = sorted({m["range"]["start"]["line"] + 1 for m in found})
        return None if got == case["lines"] else f"lines {got}"
    if group == "texts":
        got = [m["text"] for m in sorted(found, key=lambda m: m["range"]["byteOffset"]["start"])]
        return None if got == case["texts"] else f"texts {got}"
    if group == "fixes":
        _, _, fixed = run(work, case, case["source"], update=True)
        return None if fixed == case["fixed"] else f"fixed {fixed!r}"
    return f"unknown group {group}"


def main():
    with open(os.path.join(HERE, "ast-grep-config-rules.json")) as f:
        vectors = json.load(f)
    bad, agree, skipped = [], 0, 0
    with tempfile.TemporaryDirectory() as work:
        for group in ("matches", "lines", "texts", "fixes", "refused", "accepted"):
            for case in vectors.get(group, []):
                if ONLY and ONLY not in case["test"]:
                    continue
                if case.get("na"):
                    skipped += 1
                    continue
                why = disagreement(work, group, case)
                if why is None:
                    agree += 1
                else:
                    bad.append((group, case["test"], why))
    for b in bad:
        print(*b, sep="\t")
    print(f"the CLI agrees with {agree} of {agree + len(bad)} vectors ({skipped} in languages not bundled)")


if __name__ == "__main__":
    main()
