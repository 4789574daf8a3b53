//! A bubblewrap capsule as a process inside meets it: the project writable, everything else
//! read-only or hidden, no network, the host's processes out of reach, nothing left after.

#![allow(clippy::print_stderr)] // a skipped test says so loudly

use std::{
    ffi::{OsStr, OsString},
    io::{BufRead, BufReader, Read},
    path::Path,
    process::Stdio,
    time::Duration,
};

use agent_tools_support::{
    capsule::{Bwrap, BwrapOptions, Capsule, Network},
    process,
};

/// bubblewrap, or a loud skip outside CI (CI installs it, so there a missing one fails).
fn bwrap_available() -> bool {
    if Path::new("/usr/bin/bwrap").exists() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "bubblewrap is missing: `cargo xtask setup` installs it"
    );
    eprintln!(
        "\n!!! SKIPPED: bubblewrap (bwrap) is not installed; `cargo xtask setup` installs it !!!\n"
    );
    false
}

struct Fixture {
    project: tempfile::TempDir,
    home: tempfile::TempDir,
    capsule: Bwrap,
}

fn fixture(network: Network) -> Fixture {
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join(".git")).unwrap();
    // A home outside /tmp, as real ones are (the capsule's /tmp is its own).
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::create_dir(home.path().join(".ssh")).unwrap();
    std::fs::write(home.path().join(".ssh/id_ed25519"), "PRIVATE KEY").unwrap();
    std::fs::write(home.path().join(".netrc"), "machine example.com password hunter2").unwrap();
    std::fs::write(home.path().join("notes.txt"), "readable").unwrap();
    let capsule = Bwrap::start(BwrapOptions {
        project: project.path().to_path_buf(),
        network,
        home: Some(home.path().to_path_buf()),
        ..BwrapOptions::default()
    })
    .unwrap();
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
    if !bwrap_available() {
        return;
    }
    let f = fixture(Network::None);
    let out = run_inside(
        &f.capsule,
        f.project.path(),
        "echo made > made.txt && echo project-ok; \
         echo x > /etc/agent-tools-probe || echo etc-refused; \
         echo x > .git/hooks-probe || echo git-refused; \
         echo x > /tmp/scratch && echo tmp-ok; \
         echo x > \"$HOME/file\" && echo home-ok",
    );
    assert!(out.contains("project-ok"), "{out}");
    assert_eq!(std::fs::read_to_string(f.project.path().join("made.txt")).unwrap(), "made\n");
    assert!(out.contains("etc-refused") && out.contains("Read-only file system"), "{out}");
    assert!(out.contains("git-refused"), "{out}");
    assert!(!f.project.path().join(".git/hooks-probe").exists());
    assert!(out.contains("tmp-ok") && out.contains("home-ok"), "{out}");
    // The private /tmp is the run's, not the host's.
    assert!(
        !Path::new("/tmp/scratch").exists()
            || std::fs::read_to_string("/tmp/scratch").unwrap() != "x\n"
    );
    assert!(f.capsule.tmp_on_host().join("scratch").exists());
    let why = f.capsule.explain(&out).expect("a read-only refusal is explained");
    assert!(why.contains("only the project") && why.contains("read-only"), "{why}");
}

#[test]
fn secrets_stay_outside() {
    if !bwrap_available() {
        return;
    }
    // SAFETY: nextest runs every test in its own process; nothing else reads the environment.
    unsafe { std::env::set_var("AGENT_TOOLS_TEST_SECRET_TOKEN_FOR_CAPSULE", "hunter2") };
    // The allow-list lets AGENT_TOOLS_* through (lineage marks); a token by another name:
    unsafe { std::env::set_var("GITHUB_TOKEN", "ghp_secret") };
    let f = fixture(Network::None);
    let home = f.home.path().display();
    let out = run_inside(
        &f.capsule,
        f.project.path(),
        &format!(
            "cat {home}/.ssh/id_ed25519 || echo key-hidden; cat {home}/.netrc; echo netrc-done; \
             cat {home}/notes.txt; echo; echo token=[$GITHUB_TOKEN]"
        ),
    );
    assert!(out.contains("key-hidden") && !out.contains("PRIVATE KEY"), "{out}");
    assert!(!out.contains("hunter2") && out.contains("netrc-done"), "{out}");
    assert!(out.contains("readable"), "the rest of the home stays readable: {out}");
    assert!(out.contains("token=[]"), "{out}");
    assert!(f.capsule.describe().contains(".ssh"), "{}", f.capsule.describe());
}

#[test]
fn no_network_and_the_host_processes_are_out_of_reach() {
    if !bwrap_available() {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let f = fixture(Network::None);
    let host = std::process::id();
    let out = run_inside(
        &f.capsule,
        f.project.path(),
        &format!(
            "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)' \
             2>&1 | tail -1; kill -TERM {host} || echo kill-refused; echo pid=$$"
        ),
    );
    assert!(out.contains("Connection refused"), "{out}");
    assert!(out.contains("kill-refused"), "{out}");
    assert!(out.contains("pid=2") || out.contains("pid=1"), "its own PID namespace: {out}");
    let why = f.capsule.explain(&out).expect("a refused connection is explained");
    assert!(why.contains("no network"), "{why}");
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_err(), "nothing came through");
}

#[test]
fn the_host_reaches_a_port_a_process_inside_listens_on() {
    if !bwrap_available() {
        return;
    }
    let f = fixture(Network::None);
    let script = "import socket,sys\n\
                  s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(1)\n\
                  print(s.getsockname()[1], flush=True)\n\
                  c,_=s.accept(); c.sendall(b'hello from inside'); c.close()\n";
    let mut command = f.capsule.command(OsStr::new("python3"), &["-c".into(), script.into()]);
    command.current_dir(f.project.path()).stdin(Stdio::null()).stdout(Stdio::piped());
    let mut spawned = process::spawn_std(command).unwrap();
    let mut line = String::new();
    BufReader::new(spawned.child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    let port: u16 = line.trim().parse().unwrap();
    let mut stream =
        f.capsule.connect_loopback(spawned.child.id(), port, Duration::from_secs(5)).unwrap();
    let mut got = String::new();
    stream.read_to_string(&mut got).unwrap();
    assert_eq!(got, "hello from inside");
    spawned.child.wait().unwrap();
}

#[test]
fn nothing_is_left_once_the_run_ends() {
    if !bwrap_available() {
        return;
    }
    let f = fixture(Network::None);
    let tmp = f.capsule.tmp_on_host();
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
    assert!(inside.len() >= 3, "bwrap, its init and the sleeps: {inside:?}");
    spawned.group.terminate_blocking(Duration::from_millis(200));
    let _ = spawned.child.wait();
    for pid in &inside {
        assert!(!alive(*pid), "pid {pid} outlived the teardown");
    }
    drop(f);
    assert!(!tmp.exists(), "the capsule's private /tmp outlived it");
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
fn the_folder_of_a_killed_host_is_swept_by_the_next_capsule() {
    if !bwrap_available() {
        return;
    }
    // A host that is gone (no such pid) left its capsule folder behind; one that runs keeps its.
    let gone = std::env::temp_dir().join("agent-tools-capsule-4194304000-1-deadbeef");
    std::fs::create_dir_all(gone.join("tmp/home")).unwrap();
    let f = fixture(Network::None);
    assert!(!gone.exists(), "the abandoned folder was removed");
    let other = fixture(Network::None);
    assert!(f.capsule.tmp_on_host().exists(), "a live host's folder is kept");
    drop(other);
}

#[test]
fn a_secret_location_the_user_exposes_is_seen() {
    if !bwrap_available() {
        return;
    }
    let project = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for dir in [".ssh", ".claude"] {
        std::fs::create_dir(home.path().join(dir)).unwrap();
        std::fs::write(home.path().join(dir).join("key"), dir).unwrap();
    }
    let capsule = Bwrap::start(BwrapOptions {
        project: project.path().to_path_buf(),
        home: Some(home.path().to_path_buf()),
        expose: vec![home.path().join(".claude")],
        ..BwrapOptions::default()
    })
    .unwrap();
    let home = home.path().display();
    let out = run_inside(
        &capsule,
        project.path(),
        &format!("cat {home}/.claude/key; echo; cat {home}/.ssh/key || echo ssh-hidden"),
    );
    assert!(out.contains(".claude") && out.contains("ssh-hidden"), "{out}");
}
