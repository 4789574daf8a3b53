//! Where kernels run: the capsule launcher wraps the kernel command in a real prefix.

use std::sync::Arc;

use agent_tools_eval::{
    CapsuleLauncher, CellStatus, EvalConfig, EvalRequest, Kernels, Language, LauncherConfig,
    NoBridge, NoProgress, render,
};
use tokio_util::sync::CancellationToken;

/// Runs `code` in a Python kernel started through `kernels`' launcher.
async fn check(kernels: &Kernels, code: &str) -> (CellStatus, String) {
    let root = tempfile::tempdir().expect("temp");
    let request = EvalRequest {
        code: code.into(),
        description: "inside the capsule".into(),
        language: Some(Language::Python),
        reset: None,
    };
    let report = kernels
        .eval(
            "capsule",
            root.path(),
            request,
            Arc::new(NoBridge),
            &CancellationToken::new(),
            &NoProgress,
        )
        .await
        .expect("eval");
    let text = render(&report);
    kernels.shutdown().await;
    (report.status, text)
}

#[tokio::test]
async fn a_capsule_prefix_wraps_the_kernel_and_keeps_the_protocol_pipes() {
    let prefix: Vec<String> = ["env", "AGENT_TOOLS_CAPSULE=demo", "nice", "-n", "7"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let config =
        EvalConfig { launcher: LauncherConfig { prefix: prefix.clone() }, ..EvalConfig::default() };
    let kernels = Kernels::new(config);
    assert_eq!(kernels.launcher().describe(), "capsule (env AGENT_TOOLS_CAPSULE=demo nice -n 7)");
    let base = niceness();
    let (status, text) = check(
        &kernels,
        "import os\nprint('in capsule')\n(os.environ['AGENT_TOOLS_CAPSULE'], os.nice(0))",
    )
    .await;
    assert_eq!(status, CellStatus::Ok, "{text}");
    assert!(
        text.ends_with(&format!("in capsule\nOut[1]: ('demo', {})", (base + 7).min(19))),
        "{text}"
    );
}

#[tokio::test]
async fn the_capsule_launcher_can_be_given_by_a_harness() {
    let launcher =
        CapsuleLauncher::new(vec!["env".into(), "CAPSULE_BY_HARNESS=1".into()]).expect("launcher");
    let kernels = Kernels::new(EvalConfig::default()).with_launcher(Arc::new(launcher));
    let (status, text) = check(&kernels, "import os; os.environ.get('CAPSULE_BY_HARNESS')").await;
    assert_eq!(status, CellStatus::Ok, "{text}");
    assert!(text.ends_with("Out[1]: '1'"), "{text}");
    assert!(CapsuleLauncher::new(vec![]).is_err());
}

#[tokio::test]
async fn a_prefix_that_cannot_start_is_a_clear_error() {
    let config = EvalConfig {
        launcher: LauncherConfig { prefix: vec!["/nonexistent/capsule-wrapper".into()] },
        ..EvalConfig::default()
    };
    let kernels = Kernels::new(config);
    let (status, text) = check(&kernels, "1").await;
    assert_eq!(status, CellStatus::Unavailable);
    assert!(
        text.contains("cannot start") && text.contains("capsule (/nonexistent/capsule-wrapper)"),
        "{text}"
    );
}

/// This process's niceness, read from /proc (field 19 of stat).
fn niceness() -> i64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    stat.rsplit(") ")
        .next()
        .and_then(|rest| rest.split(' ').nth(16))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}
