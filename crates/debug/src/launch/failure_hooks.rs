//! The failing test is the stop, however Python tests are launched: a pytest plugin and a
//! unittest hook, put in the session's temp folder and on the program's `PYTHONPATH`, report
//! a failure to debugpy as an uncaught exception (`debugpy.trigger_exception_handler`, a
//! post-mortem stop at the test's failing line). pytest and unittest catch every failure, so
//! neither `uncaught` (never fires) nor `userUnhandled` (also fires in passing tests, at a
//! `with pytest.raises(...)`) would do.

use std::{collections::BTreeMap, path::Path};

use crate::error::DebugError;

const PLUGIN: &str = "agent_tools_failures";
const PLUGIN_SOURCE: &str = include_str!("python/agent_tools_failures.py");
const SITE_SOURCE: &str = include_str!("python/sitecustomize.py");

/// Writes the hooks into `dir` (the session's own temp folder) and points the program's
/// environment at them: `PYTHONPATH` first, `PYTEST_PLUGINS` loads the plugin. `inherited` is
/// the variable's value the program would otherwise inherit.
pub(crate) fn install(
    dir: &Path,
    env: &mut BTreeMap<String, String>,
    inherited: impl Fn(&str) -> Option<String>,
) -> Result<(), DebugError> {
    let hooks = dir.join("python-hooks");
    let write = |name: &str, text: &str| {
        // A private folder outside the project, removed at teardown.
        #[allow(clippy::disallowed_methods, reason = "the session's own temp folder")]
        std::fs::create_dir_all(&hooks)
            .and_then(|()| std::fs::write(hooks.join(name), text))
            .map_err(|e| {
                DebugError::adapter(format!(
                    "cannot write the test-failure hooks into {}: {e}",
                    hooks.display()
                ))
            })
    };
    write(&format!("{PLUGIN}.py"), PLUGIN_SOURCE)?;
    write("sitecustomize.py", SITE_SOURCE)?;
    let hooks = hooks.display().to_string();
    prepend(env, "PYTHONPATH", &hooks, ":", &inherited);
    prepend(env, "PYTEST_PLUGINS", PLUGIN, ",", &inherited);
    Ok(())
}

fn prepend(
    env: &mut BTreeMap<String, String>,
    key: &str,
    first: &str,
    separator: &str,
    inherited: impl Fn(&str) -> Option<String>,
) {
    let rest = env.get(key).cloned().or_else(|| inherited(key)).filter(|v| !v.is_empty());
    let value = match rest {
        Some(rest) => format!("{first}{separator}{rest}"),
        None => first.to_string(),
    };
    env.insert(key.to_string(), value);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hooks_come_first_and_what_the_program_had_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut env = BTreeMap::from([("PYTHONPATH".to_string(), "src".to_string())]);
        install(dir.path(), &mut env, |k| (k == "PYTEST_PLUGINS").then(|| "xdist".into())).unwrap();
        let hooks = dir.path().join("python-hooks");
        assert_eq!(env["PYTHONPATH"], format!("{}:src", hooks.display()));
        assert_eq!(env["PYTEST_PLUGINS"], "agent_tools_failures,xdist");
        assert!(hooks.join("sitecustomize.py").is_file());
        assert!(hooks.join("agent_tools_failures.py").is_file());
    }
}
