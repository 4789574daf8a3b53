//! The vibe_* tools through `agent-tools mcp --vibe` with the official Python client: spawn,
//! wait, list; absent without vibe mode; refused from plan mode; no worker outlives the run.

use serde_json::{Value, json};

use crate::support::{McpScript, TempProject, text_of};

const CONFIG: &str = "[vibe.fast]\ncommand = \"sh ./worker.sh\"\n";
const WORKER: &str = "printf 'done: '\ncat\necho\necho \"as $AGENT_TOOLS_VIBE_WORKER_ID\"\n";

fn check(project: &TempProject, script: McpScript) -> Option<Vec<Value>> {
    let _ = project;
    script.run_and_end().map(crate::support::results)
}

fn vibe_tools(listed: &Value) -> Vec<(String, bool)> {
    listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with("vibe_")))
        .map(|t| (t["name"].as_str().unwrap().to_string(), t["readOnly"] == true))
        .collect()
}

#[test]
fn a_worker_is_spawned_waited_for_and_listed() {
    let project = TempProject::new(&[("agent-tools.toml", CONFIG), ("worker.sh", WORKER)]);
    let script = McpScript::new(&project.root, &["--vibe"])
        .list_tools()
        .call("vibe_spawn", json!({"brief": "Summarise the README.", "label": "summary"}))
        .call("vibe_wait", json!({"worker_id": "w1", "timeout_seconds": 120}))
        .call("vibe_list", json!({}));
    let Some(results) = check(&project, script) else { return };
    let tools = vibe_tools(&results[1]);
    // On the build surface workers may write, so what starts, re-briefs or stops one is not
    // read-only (a client's plan mode must not let it through); waiting and listing are.
    let expected: Vec<(String, bool)> = [
        ("vibe_kill", false),
        ("vibe_list", true),
        ("vibe_send", false),
        ("vibe_spawn", false),
        ("vibe_wait", true),
    ]
    .iter()
    .map(|(n, read_only)| (n.to_string(), *read_only))
    .collect();
    assert_eq!(tools, expected, "read-only only where nothing changes");

    let spawned = &results[2];
    assert_eq!(spawned["isError"], false, "{}", text_of(spawned));
    assert!(
        text_of(spawned).starts_with("w1 started: \"summary\" (fast worker, exec ceiling)"),
        "{}",
        text_of(spawned)
    );

    let waited = &results[3];
    assert_eq!(waited["isError"], false, "{}", text_of(waited));
    assert_eq!(waited["structured"]["worker"]["state"], "completed", "{}", text_of(waited));
    assert!(
        text_of(waited).ends_with("Result:\ndone: Summarise the README.\nas w1"),
        "{}",
        text_of(waited)
    );

    let listed = &results[4];
    assert!(
        text_of(listed).starts_with("1 worker (slots 0/4 in use; worker time "),
        "{}",
        text_of(listed)
    );
    assert!(
        text_of(listed).contains(" of the run's 4 h):\nw1 completed · fast · \"summary\""),
        "{}",
        text_of(listed)
    );
    assert_eq!(listed["structured"]["slots_max"], 4);
}

#[test]
fn without_vibe_mode_there_are_no_vibe_tools() {
    let project = TempProject::new(&[("agent-tools.toml", CONFIG), ("worker.sh", WORKER)]);
    let script = McpScript::new(&project.root, &[]).list_tools();
    let Some(results) = check(&project, script) else { return };
    assert!(vibe_tools(&results[1]).is_empty(), "{:?}", results[1]);
}

#[test]
fn the_setting_turns_vibe_mode_on_too() {
    let config = format!("[vibe]\nenabled = true\n\n{CONFIG}");
    let project = TempProject::new(&[("agent-tools.toml", &config), ("worker.sh", WORKER)]);
    let script = McpScript::new(&project.root, &[]).list_tools();
    let Some(results) = check(&project, script) else { return };
    assert_eq!(vibe_tools(&results[1]).len(), 5);
}

#[test]
fn plan_mode_cannot_delegate_to_a_writing_worker() {
    let project = TempProject::new(&[("agent-tools.toml", CONFIG), ("worker.sh", WORKER)]);
    let script = McpScript::new(&project.root, &["--vibe", "--surface", "plan"])
        .call("vibe_spawn", json!({"brief": "Rewrite main.rs.", "label": "rewrite"}));
    let Some(results) = check(&project, script) else { return };
    assert_eq!(results[1]["isError"], true);
    assert!(
        text_of(&results[1]).contains("Set `vibe.fast.read_only_command`"),
        "{}",
        text_of(&results[1])
    );
}

#[test]
fn a_worker_still_running_when_the_client_leaves_is_stopped() {
    let project = TempProject::new(&[
        ("agent-tools.toml", "[vibe.fast]\ncommand = \"sh ./slow.sh\"\n"),
        ("slow.sh", "echo working\nsleep 120 &\nwait\n"),
    ]);
    let script = McpScript::new(&project.root, &["--vibe"])
        .call("vibe_spawn", json!({"brief": "Take long.", "label": "long"}))
        .call("vibe_wait", json!({"worker_id": "w1", "timeout_seconds": 1}));
    // `check` fails if any process of the run (the worker and its `sleep`) survives.
    let Some(results) = check(&project, script) else { return };
    assert_eq!(results[2]["isError"], false, "a wait timeout is not an error");
    assert_eq!(results[2]["structured"]["timed_out"], true);
    assert_eq!(results[2]["structured"]["worker"]["state"], "running");
}

#[test]
fn a_worker_dies_with_a_host_that_is_killed() {
    let project =
        // The worker starts a process of its own, as real agent commands do: it must go too.
        TempProject::new(&[(
            "agent-tools.toml",
            "[vibe.fast]\ncommand = [\"sh\", \"-c\", \"sleep 300 & sleep 300\"]\n",
        )]);
    let marker = format!("e2e-vibe-kill-{}", std::process::id());
    let mut host = crate::support::RawHost::start(&project.root, &marker, &["--vibe"]);
    host.initialize();
    let spawned = host.call(2, "vibe_spawn", json!({"brief": "Take long.", "label": "long"}));
    assert_eq!(spawned["isError"], false, "{spawned}");

    assert!(
        crate::support::wait_for_marked(&marker, "sleep 300", 2),
        "the worker never ran: {:?}",
        crate::support::processes_with_marker(&marker)
    );

    // SIGKILL: the host gets no chance to stop its workers itself.
    host.child.kill().expect("kill the host");
    host.child.wait().expect("reap the host");
    crate::support::assert_no_survivors(&marker, std::time::Duration::from_secs(15));
}

/// A project whose fast worker runs this very host, `agent-tools call vibe_spawn`, under
/// `[vibe] max_depth = max_depth`.
fn nested_project(max_depth: u32) -> TempProject {
    let host = crate::support::host_binary().display().to_string();
    let args = json!({"brief": "Delegate further.", "label": "grandchild"}).to_string();
    let config = format!(
        "[vibe]\nmax_depth = {max_depth}\n[vibe.fast]\ncommand = [{host:?}, \"call\", \
         \"vibe_spawn\", {args:?}, \"--vibe\", \"--trust-project\"]\n"
    );
    TempProject::new(&[("agent-tools.toml", &config)])
}

#[test]
fn a_worker_running_agent_tools_itself_is_refused_a_spawn_past_the_depth_limit() {
    let project = nested_project(1);
    let script = McpScript::new(&project.root, &["--vibe"])
        .call("vibe_spawn", json!({"brief": "Spawn a worker of your own.", "label": "child"}))
        .call("vibe_wait", json!({"worker_id": "w1", "timeout_seconds": 120}));
    let Some(results) = check(&project, script) else { return };
    let waited = &results[2];
    assert_eq!(waited["structured"]["worker"]["state"], "failed", "{}", text_of(waited));
    let text = text_of(waited);
    assert!(text.contains("vibe_spawn: this agent runs as a worker at depth 1"), "{text}");
    assert!(text.contains("a worker cannot start workers of its own"), "{text}");
}

#[test]
fn a_deeper_limit_lets_a_worker_start_a_worker_of_its_own() {
    let project = nested_project(2);
    let script = McpScript::new(&project.root, &["--vibe"])
        .call("vibe_spawn", json!({"brief": "Spawn a worker of your own.", "label": "child"}))
        .call("vibe_wait", json!({"worker_id": "w1", "timeout_seconds": 120}));
    let Some(results) = check(&project, script) else { return };
    let waited = &results[2];
    // The worker's own host (depth 1 of 2) started its worker; its one-call run then ended it.
    assert_eq!(waited["structured"]["worker"]["state"], "completed", "{}", text_of(waited));
    assert!(text_of(waited).contains("w1 started: \"grandchild\""), "{}", text_of(waited));
}
