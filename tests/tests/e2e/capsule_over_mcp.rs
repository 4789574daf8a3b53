//! `agent-tools mcp --capsule bwrap` and `--capsule landlock`: a Python cell, a Node cell, a
//! debuggee and a worker each try to write outside the project, read `~/.ssh` and a file of the
//! user's home on no list, reach a port of the host and signal a host process, and all fail
//! (the worker's `CONNECT` to the host through its egress proxy too, with the proxy's sentence),
//! while the project's files, the `tool()` bridge, interrupts and crash recovery work; `status`
//! says what confines the run; nothing is left after it, the proxy's port included.

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::Command,
};

use serde_json::{Value, json};

use crate::support::{
    McpScript, host_binary, python_venv_project, require, require_debugpy, test_python, text_of,
    unique,
};

/// Who runs the host.
#[derive(Clone, Copy, PartialEq)]
enum Who {
    /// The test itself (root in CI), with a made-up home.
    Root,
    /// The unprivileged user `cargo xtask setup` creates, in its real home, as users run it.
    User,
}

/// The user `cargo xtask setup` creates, and its venv (with debugpy) in its home.
const TEST_USER: &str = "agent-tools-test";
const TEST_USER_HOME: &str = "/home/agent-tools-test";
const TEST_USER_PYTHON: &str = "/home/agent-tools-test/venv/bin/python";

/// The home the host runs with, a key and a file of the user's own on no list in it; what the
/// test made there is removed on drop.
struct Home {
    dir: PathBuf,
    ssh: PathBuf,
    own: PathBuf,
    made: Vec<PathBuf>,
}

impl Home {
    /// A home outside /tmp (the capsule's /tmp is its own), as a user's is.
    fn fake() -> Home {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("home-{}", unique()));
        std::fs::create_dir_all(dir.join(".ssh")).expect("home");
        let (ssh, own) = (dir.join(".ssh/id_ed25519"), dir.join(".pgpass"));
        Home::with_secrets(Home { made: vec![dir.clone()], dir, ssh, own })
    }

    /// The user's real home, the secrets theirs (readable by them but for the capsule).
    fn of_user() -> Home {
        let dir = PathBuf::from(TEST_USER_HOME);
        let id = unique();
        let ssh = dir.join(format!(".ssh/id_e2e_{id}"));
        let own = dir.join(format!(".e2e-notes-{id}"));
        let mut home = Home { made: vec![ssh.clone(), own.clone()], dir, ssh, own };
        if !home.dir.join(".ssh").exists() {
            std::fs::create_dir(home.dir.join(".ssh")).expect(".ssh");
            home.made.push(home.dir.join(".ssh"));
        }
        let home = Home::with_secrets(home);
        for path in &home.made {
            chown_to_user(path);
        }
        home
    }

    fn with_secrets(home: Home) -> Home {
        std::fs::write(&home.ssh, "PRIVATE KEY").expect("key");
        std::fs::write(&home.own, "db:5432:*:me:PRIVATE KEY").expect("a file of the user's own");
        home
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        for path in self.made.iter().rev() {
            let _ = std::fs::remove_file(path).or_else(|_| std::fs::remove_dir_all(path));
        }
    }
}

/// Gives `path` (and what is under it) to the test user.
fn chown_to_user(path: &Path) {
    let done = Command::new("chown")
        .args(["-R", &format!("{TEST_USER}:{TEST_USER}")])
        .arg(path)
        .status()
        .expect("chown");
    assert!(done.success(), "chown {}", path.display());
}

/// The Python the host runs for `who`; `None` after a loud skip (a failure in CI).
fn python_for(who: Who) -> Option<PathBuf> {
    match who {
        Who::Root => {
            let python = test_python();
            if python.is_none() {
                require("python venv with the `mcp` SDK", false, "run `cargo xtask setup`");
            }
            python.filter(|p| require_debugpy(p))
        }
        Who::User => {
            let id = Command::new("id").arg("-u").output().expect("id -u");
            if id.stdout != b"0\n" {
                eprintln!("(not root: the tests as root already ran as an unprivileged user)");
                return None;
            }
            let found = Path::new(TEST_USER_PYTHON).exists();
            require(&format!("{TEST_USER}'s venv"), found, "run `cargo xtask setup`")
                .then(|| PathBuf::from(TEST_USER_PYTHON))
        }
    }
}

/// What each probe tries; every line must say `refused`/`hidden`, none `ALLOWED`/`READ`/…
fn python_probe(ssh: &Path, pgpass: &Path, port: u16) -> String {
    format!(
        "import os, socket\n\
         def probe():\n\
         \x20   out = []\n\
         \x20   try:\n\
         \x20       open('/etc/agent-tools-capsule-probe', 'w'); out.append('write-outside: ALLOWED')\n\
         \x20   except OSError as e: out.append('write-outside: refused (%s)' % e.strerror)\n\
         \x20   try:\n\
         \x20       out.append('ssh: READ ' + open({ssh:?}).read())\n\
         \x20   except OSError as e: out.append('ssh: hidden (%s)' % e.strerror)\n\
         \x20   try:\n\
         \x20       out.append('home: READ ' + open({pgpass:?}).read())\n\
         \x20   except OSError as e: out.append('home: hidden (%s)' % e.strerror)\n\
         \x20   try:\n\
         \x20       socket.create_connection(('127.0.0.1', {port}), 2); out.append('network: CONNECTED')\n\
         \x20   except OSError as e: out.append('network: refused (%s)' % e.strerror)\n\
         \x20   try:\n\
         \x20       os.kill({host}, 0); out.append('signal: DELIVERED')\n\
         \x20   except OSError as e: out.append('signal: refused (%s)' % e.strerror)\n\
         \x20   open('out/made-here.txt', 'a').write('x'); out.append('project: writable')\n\
         \x20   return out\n",
        ssh = ssh.display().to_string(),
        pgpass = pgpass.display().to_string(),
        host = std::process::id(),
    )
}

fn node_probe(ssh: &Path, pgpass: &Path, port: u16) -> String {
    format!(
        "const fs = require('fs'), net = require('net'); const out = [];\n\
         try {{ fs.writeFileSync('/etc/agent-tools-capsule-probe', 'x'); out.push('write-outside: ALLOWED') }} catch (e) {{ out.push('write-outside: refused (' + e.code + ')') }}\n\
         try {{ out.push('ssh: READ ' + fs.readFileSync({ssh:?}, 'utf8')) }} catch (e) {{ out.push('ssh: hidden (' + e.code + ')') }}\n\
         try {{ out.push('home: READ ' + fs.readFileSync({pgpass:?}, 'utf8')) }} catch (e) {{ out.push('home: hidden (' + e.code + ')') }}\n\
         try {{ process.kill({host}, 0); out.push('signal: DELIVERED') }} catch (e) {{ out.push('signal: refused (' + e.code + ')') }}\n\
         await new Promise(done => {{ const s = net.connect({port}, '127.0.0.1'); s.on('connect', () => {{ out.push('network: CONNECTED'); s.destroy(); done() }}); s.on('error', e => {{ out.push('network: refused (' + e.code + ')'); done() }}) }});\n\
         fs.appendFileSync('out/made-here.txt', 'j'); out.push('project: writable');\n\
         out.join('\\n')",
        ssh = ssh.display().to_string(),
        pgpass = pgpass.display().to_string(),
        host = std::process::id(),
    )
}

/// What a worker tries besides the probe: a `CONNECT` to the host's `port` through the egress
/// proxy its `HTTPS_PROXY` names; it prints the proxy's port.
fn proxy_probe(port: u16) -> String {
    format!(
        "import os, socket\n\
         proxy = os.environ['HTTPS_PROXY'].removeprefix('http://').split(':')\n\
         s = socket.create_connection((proxy[0], int(proxy[1])), 20)\n\
         s.sendall(b'CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n')\n\
         line = s.makefile('rb').readline().decode().strip()\n\
         print(('proxy: refused (%s)' if ' 403 ' in line else 'proxy: CONNECTED (%s)') % line)\n\
         print('proxy-port:', proxy[1])\n"
    )
}

/// Every wall held in `text` (the probes refused, the project written).
fn assert_walls_held(who: &str, text: &str) {
    let walls = [
        "write-outside: refused",
        "ssh: hidden",
        "home: hidden",
        "network: refused",
        "signal: refused",
    ];
    for wall in walls {
        assert!(text.contains(wall), "{who}: `{wall}` missing:\n{text}");
    }
    for breach in ["ALLOWED", "READ ", "CONNECTED", "DELIVERED", "PRIVATE KEY"] {
        assert!(!text.contains(breach), "{who}: the capsule leaked ({breach}):\n{text}");
    }
    assert!(text.contains("project: writable"), "{who}:\n{text}");
}

fn eval(code: &str, language: &str) -> Value {
    json!({"code": code, "description": "probe the capsule", "language": language})
}

#[test]
fn kernels_a_debuggee_and_a_worker_stay_inside_bubblewrap() {
    if require("bubblewrap", Path::new("/usr/bin/bwrap").exists(), "run `cargo xtask setup`") {
        walls_hold_over_mcp("bwrap", "bubblewrap capsule", Who::Root);
    }
}

#[test]
fn kernels_a_debuggee_and_a_worker_of_an_unprivileged_user_stay_inside_bubblewrap() {
    if require("bubblewrap", Path::new("/usr/bin/bwrap").exists(), "run `cargo xtask setup`") {
        walls_hold_over_mcp("bwrap", "bubblewrap capsule", Who::User);
    }
}

#[test]
fn kernels_a_debuggee_and_a_worker_of_an_unprivileged_user_stay_inside_landlock() {
    let line = capsule_line(&["--capsule", "landlock"]);
    if require("a Landlock capsule", line.starts_with("capsule: landlock"), &line) {
        walls_hold_over_mcp("landlock", "Landlock capsule", Who::User);
    }
}

#[test]
fn kernels_a_debuggee_and_a_worker_stay_inside_landlock() {
    let line = capsule_line(&["--capsule", "landlock"]);
    if require("a Landlock capsule", line.starts_with("capsule: landlock"), &line) {
        // debugpy's adapter and debuggee talk on loopback ports the host gave them.
        walls_hold_over_mcp("landlock", "Landlock capsule", Who::Root);
    }
}

/// The `capsule:` line of `agent-tools status` with `args`, in a fresh project.
fn capsule_line(args: &[&str]) -> String {
    let project = crate::support::TempProject::new(&[]);
    let out = Command::new(host_binary())
        .arg("status")
        .args(args)
        .arg("--root")
        .arg(&project.root)
        .output()
        .expect("status");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().find(|l| l.starts_with("capsule: ")).unwrap_or_default().to_string()
}

/// One run with capsule `kind` (its notes name it `named`), its host run by `who`: every probe
/// meets every wall.
fn walls_hold_over_mcp(kind: &str, named: &str, who: Who) {
    let Some(python) = python_for(who) else { return };
    // A home with a key and a file of the user's own in it; the capsule must hide both.
    let mut home = if who == Who::Root { Home::fake() } else { Home::of_user() };
    let (ssh, pgpass) = (&home.ssh, &home.own);
    let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
    let port = listener.local_addr().expect("port").port();
    let probe = python_probe(ssh, pgpass, port);
    let walls = format!("{probe}print('\\n'.join(probe()))\n");
    let config = format!(
        "[eval]\npython = {:?}\n[vibe.fast]\ncommand = \"sh ./worker.sh\"\n",
        python.display().to_string()
    );
    let project = python_venv_project(
        &python,
        &[
            ("agent-tools.toml", &config),
            ("walls.py", &walls),
            ("proxy.py", &proxy_probe(port)),
            (
                "worker.sh",
                "cat > /dev/null\n.venv/bin/python walls.py\n.venv/bin/python proxy.py\n",
            ),
            ("data.txt", "alpha\n"),
            ("out/.keep", ""),
        ],
    );
    let scratch = format!("capsule-scratch-{}", unique());
    let bin = std::env::temp_dir().join(format!("agent-tools-as-user-{}", unique()));
    std::fs::create_dir_all(&bin).expect("a folder for the host binary");
    home.made.push(bin.clone());
    let script = McpScript::new(&project.root, &["--capsule", kind, "--vibe"]);
    let script = match who {
        Who::Root => script.env("HOME", &home.dir.display().to_string()),
        Who::User => {
            chown_to_user(&project.root);
            script.run_by(TEST_USER, &home.dir, &bin)
        }
    };
    let script = script
        .call("eval", eval(&format!("{probe}n = 41\nprint('\\n'.join(probe()))"), "python"))
        .call(
            "eval",
            eval(
                &format!(
                    "import tempfile, os\n\
                     open(os.path.join(tempfile.gettempdir(), '{scratch}'), 'w').write('x')\n\
                     tool('read', {{'path': 'data.txt'}})['text']"
                ),
                "python",
            ),
        )
        .call_cancelled("eval", eval("import time\nwhile True: time.sleep(0.05)", "python"), 2.0)
        .call("eval", eval("n + 1", "python"))
        .call("eval", eval("import os; os._exit(3)", "python"))
        .call("eval", eval("'fresh kernel'", "python"))
        .call("eval", eval(&node_probe(ssh, pgpass, port), "javascript"))
        .call("debug", json!({"operation": "launch", "program": "walls.py", "wait_seconds": 120}))
        .call("vibe_spawn", json!({"brief": "probe the walls", "label": "walls"}))
        .call("vibe_wait", json!({"worker_id": "w1", "timeout_seconds": 120}));
    let marker = script.marker().to_string();
    let Some(out) = script.run_and_end() else { return };
    let results = crate::support::results(out);

    let first = text_of(&results[1]);
    assert_eq!(results[1]["isError"], false, "{first}");
    assert_walls_held("a Python cell", first);
    assert!(
        first.contains(named) && first.contains("no network"),
        "the note tells the model what confined it: {first}"
    );
    assert!(
        text_of(&results[2]).contains("1\\talpha"),
        "the bridge reads: {}",
        text_of(&results[2])
    );
    assert!(!results[3]["cancelled"].is_null(), "{}", results[3]);
    assert!(
        text_of(&results[4]).contains("was cancelled by the client and interrupted"),
        "the interrupt reached the kernel inside: {}",
        text_of(&results[4])
    );
    assert!(
        text_of(&results[4]).ends_with("42"),
        "state survives an interrupt: {}",
        text_of(&results[4])
    );
    assert_eq!(results[5]["isError"], true, "{}", text_of(&results[5]));
    assert!(text_of(&results[6]).contains("'fresh kernel'"), "{}", text_of(&results[6]));
    let node = text_of(&results[7]);
    assert_eq!(results[7]["isError"], false, "{node}");
    assert_walls_held("a Node cell", node);
    let debugged = text_of(&results[8]);
    assert_eq!(results[8]["isError"], false, "{debugged}");
    assert!(debugged.contains("exited"), "{debugged}");
    assert_walls_held("a debuggee", debugged);
    let worker = text_of(&results[10]);
    assert_eq!(results[10]["isError"], false, "{worker}");
    assert_walls_held("a worker", worker);
    let refused = format!(
        "proxy: refused (HTTP/1.1 403 agent-tools' egress proxy refused 127.0.0.1:{port}: \
         127.0.0.1 is a loopback address of the host"
    );
    assert!(worker.contains(&refused), "the proxy refused the host, saying why: {worker}");
    let proxy_port: u16 = worker
        .lines()
        .find_map(|l| l.strip_prefix("proxy-port: "))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("the worker printed its proxy's port: {worker}"));
    assert_eq!(
        std::fs::read_to_string(project.root.join("out/made-here.txt")).expect("made"),
        "xjxx",
        "each probe wrote in the project: Python cell, Node cell, debuggee, worker"
    );
    listener.set_nonblocking(true).expect("nonblocking");
    let reached = std::iter::from_fn(|| listener.accept().ok()).count();
    assert_eq!(reached, 0, "nothing reached the host's port, directly or through the proxy");
    let proxy = std::net::TcpStream::connect(("127.0.0.1", proxy_port));
    assert!(proxy.is_err(), "the workers' egress proxy outlived the run");
    assert!(!Path::new(&format!("/tmp/{scratch}")).exists(), "the capsule's temp is its own");
    crate::support::assert_no_survivors(&marker, std::time::Duration::from_secs(5));
    let leftovers: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .expect("tmp")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("agent-tools-capsule-"))
        .filter(|e| e.path().join("tmp").join(&scratch).exists())
        .collect();
    assert!(leftovers.is_empty(), "the run's capsule folder outlived it: {leftovers:?}");
}

#[test]
fn status_says_which_capsule_a_run_gets_and_what_it_confines() {
    if !require("bubblewrap", Path::new("/usr/bin/bwrap").exists(), "run `cargo xtask setup`") {
        return;
    }
    let home = Home::fake();
    let user = home.dir.join("agent-tools.toml");
    std::fs::write(&user, "[capsule]\nkind = \"bwrap\"\n").expect("user config");
    let project = crate::support::TempProject::new(&[]);
    // The project's own file cannot turn the sandbox off.
    std::fs::write(project.root.join("agent-tools.toml"), "[capsule]\nkind = \"none\"\n")
        .expect("project config");
    let out = Command::new(host_binary())
        .args(["status", "--root"])
        .arg(&project.root)
        .env("HOME", &home.dir)
        .env("AGENT_TOOLS_CONFIG", &user)
        .output()
        .expect("status");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let line = text.lines().find(|l| l.starts_with("capsule: ")).expect("a capsule line");
    assert!(line.starts_with("capsule: bwrap (/usr/bin/bwrap)"), "{line}");
    for said in ["read-write", "read-only", "is private", "~/.ssh", "no network", "PID namespace"] {
        assert!(line.contains(said), "`{said}` missing: {line}");
    }
    // `auto` says which backend it chose and why; Landlock says what it does not give.
    let auto = capsule_line(&["--capsule", "auto"]);
    assert!(auto.contains("(auto: bubblewrap can make its namespaces here)"), "{auto}");
    // `auto` is the default: a run without a [capsule] setting is confined.
    let default = capsule_line(&[]);
    assert!(
        default.starts_with("capsule: bwrap")
            && default.contains("(auto: bubblewrap can make its namespaces here)"),
        "the default is auto: {default}"
    );
    let landlock = capsule_line(&["--capsule", "landlock"]);
    if landlock.starts_with("capsule: landlock") {
        assert!(
            landlock.contains("not given (bubblewrap gives them): a PID namespace"),
            "{landlock}"
        );
    }
    // A prefix capsule asked for without its prefix stops the host at once, saying why.
    let bad = Command::new(host_binary())
        .args(["call", "read", r#"{"path": "x"}"#, "--capsule", "prefix", "--root"])
        .arg(&project.root)
        .env("HOME", &home.dir)
        .env("AGENT_TOOLS_CONFIG", &user)
        .output()
        .expect("call");
    let said = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{said}");
    assert!(said.contains("--capsule") && said.contains("prefix"), "{said}");
}

#[test]
fn a_capsule_dies_with_a_host_that_is_killed() {
    if !require("bubblewrap", Path::new("/usr/bin/bwrap").exists(), "run `cargo xtask setup`") {
        return;
    }
    let project = crate::support::TempProject::new(&[(
        "agent-tools.toml",
        "[vibe.fast]\ncommand = [\"sh\", \"-c\", \"sleep 300 & sleep 300\"]\n",
    )]);
    let marker = format!("e2e-capsule-kill-{}", unique());
    let mut host =
        crate::support::RawHost::start(&project.root, &marker, &["--capsule", "bwrap", "--vibe"]);
    host.initialize();
    let spawned = host.call(2, "vibe_spawn", json!({"brief": "Take long.", "label": "long"}));
    assert_eq!(spawned["isError"], false, "{spawned}");
    let inside = crate::support::wait_for_marked(&marker, "sleep 300", 2);
    let running = crate::support::processes_with_marker(&marker);
    assert!(inside, "the worker never ran in the capsule: {running:?}");
    assert!(running.iter().any(|(_, c)| c.contains("bwrap")), "it ran under bwrap: {running:?}");
    // SIGKILL: the host gets no chance to end its capsule itself.
    host.child.kill().expect("kill the host");
    host.child.wait().expect("reap the host");
    crate::support::assert_no_survivors(&marker, std::time::Duration::from_secs(15));
}
