//! A capsule as a process inside meets it, with each local backend (bubblewrap and Landlock):
//! the project writable, everything else read-only or hidden (the user's home whole, but what
//! the run needs from it), no network, the host's processes out of reach, nothing left after.
//! As root these tests also run themselves again as an unprivileged user (the one
//! `cargo xtask setup` creates), the way users run the host.

#![allow(clippy::print_stderr)] // a skipped test says so loudly

use std::{
    ffi::{OsStr, OsString},
    io::{BufRead, BufReader, Read},
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use agent_tools_support::{
    capsule::{
        Bwrap, Capsule, CapsuleOptions, Landlock, Network, ProcessEnd, WorkerLogin,
        free_loopback_ports, landlock_abi,
    },
    process,
};

/// The local backends under test.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Backend {
    Bwrap,
    Landlock,
}

/// The backends this machine has; a missing one fails in CI and is skipped loudly elsewhere.
fn backends() -> Vec<Backend> {
    let mut found = Vec::new();
    for (backend, present, why) in [
        (
            Backend::Bwrap,
            Path::new("/usr/bin/bwrap").exists(),
            "bubblewrap is missing: `cargo xtask setup` installs it",
        ),
        (Backend::Landlock, landlock_abi() >= 4, "this kernel has no Landlock ABI 4 (Linux 6.7)"),
    ] {
        if present {
            found.push(backend);
            continue;
        }
        assert!(std::env::var_os("CI").is_none(), "{why}");
        eprintln!("\n!!! SKIPPED for {backend:?}: {why} !!!\n");
    }
    found
}

fn start(backend: Backend, options: CapsuleOptions) -> Box<dyn Capsule> {
    match backend {
        Backend::Bwrap => Box::new(Bwrap::start(options).expect("a bubblewrap capsule")),
        Backend::Landlock => Box::new(Landlock::start(options).expect("a Landlock capsule")),
    }
}

/// Where fixtures live: a folder the running user owns (the unprivileged re-run sets it).
fn scratch() -> PathBuf {
    std::env::var_os("AGENT_TOOLS_TEST_SCRATCH")
        .map_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")), PathBuf::from)
}

struct Fixture {
    project: tempfile::TempDir,
    home: tempfile::TempDir,
    capsule: Box<dyn Capsule>,
}

fn fixture(backend: Backend, network: Network) -> Fixture {
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(project.path().join(".git/hooks")).unwrap();
    std::fs::create_dir(project.path().join("work")).unwrap();
    // A home outside /tmp, as real ones are, with a key, a credential and a file of the user's
    // own on no list.
    let home = tempfile::tempdir_in(scratch()).unwrap();
    std::fs::create_dir(home.path().join(".ssh")).unwrap();
    std::fs::write(home.path().join(".ssh/id_ed25519"), "PRIVATE KEY").unwrap();
    std::fs::write(home.path().join(".netrc"), "machine example.com password hunter2").unwrap();
    std::fs::write(home.path().join(".pgpass"), "db:5432:*:me:pgsecret").unwrap();
    let capsule = start(
        backend,
        CapsuleOptions {
            project: project.path().to_path_buf(),
            network,
            home: Some(home.path().to_path_buf()),
            ..CapsuleOptions::default()
        },
    );
    Fixture { project, home, capsule }
}

/// Runs `sh -c script` inside and returns what it printed (stdout and stderr).
fn run_inside(capsule: &dyn Capsule, cwd: &Path, script: &str) -> String {
    let mut command = capsule.command(OsStr::new("sh"), &[OsString::from("-c"), script.into()]);
    command.current_dir(cwd).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let spawned = process::spawn_std(command).unwrap();
    let output = spawned.child.wait_with_output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn the_project_is_writable_and_nothing_else_is() {
    for backend in backends() {
        let f = fixture(backend, Network::None);
        let out = run_inside(
            &*f.capsule,
            f.project.path(),
            "echo made > work/made.txt && echo project-ok; \
             echo x > /etc/agent-tools-probe || echo etc-refused; \
             echo x > .git/hooks/pre-commit || echo git-refused; \
             echo x > \"$TMPDIR/scratch\" && echo tmp-ok; \
             echo x > \"$HOME/file\" && echo home-ok",
        );
        let project = f.project.path();
        assert!(out.contains("project-ok"), "{backend:?}: {out}");
        assert_eq!(std::fs::read_to_string(project.join("work/made.txt")).unwrap(), "made\n");
        assert!(out.contains("etc-refused") && out.contains("git-refused"), "{backend:?}: {out}");
        assert!(!project.join(".git/hooks/pre-commit").exists(), "{backend:?}");
        assert!(!Path::new("/etc/agent-tools-probe").exists(), "{backend:?}");
        assert!(out.contains("tmp-ok") && out.contains("home-ok"), "{backend:?}: {out}");
        assert!(f.capsule.temp_dir().join("scratch").exists(), "{backend:?}: a private temp");
        let why = f.capsule.explain(&out).expect("a refused write is explained");
        assert!(why.contains("only the project") && why.contains("read-only"), "{why}");
    }
}

#[test]
fn the_home_is_private_and_secrets_stay_outside() {
    for backend in backends() {
        // SAFETY: nextest runs every test in its own process; nothing else reads the
        // environment. A token by a name the allow-list does not pass:
        unsafe { std::env::set_var("GITHUB_TOKEN", "ghp_secret") };
        let f = fixture(backend, Network::None);
        let home = f.home.path().display();
        let out = run_inside(
            &*f.capsule,
            f.project.path(),
            &format!(
                "cat {home}/.ssh/id_ed25519 || echo key-hidden; cat {home}/.netrc || echo \
                 netrc-hidden; cat {home}/.pgpass || echo pgpass-hidden; ls {home} || echo \
                 listing-refused; echo token=[$GITHUB_TOKEN]"
            ),
        );
        for (hidden, secret) in [
            ("key-hidden", "PRIVATE KEY"),
            ("netrc-hidden", "hunter2"),
            ("pgpass-hidden", "pgsecret"),
        ] {
            assert!(out.contains(hidden) && !out.contains(secret), "{backend:?}: {out}");
        }
        assert!(!out.contains(".pgpass\n"), "{backend:?}: the home's names are hidden: {out}");
        assert!(out.contains("token=[]"), "{backend:?}: {out}");
        let why = f.capsule.explain(&out).expect("a hidden home file is explained");
        assert!(why.contains("~/.pgpass") && why.contains("private"), "{backend:?}: {why}");
        let status = f.capsule.describe();
        assert!(status.contains("is private") && status.contains(".ssh"), "{status}");
    }
}

#[test]
fn what_the_run_needs_from_the_home_is_shown_read_only() {
    for backend in backends() {
        let project = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir_in(scratch()).unwrap();
        let tool = home.path().join(".local/tool/bin");
        std::fs::create_dir_all(&tool).unwrap();
        std::fs::write(tool.join("greet"), "#!/bin/sh\necho hello from the home\n").unwrap();
        std::process::Command::new("chmod").arg("+x").arg(tool.join("greet")).status().unwrap();
        std::fs::create_dir(home.path().join(".claude")).unwrap();
        std::fs::write(home.path().join(".claude/key"), "exposed-key").unwrap();
        std::fs::write(home.path().join(".history"), "secret history").unwrap();
        let capsule = start(
            backend,
            CapsuleOptions {
                project: project.path().to_path_buf(),
                home: Some(home.path().to_path_buf()),
                programs: vec![tool.join("greet")],
                expose: vec![home.path().join(".claude")],
                ..CapsuleOptions::default()
            },
        );
        let h = home.path().display();
        let out = run_inside(
            &*capsule,
            project.path(),
            &format!(
                "{h}/.local/tool/bin/greet; cat {h}/.claude/key; echo; cat {h}/.history || echo \
                 history-hidden; echo x > {h}/.local/tool/bin/planted || echo shown-read-only"
            ),
        );
        assert!(out.contains("hello from the home") && out.contains("exposed-key"), "{out}");
        assert!(out.contains("history-hidden") && !out.contains("secret history"), "{out}");
        assert!(out.contains("shown-read-only"), "{backend:?}: {out}");
        let status = capsule.describe();
        assert!(status.contains("~/.local/tool (the run's program"), "{status}");
        assert!(status.contains("~/.claude (exposed by the configuration)"), "{status}");
    }
}

/// A virtual environment made under /tmp (a CI job's, a wheel's test venv): its interpreter
/// runs inside although the capsule's /tmp is private, and stays read-only; the rest of /tmp
/// stays out of sight.
#[test]
fn a_program_in_a_temp_folder_runs_inside_and_the_rest_of_tmp_stays_hidden() {
    for backend in backends() {
        let project = tempfile::tempdir().unwrap();
        let venv = tempfile::tempdir().unwrap(); // under /tmp
        let bin = venv.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("greet"), "#!/bin/sh\necho hello from the temp venv\n").unwrap();
        std::process::Command::new("chmod").arg("+x").arg(bin.join("greet")).status().unwrap();
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("note"), "another job's file").unwrap();
        let capsule = start(
            backend,
            CapsuleOptions {
                project: project.path().to_path_buf(),
                programs: vec![bin.join("greet")],
                ..CapsuleOptions::default()
            },
        );
        let out = run_inside(
            &*capsule,
            project.path(),
            &format!(
                "{}; cat {} || echo other-hidden; echo x > {}/planted || echo shown-read-only",
                bin.join("greet").display(),
                other.path().join("note").display(),
                bin.display()
            ),
        );
        assert!(out.contains("hello from the temp venv"), "{backend:?}: {out}");
        assert!(out.contains("other-hidden") && !out.contains("another job's"), "{out}");
        assert!(out.contains("shown-read-only"), "{backend:?}: {out}");
    }
}

#[test]
fn a_workers_capsule_shows_its_clis_login_at_home_and_nothing_else() {
    for backend in backends() {
        let project = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir_in(scratch()).unwrap();
        std::fs::create_dir(home.path().join(".claude")).unwrap();
        std::fs::write(home.path().join(".claude/.credentials.json"), "claude-login").unwrap();
        std::fs::write(home.path().join(".claude.json"), "{\"theme\": \"dark\"}").unwrap();
        std::fs::create_dir(home.path().join(".ssh")).unwrap();
        std::fs::write(home.path().join(".ssh/id_ed25519"), "PRIVATE KEY").unwrap();
        std::fs::write(home.path().join(".pgpass"), "db:5432:*:me:pgsecret").unwrap();
        let claude = WorkerLogin::named("claude").unwrap();
        let capsule = start(
            backend,
            CapsuleOptions {
                project: project.path().to_path_buf(),
                home: Some(home.path().to_path_buf()),
                logins: claude.paths(home.path()),
                ..CapsuleOptions::default()
            },
        );
        // The CLI reads its login through $HOME, the private home inside.
        let out = run_inside(
            &*capsule,
            project.path(),
            "cat $HOME/.claude/.credentials.json; echo; cat $HOME/.claude.json; echo; \
             echo x > $HOME/.claude/planted || echo login-read-only; \
             cat ~/.pgpass $HOME/.pgpass || echo pgpass-hidden",
        );
        assert!(out.contains("claude-login") && out.contains("dark"), "{backend:?}: {out}");
        assert!(out.contains("login-read-only"), "{backend:?}: {out}");
        assert!(out.contains("pgpass-hidden") && !out.contains("pgsecret"), "{backend:?}: {out}");
        let h = home.path().display();
        let out = run_inside(&*capsule, project.path(), &format!("cat {h}/.pgpass {h}/.ssh/*"));
        assert!(!out.contains("pgsecret") && !out.contains("PRIVATE"), "{backend:?}: {out}");
        let status = capsule.describe();
        assert!(status.contains("~/.claude (the login of the worker CLI `claude`)"), "{status}");
    }
}

#[test]
fn no_network_and_the_host_processes_are_out_of_reach() {
    for backend in backends() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let f = fixture(backend, Network::None);
        let host = std::process::id();
        let out = run_inside(
            &*f.capsule,
            f.project.path(),
            &format!(
                "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)' \
                 2>&1 | tail -1; node -e \"require('net').connect({port}, '127.0.0.1') \
                 .on('error', e => console.log('node', e.code))\"; \
                 python3 -c 'import socket; socket.socket(socket.AF_INET, \
                 socket.SOCK_DGRAM)' 2>&1 | tail -1; kill -TERM {host} || echo kill-refused; \
                 unshare --user true 2>&1 || echo unshare-refused"
            ),
        );
        assert!(
            out.contains("Connection refused") || out.contains("Permission denied"),
            "{backend:?}: {out}"
        );
        assert!(out.contains("node ECONNREFUSED") || out.contains("node EACCES"), "{out}");
        assert!(out.contains("kill-refused"), "{backend:?}: {out}");
        assert!(out.contains("unshare-refused"), "{backend:?}: no namespaces: {out}");
        let why = f.capsule.explain(&out).expect("a refused connection is explained");
        assert!(why.contains("no network"), "{why}");
        listener.set_nonblocking(true).unwrap();
        assert!(listener.accept().is_err(), "{backend:?}: nothing came through");
    }
}

/// What a worker tries in its capsule: direct connections to the host (127.0.0.1, ::1, its
/// interface address `own`; plain TCP and MPTCP), a UDP socket, and `CONNECT`s through the
/// proxy its `HTTPS_PROXY` names, to the host and to a package registry on the internet.
fn egress_probe(port: u16, own: &str) -> String {
    format!(
        "import os, socket\n\
         out = []\n\
         def direct(host, family=socket.AF_INET, proto=0, name='tcp'):\n\
         \x20   try:\n\
         \x20       s = socket.socket(family, socket.SOCK_STREAM, proto); s.settimeout(5)\n\
         \x20       s.connect((host, {port})); out.append('direct %s %s: CONNECTED' % (name, host))\n\
         \x20   except OSError as e: out.append('direct %s %s: refused (%s)' % (name, host, e.strerror))\n\
         direct('127.0.0.1'); direct('{own}'); direct('::1', socket.AF_INET6)\n\
         direct('127.0.0.1', proto=262, name='mptcp')\n\
         try:\n\
         \x20   socket.socket(socket.AF_INET, socket.SOCK_DGRAM); out.append('udp: ALLOWED')\n\
         except OSError as e: out.append('udp: refused (%s)' % e.strerror)\n\
         proxy = os.environ['HTTPS_PROXY'].removeprefix('http://').split(':')\n\
         def through(target):\n\
         \x20   s = socket.create_connection((proxy[0], int(proxy[1])), 20)\n\
         \x20   s.sendall(('CONNECT %s HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n' % (target, target)).encode())\n\
         \x20   out.append('proxy %s: %s' % (target, s.makefile('rb').readline().decode().strip()))\n\
         for target in ['127.0.0.1:{port}', 'localhost:{port}', '{own}:{port}',\n\
         \x20              '[::ffff:127.0.0.1]:{port}', '169.254.169.254:80', 'pypi.org:443']:\n\
         \x20   through(target)\n\
         print('\\n'.join(out))\n"
    )
}

/// The host's address on its default route (an address of one of its interfaces).
fn own_address() -> String {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    socket.connect("203.0.113.1:9").expect("a default route");
    socket.local_addr().unwrap().ip().to_string()
}

/// Threads of this test process whose name starts with `prefix`.
fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with(prefix))
        })
        .count()
}

#[test]
fn a_workers_capsule_reaches_public_addresses_only_through_its_proxy() {
    for backend in backends() {
        // Listening on every address of the host, as a service bound to 0.0.0.0 does.
        let listener = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let own = own_address();
        let f = fixture(backend, Network::Internet);
        let out = run_inside(&*f.capsule, f.project.path(), "env | grep -i _proxy");
        let proxy = out
            .lines()
            .find_map(|l| l.strip_prefix("HTTPS_PROXY=http://127.0.0.1:"))
            .and_then(|p| p.parse::<u16>().ok())
            .unwrap_or_else(|| panic!("{backend:?}: no HTTPS_PROXY: {out}"));
        for variable in ["https_proxy=", "HTTP_PROXY=", "all_proxy=", "NO_PROXY=\n"] {
            assert!(out.contains(variable), "{backend:?}: {variable} missing: {out}");
        }
        let probe = egress_probe(port, &own);
        let out = run_inside(&*f.capsule, f.project.path(), &format!("python3 -c \"{probe}\""));
        for host in ["tcp 127.0.0.1", &format!("tcp {own}"), "tcp ::1"] {
            let refused = format!("direct {host}: refused (Permission denied)");
            assert!(out.contains(&refused), "{backend:?}: `{refused}` missing:\n{out}");
        }
        let mptcp = "direct mptcp 127.0.0.1: refused (Operation not permitted)";
        assert!(out.contains(mptcp), "{backend:?}: {out}");
        assert!(out.contains("udp: refused (Operation not permitted)"), "{backend:?}: {out}");
        for target in [
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("{own}:{port}"),
            format!("[::ffff:127.0.0.1]:{port}"),
            "169.254.169.254:80".into(),
        ] {
            let refused = format!("proxy {target}: HTTP/1.1 403 agent-tools' egress proxy refused");
            assert!(out.contains(&refused), "{backend:?}: `{refused}` missing:\n{out}");
        }
        assert!(out.contains("a loopback address of the host"), "{backend:?}: {out}");
        assert!(out.contains("an address of one of the host's own network interfaces"), "{out}");
        let reached = "proxy pypi.org:443: HTTP/1.1 200 Connection established";
        assert!(out.contains(reached), "{backend:?}: the internet through the proxy:\n{out}");
        assert!(!out.contains("CONNECTED") && !out.contains("ALLOWED"), "{backend:?}: {out}");
        listener.set_nonblocking(true).unwrap();
        assert!(listener.accept().is_err(), "{backend:?}: nothing reached the host's port");
        let status = f.capsule.describe();
        assert!(
            status.contains(&format!(
                "public addresses only, through the run's egress proxy at \
                                      127.0.0.1:{proxy}"
            )),
            "{status}"
        );
        let why = f.capsule.explain(&out).expect("a refused connection is explained");
        assert!(why.contains("only through the run's egress proxy"), "{backend:?}: {why}");
        // A host service on an abstract socket (shared with the host's network namespace).
        if landlock_abi() >= 6 {
            let name = format!("agent-tools-test-{}", std::process::id());
            let addr = <std::os::unix::net::SocketAddr as std::os::linux::net::SocketAddrExt>::from_abstract_name(name.as_bytes()).unwrap();
            let service = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
            let out = run_inside(
                &*f.capsule,
                f.project.path(),
                &format!(
                    "python3 -c \"import socket\ntry:\n socket.socket(socket.AF_UNIX).connect('\\0{name}'); \
                     print('abstract: CONNECTED')\nexcept OSError as e: print('abstract: refused', e)\""
                ),
            );
            assert!(
                out.contains("abstract: refused [Errno 1] Operation not permitted"),
                "{backend:?}: {out}"
            );
            service.set_nonblocking(true).unwrap();
            assert!(service.accept().is_err(), "{backend:?}: nothing reached the host's service");
        }
        assert_eq!(threads_named("egress-proxy"), 1, "{backend:?}: the proxy runs");
        drop(f);
        for name in ["egress-proxy", "egress-conn", "egress-relay"] {
            assert_eq!(threads_named(name), 0, "{backend:?}: {name} outlived the capsule");
        }
        let gone = std::net::TcpStream::connect(("127.0.0.1", proxy));
        assert!(gone.is_err(), "{backend:?}: the proxy's port outlived the capsule");
    }
}

/// Set when this test binary runs inside a workers' capsule to make one of its own there.
const NESTED: &str = "AGENT_TOOLS_TEST_NESTED_WORKER";

/// A worker's own agent-tools makes a workers' capsule inside its own, where nothing may
/// listen on a port: its processes go out through the enclosing capsule's proxy, which still
/// refuses the host. The capsule inside is Landlock (bubblewrap cannot make namespaces there).
#[test]
fn a_workers_capsule_made_inside_one_goes_out_through_the_enclosing_proxy() {
    if let Ok(port) = std::env::var(NESTED) {
        // Inside: Landlock (bubblewrap cannot make namespaces in a capsule).
        let project = std::env::current_dir().unwrap();
        let capsule = Landlock::start(CapsuleOptions {
            project: project.clone(),
            network: Network::Internet,
            ..CapsuleOptions::default()
        })
        .expect("a workers' capsule inside a workers' capsule");
        let own = std::env::var("AGENT_TOOLS_TEST_OWN").unwrap();
        let probe = egress_probe(port.parse().unwrap(), &own);
        let out = run_inside(&capsule, &project, &format!("python3 -c \"{probe}\""));
        #[allow(clippy::print_stdout, reason = "the enclosing test reads it")]
        {
            println!("{out}\nnested status: {}", capsule.describe());
        }
        return;
    }
    for backend in backends() {
        let listener = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let project = tempfile::tempdir().unwrap();
        let this = std::env::current_exe().unwrap();
        let capsule = start(
            backend,
            CapsuleOptions {
                project: project.path().to_path_buf(),
                network: Network::Internet,
                programs: vec![this.clone()],
                ..CapsuleOptions::default()
            },
        );
        let out = run_inside(
            &*capsule,
            project.path(),
            &format!(
                "{NESTED}={port} AGENT_TOOLS_TEST_OWN={} {} --exact --nocapture \
                 capsule::a_workers_capsule_made_inside_one_goes_out_through_the_enclosing_proxy",
                own_address(),
                this.display()
            ),
        );
        assert!(out.contains("test result: ok. 1 passed"), "{backend:?}: {out}");
        let refused =
            format!("proxy 127.0.0.1:{port}: HTTP/1.1 403 agent-tools' egress proxy refused");
        assert!(out.contains(&refused), "{backend:?}: {out}");
        assert!(out.contains("direct tcp 127.0.0.1: refused (Permission denied)"), "{out}");
        assert!(out.contains("proxy pypi.org:443: HTTP/1.1 200"), "{backend:?}: {out}");
        assert!(out.contains("egress proxy at 127.0.0.1:"), "{backend:?}: {out}");
        assert!(out.contains("(the enclosing worker's)"), "{backend:?}: {out}");
        listener.set_nonblocking(true).unwrap();
        assert!(listener.accept().is_err(), "{backend:?}: nothing reached the host's port");
    }
}

#[test]
fn processes_inside_talk_on_the_loopback_ports_given_and_on_no_other() {
    for backend in backends() {
        let f = fixture(backend, Network::None);
        let ports = free_loopback_ports(2).unwrap();
        let (given, other) = (ports[0], ports[1]);
        // One process listens on a given port, another connects to it; the other port is
        // refused under Landlock (it is not given) and in bubblewrap (its own loopback).
        let script = format!(
            "import socket, subprocess, sys\n\
             server = socket.create_server(('127.0.0.1', {given}))\n\
             child = subprocess.run([sys.executable, '-c', \"import socket; \
             socket.create_connection(('127.0.0.1', {given}), 5).sendall(b'hello')\"])\n\
             print('talked:', server.accept()[0].recv(5).decode())\n\
             try:\n    socket.create_connection(('127.0.0.1', {other}), 2)\n\
             except OSError as e:\n    print('other refused:', e)\n"
        );
        let mut command = f.capsule.command_with_ports(
            OsStr::new("python3"),
            &["-c".into(), script.into()],
            &[given],
        );
        command.current_dir(f.project.path()).stdin(Stdio::null());
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        let spawned = process::spawn_std(command).unwrap();
        let output = spawned.child.wait_with_output().unwrap();
        let out = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(out.contains("talked: hello"), "{backend:?}: {out}");
        assert!(out.contains("other refused"), "{backend:?}: {out}");
    }
}

#[test]
fn the_host_reaches_a_port_a_process_inside_listens_on() {
    for backend in backends() {
        let f = fixture(backend, Network::None);
        let script = "import socket,sys\n\
                      s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(1)\n\
                      print(s.getsockname()[1], flush=True)\n\
                      c,_=s.accept(); c.sendall(b'hello from inside'); c.close()\n";
        let mut command = f.capsule.command(OsStr::new("python3"), &["-c".into(), script.into()]);
        command.current_dir(f.project.path()).stdin(Stdio::null()).stdout(Stdio::piped());
        let mut spawned = process::spawn_std(command).unwrap();
        let mut line = String::new();
        BufReader::new(spawned.child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
        let port: u16 = line.trim().parse().unwrap_or_else(|_| panic!("{backend:?}: {line}"));
        let mut stream =
            f.capsule.connect_loopback(spawned.child.id(), port, Duration::from_secs(5)).unwrap();
        let mut got = String::new();
        stream.read_to_string(&mut got).unwrap();
        assert_eq!(got, "hello from inside");
        spawned.child.wait().unwrap();
    }
}

#[test]
fn nothing_is_left_once_the_run_ends() {
    for backend in backends() {
        let f = fixture(backend, Network::None);
        let tmp = f.capsule.temp_dir();
        let mut command = f.capsule.command(
            OsStr::new("sh"),
            &["-c".into(), "(setsid sleep 600 &) ; sleep 600 & echo started; wait".into()],
        );
        command.current_dir(f.project.path()).stdin(Stdio::null()).stdout(Stdio::piped());
        let mut spawned = process::spawn_std(command).unwrap();
        let mut line = String::new();
        BufReader::new(spawned.child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "started");
        let inside = descendants(spawned.child.id());
        assert!(inside.len() >= 2, "{backend:?}: the shell and a sleep: {inside:?}");
        spawned.group.terminate_blocking(Duration::from_millis(200));
        let _ = spawned.child.wait();
        for pid in &inside {
            assert!(!alive(*pid), "{backend:?}: pid {pid} outlived the teardown");
        }
        drop(f);
        assert!(!tmp.exists(), "{backend:?}: the capsule's private temp folder outlived it");
    }
}

#[test]
fn a_death_by_signal_reads_as_one_and_an_exit_code_as_one() {
    for backend in backends() {
        let f = fixture(backend, Network::None);
        for (script, expected) in [
            ("kill -ABRT $$", ProcessEnd::Signal(libc::SIGABRT)),
            ("kill -SEGV $$", ProcessEnd::Signal(libc::SIGSEGV)),
            ("exit 3", ProcessEnd::Code(3)),
            ("true", ProcessEnd::Code(0)),
        ] {
            let mut command = f.capsule.command(OsStr::new("sh"), &["-c".into(), script.into()]);
            command.current_dir(f.project.path()).stdin(Stdio::null());
            let mut spawned = process::spawn_std(command).unwrap();
            let status = spawned.child.wait().unwrap();
            assert_eq!(f.capsule.ended(status), expected, "{backend:?}: `{script}` ({status})");
        }
    }
}

fn descendants(pid: u32) -> Vec<u32> {
    let mut found = vec![];
    let mut queue = vec![pid];
    while let Some(p) = queue.pop() {
        found.push(p);
        for task in std::fs::read_dir(format!("/proc/{p}/task")).into_iter().flatten().flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            queue.extend(children.split_whitespace().filter_map(|c| c.parse::<u32>().ok()));
        }
    }
    found
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
}

#[test]
fn bubblewrap_gives_its_own_pid_namespace() {
    if !backends().contains(&Backend::Bwrap) {
        return;
    }
    let f = fixture(Backend::Bwrap, Network::None);
    let out = run_inside(&*f.capsule, f.project.path(), "echo pid=$$");
    assert!(out.contains("pid=2") || out.contains("pid=1"), "its own PID namespace: {out}");
}

#[test]
fn the_folder_of_a_killed_host_is_swept_by_the_next_capsule() {
    for backend in backends() {
        // A host that is gone (no such pid) left its capsule folder behind; one that runs keeps
        // its own.
        let gone = std::env::temp_dir().join("agent-tools-capsule-4194304000-1-deadbeef");
        std::fs::create_dir_all(gone.join("tmp/home")).unwrap();
        let f = fixture(backend, Network::None);
        assert!(!gone.exists(), "{backend:?}: the abandoned folder was removed");
        let other = fixture(backend, Network::None);
        assert!(f.capsule.temp_dir().exists(), "{backend:?}: a live host's folder is kept");
        drop(other);
    }
}

/// The user `cargo xtask setup` creates for the tests above to run as.
const TEST_USER: &str = "agent-tools-test";

/// Set in the re-run, so it does not run itself again.
const AS_USER: &str = "AGENT_TOOLS_CAPSULE_TEST_AS_USER";

#[test]
fn the_walls_hold_for_an_unprivileged_user() {
    if std::env::var_os(AS_USER).is_some() {
        return;
    }
    // SAFETY: geteuid only returns a number.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("(not root: the tests above already ran as an unprivileged user)");
        return;
    }
    let Some(home) = user_home(TEST_USER) else {
        assert!(std::env::var_os("CI").is_none(), "no user {TEST_USER}: run `cargo xtask setup`");
        eprintln!("\n!!! SKIPPED: no user {TEST_USER}; `cargo xtask setup` creates it !!!\n");
        return;
    };
    // The checkout may lie in a folder only root can enter (a `mktemp -d` clone, root's home):
    // the user runs a copy of this test binary from a folder it can read.
    let copy = tempfile::Builder::new().prefix("agent-tools-as-user-").tempdir().unwrap();
    let test_binary = copy.path().join("capsule-tests");
    std::fs::copy(std::env::current_exe().unwrap(), &test_binary).unwrap();
    for path in [copy.path(), test_binary.as_path()] {
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
    // A login-like environment (setpriv --reset-env), then the test's own variables.
    let mut variables =
        vec![format!("{AS_USER}=1"), format!("AGENT_TOOLS_TEST_SCRATCH={}", home.display())];
    variables.extend(std::env::var("CI").ok().map(|ci| format!("CI={ci}")));
    let out = std::process::Command::new("setpriv")
        .args(["--reuid", TEST_USER, "--regid", TEST_USER, "--init-groups", "--reset-env", "--"])
        .arg("env")
        .args(&variables)
        .arg(&test_binary)
        .args([
            "capsule::",
            "--test-threads=1",
            "--skip",
            "the_walls_hold_for_an_unprivileged_user",
        ])
        .output()
        .expect("setpriv runs the tests as the user");
    let printed =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "as {TEST_USER}:\n{printed}");
    assert!(!printed.contains("SKIPPED"), "as {TEST_USER}, a backend was missing:\n{printed}");
    let ran = printed.contains("test result: ok.") && !printed.contains("ok. 0 passed");
    assert!(ran, "as {TEST_USER}, the tests did not run:\n{printed}");
}

/// The home folder of `user` (from the password database), if the user exists.
fn user_home(user: &str) -> Option<PathBuf> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    let line = passwd.lines().find(|l| l.split(':').next() == Some(user))?;
    line.split(':').nth(5).map(PathBuf::from)
}
