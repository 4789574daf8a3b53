#!/usr/bin/env python3
"""A scriptable fake language server speaking LSP over stdio (stdlib only).

Usage: fake_lsp.py --script SCRIPT.json [ignored args...]

It covers what real servers do rarely: never answering, push-only or pull-only diagnostics,
crashing at start, slow diagnostics, ignoring `exit`, spawning helpers. Diagnostics come from
the text: every line with `ERROR` (or `WARN`) yields an error (warning) whose message is the rest
of the line after `ERROR:`; the column is where `ERROR` starts, in the negotiated encoding.

Script keys (all optional):
  crash_at_start: bool       exit 3 before reading anything, after a line on stderr
  diagnostics: "push" | "pull" | "none"     (default "push")
  pull_dynamic: bool         register the pull provider dynamically instead of statically
  versionless: bool          publish without a version
  publish_latest: bool       a delayed push carries the document as it is when sent (a
                             server that coalesces changes), not as it was when it changed
  never_answer: [method]     never reply to these requests ("*" = all but shutdown)
  delay_ms: {method: ms}     reply late ("publish" delays pushes, "textDocument/diagnostic" pulls)
  encoding: "utf-8" | "utf-16"   preferred if the client offers it (default utf-16)
  progress_ms: int           report "$/progress" indexing for this long after initialized
  ignore_exit: bool          keep running after `exit` (SIGTERM still works)
  ignore_sigterm: bool       ignore SIGTERM too (only SIGKILL ends it)
  spawn_child: bool          start a `sleep` helper in the same process group
  server_requests: bool      send configuration / registerCapability / progress create /
                             an unknown request after initialized; replies go to the log
  log: path                  append one JSON line per message received
  name: str                  serverInfo.name
  rename_open_docs: bool     a rename edits every open document, and only those (a server that
                             has read no other file: restarted, or not done reading)
  rename_never: [suffix]     a rename never edits documents whose URI ends so
  stale_until_restart: path  `rename_never` holds only in the first process started with this
                             script (the file at path records a start): a stale view a restart
                             clears
"""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

args = sys.argv[1:]
script = {}
if "--script" in args:
    with open(args[args.index("--script") + 1]) as f:
        script = json.load(f)

if script.get("stale_until_restart"):
    marker = script["stale_until_restart"]
    if os.path.exists(marker):
        script["rename_never"] = []
    else:
        open(marker, "w").close()

if script.get("crash_at_start"):
    sys.stderr.write("fake-lsp: configured to crash at start\n")
    sys.stderr.flush()
    sys.exit(3)

if script.get("ignore_sigterm"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)

out_lock = threading.Lock()
stdin = sys.stdin.buffer
stdout = sys.stdout.buffer
docs = {}  # uri -> (version, text)
encoding = "utf-16"
next_id = [1000]
helper = None


def log(entry):
    path = script.get("log")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(entry) + "\n")


def send(msg):
    body = json.dumps(msg).encode()
    with out_lock:
        stdout.write(b"Content-Length: %d\r\n\r\n" % len(body))
        stdout.write(body)
        stdout.flush()


def read():
    length = None
    while True:
        line = stdin.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            if length is not None:
                break
            continue
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value.strip())
    return json.loads(stdin.read(length))


def col(line, index):
    prefix = line[:index]
    if encoding == "utf-8":
        return len(prefix.encode("utf-8"))
    return len(prefix.encode("utf-16-le")) // 2


def diagnostics_of(text):
    out = []
    for n, line in enumerate(text.split("\n")):
        for word, severity in (("ERROR", 1), ("WARN", 2)):
            i = line.find(word)
            if i >= 0:
                message = line[i + len(word):].lstrip(":").strip() or word.lower()
                out.append({
                    "range": {"start": {"line": n, "character": col(line, i)},
                              "end": {"line": n, "character": col(line, i + len(word))}},
                    "severity": severity, "code": "E%d" % severity, "source": "fake",
                    "message": message,
                })
    return out


def delay(method):
    ms = script.get("delay_ms", {}).get(method, 0)
    if ms:
        time.sleep(ms / 1000.0)


def publish(uri):
    if script.get("diagnostics", "push") != "push":
        return
    version, text = docs[uri]

    def go():
        delay("publish")
        version_now, text_now = (docs.get(uri, (version, text)) if script.get("publish_latest")
                                 else (version, text))
        params = {"uri": uri, "diagnostics": diagnostics_of(text_now)}
        if not script.get("versionless"):
            params["version"] = version_now
        send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": params})

    threading.Thread(target=go, daemon=True).start()


def word_at(uri, pos):
    _, text = docs.get(uri, (0, ""))
    lines = text.split("\n")
    if pos["line"] >= len(lines):
        return None, None
    line = lines[pos["line"]]
    # Convert the column back to a str index.
    idx = 0
    units = 0
    while idx < len(line) and units < pos["character"]:
        units += len(line[idx].encode("utf-8")) if encoding == "utf-8" else len(line[idx].encode("utf-16-le")) // 2
        idx += 1
    for m in re.finditer(r"\w+", line):
        if m.start() <= idx <= m.end():
            return m.group(0), m
    return None, None


def occurrences(uri, word):
    _, text = docs.get(uri, (0, ""))
    out = []
    for n, line in enumerate(text.split("\n")):
        for m in re.finditer(r"\b%s\b" % re.escape(word), line):
            out.append({"uri": uri, "range": {"start": {"line": n, "character": col(line, m.start())},
                                              "end": {"line": n, "character": col(line, m.end())}}})
    return out


def handle(msg):
    global encoding, helper
    method = msg.get("method")
    mid = msg.get("id")
    params = msg.get("params") or {}
    log({"method": method, "id": mid, "result": msg.get("result"), "error": msg.get("error")})
    if method is None:
        return  # a reply to one of our requests; logged above
    never = script.get("never_answer", [])
    if mid is not None and method != "shutdown" and ("*" in never or method in never):
        return
    if method == "initialize":
        offered = params.get("capabilities", {}).get("general", {}).get("positionEncodings", [])
        wanted = script.get("encoding", "utf-16")
        encoding = wanted if wanted in offered else "utf-16"
        caps = {
            "positionEncoding": encoding,
            "textDocumentSync": {"openClose": True, "change": 1, "save": {"includeText": False}},
            "definitionProvider": True, "referencesProvider": True, "hoverProvider": True,
            "documentSymbolProvider": True, "workspaceSymbolProvider": True,
            "renameProvider": {"prepareProvider": True}, "codeActionProvider": True,
        }
        if script.get("diagnostics") == "pull" and not script.get("pull_dynamic"):
            caps["diagnosticProvider"] = {"interFileDependencies": False, "workspaceDiagnostics": False}
        if script.get("spawn_child"):
            helper = subprocess.Popen(["sleep", "600"])
        delay("initialize")
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "capabilities": caps, "serverInfo": {"name": script.get("name", "fake-lsp"), "version": "0.1"}}})
    elif method == "initialized":
        def after():
            if script.get("diagnostics") == "pull" and script.get("pull_dynamic"):
                send({"jsonrpc": "2.0", "id": "reg", "method": "client/registerCapability", "params": {
                    "registrations": [{"id": "pull-1", "method": "textDocument/diagnostic",
                                       "registerOptions": {"identifier": "fake"}}]}})
            if script.get("server_requests"):
                send({"jsonrpc": "2.0", "id": "cfg", "method": "workspace/configuration",
                      "params": {"items": [{"section": "fake"}, {"section": "other.part"}]}})
                send({"jsonrpc": "2.0", "id": "wdp", "method": "window/workDoneProgress/create",
                      "params": {"token": "t1"}})
                send({"jsonrpc": "2.0", "id": "unk", "method": "custom/unknownRequest", "params": {}})
                send({"jsonrpc": "2.0", "id": "edit", "method": "workspace/applyEdit",
                      "params": {"edit": {"changes": {}}}})
            ms = script.get("progress_ms", 0)
            if ms:
                send({"jsonrpc": "2.0", "method": "$/progress", "params": {
                    "token": "idx", "value": {"kind": "begin", "title": "Indexing", "percentage": 10}}})
                time.sleep(ms / 1000.0)
                send({"jsonrpc": "2.0", "method": "$/progress", "params": {
                    "token": "idx", "value": {"kind": "end"}}})
        threading.Thread(target=after, daemon=True).start()
    elif method == "textDocument/didOpen":
        td = params["textDocument"]
        docs[td["uri"]] = (td["version"], td["text"])
        publish(td["uri"])
    elif method == "textDocument/didChange":
        td = params["textDocument"]
        docs[td["uri"]] = (td["version"], params["contentChanges"][-1]["text"])
        publish(td["uri"])
    elif method == "textDocument/didClose":
        docs.pop(params["textDocument"]["uri"], None)
    elif method == "textDocument/diagnostic":
        def go():
            delay("textDocument/diagnostic")
            _, text = docs.get(params["textDocument"]["uri"], (0, ""))
            send({"jsonrpc": "2.0", "id": mid, "result": {"kind": "full", "items": diagnostics_of(text)}})
        threading.Thread(target=go, daemon=True).start()
    elif method in ("textDocument/definition", "textDocument/references"):
        delay(method)
        uri = params["textDocument"]["uri"]
        word, _ = word_at(uri, params["position"])
        locs = occurrences(uri, word) if word else []
        send({"jsonrpc": "2.0", "id": mid, "result": locs[:1] if method.endswith("definition") else locs})
    elif method == "textDocument/hover":
        delay(method)
        word, _ = word_at(params["textDocument"]["uri"], params["position"])
        result = {"contents": {"kind": "markdown", "value": "fake hover: `%s`" % word}} if word else None
        send({"jsonrpc": "2.0", "id": mid, "result": result})
    elif method == "textDocument/prepareRename":
        word, m = word_at(params["textDocument"]["uri"], params["position"])
        send({"jsonrpc": "2.0", "id": mid, "result": None if not word else {"placeholder": word, "range": {
            "start": params["position"], "end": params["position"]}}})
    elif method == "textDocument/rename":
        uri = params["textDocument"]["uri"]
        word, _ = word_at(uri, params["position"])
        uris = list(docs) if script.get("rename_open_docs") else [uri]
        uris = [u for u in uris if not any(u.endswith(s) for s in script.get("rename_never", []))]
        changes = {}
        for u in uris:
            edits = [{"range": o["range"], "newText": params["newName"]} for o in occurrences(u, word)]
            if edits:
                changes[u] = edits
        send({"jsonrpc": "2.0", "id": mid, "result": {"changes": changes}})
    elif method == "textDocument/documentSymbol":
        uri = params["textDocument"]["uri"]
        _, text = docs.get(uri, (0, ""))
        syms = []
        for n, line in enumerate(text.split("\n")):
            m = re.match(r"\s*(?:void|int|class|def|func)\s+(\w+)", line)
            if m:
                r = {"start": {"line": n, "character": col(line, m.start(1))},
                     "end": {"line": n, "character": col(line, m.end(1))}}
                syms.append({"name": m.group(1), "kind": 12, "range": r, "selectionRange": r})
        send({"jsonrpc": "2.0", "id": mid, "result": syms})
    elif method == "workspace/symbol":
        send({"jsonrpc": "2.0", "id": mid, "result": []})
    elif method == "textDocument/codeAction":
        send({"jsonrpc": "2.0", "id": mid, "result": [
            {"title": "Fake fix", "kind": "quickfix", "isPreferred": True}]})
    elif method == "shutdown":
        send({"jsonrpc": "2.0", "id": mid, "result": None})
    elif method == "exit":
        if not script.get("ignore_exit"):
            if helper:
                helper.kill()
            os._exit(0)
    elif mid is not None:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "not supported: %s" % method}})


def main():
    while True:
        msg = read()
        if msg is None:
            if script.get("ignore_exit"):
                while True:
                    time.sleep(60)
            return
        handle(msg)


main()
