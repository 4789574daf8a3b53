//! A worker lives as long as the host process, not as long as the thread that started it.

use std::{path::Path, time::Duration};

use agent_tools_vibe::{
    CommandBackend, CommandLine, ExitReport, StartRequest, Tier, TierCommands, VibeConfig,
    WorkerBackend, WorkerEvent, WorkerEvents, WorkerTier,
};

/// Waits for a release file, then says so: it can only say so if it was not killed before.
const BLOCK: &str = "while [ ! -f release ]; do sleep 0.05; done\necho released\n";

/// Starts a worker on a thread of its own that then exits, releases it once that thread is gone,
/// and returns how it ended and what it printed.
fn check_started_from_a_passing_thread() -> (ExitReport, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("block.sh"), BLOCK).expect("write script");
    let config = VibeConfig {
        fast: TierCommands {
            command: Some(CommandLine::Shell("sh ./block.sh".into())),
            read_only_command: None,
        },
        ..VibeConfig::default()
    };
    let backend = CommandBackend::new(dir.path(), config);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let (events, mut received) = WorkerEvents::channel();
    let handle = runtime.handle().clone();
    let starter = std::thread::spawn(move || {
        // SAFETY: gettid(2) has no preconditions.
        let tid = unsafe { libc::gettid() };
        let request = StartRequest {
            worker_id: "w1".into(),
            label: "outlives its starter".into(),
            tier: WorkerTier::Fast,
            ceiling: Tier::Exec,
            briefing: "Wait for the release.".into(),
            revision: 1,
            attempt: 1,
            nesting: agent_tools_vibe::Nesting::top(1),
        };
        (tid, handle.block_on(backend.start(request, events)))
    });
    let (tid, worker) = starter.join().expect("the starting thread");
    let worker = worker.expect("the worker starts");
    // Once the thread is reaped, any death signal tied to it has been sent.
    let task = format!("/proc/self/task/{tid}");
    for _ in 0..6000 {
        if !Path::new(&task).exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!Path::new(&task).exists(), "the starting thread did not end");
    std::fs::write(dir.path().join("release"), "").expect("release");

    runtime.block_on(async move {
        let mut output = String::new();
        while let Some(event) = received.recv().await {
            match event {
                WorkerEvent::Output(_, text) => output.push_str(&text),
                WorkerEvent::Exited(report) => {
                    drop(worker);
                    return (report, output);
                }
            }
        }
        panic!("the worker's events ended without an exit");
    })
}

#[test]
fn a_worker_keeps_running_after_the_thread_that_started_it_exits() {
    let (exit, output) = check_started_from_a_passing_thread();
    assert!(exit.success, "the worker was cut short: {}", exit.detail);
    assert_eq!(output, "released\n");
}
