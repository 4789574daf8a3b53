//! Adapter for `agent-tools-astgrep`: `ast_grep` (read), `ast_edit` (write) and `resolve` (write),
//! with the run's staged edits kept in one `EditStore` per registry (one registry per run).

use std::{
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use agent_tools_astgrep::{
    AstError, AstgrepConfig, EditRequest, EditStore, Lang, ResolveRequest, SearchOptions,
    SearchRequest, render_proposal, render_resolution, render_search, search,
};
use async_trait::async_trait;
use serde_json::Value;

use crate::{CallContext, Config, RegistryBuilder, Tier, Tool, ToolResult, ToolSpec, parse_args};

const FAMILY: &str = "astgrep";

/// What the three tools share: configuration and the run's staged edits.
struct Shared {
    config: AstgrepConfig,
    store: EditStore,
}

impl RegistryBuilder {
    /// Registers `ast_grep`, `ast_edit` and `resolve`; staged edits live as long as the registry.
    pub fn with_astgrep(self, config: AstgrepConfig) -> Self {
        let shared = Arc::new(Shared { config, store: EditStore::new() });
        self.with_tool(FAMILY, Arc::new(AstGrep::new(shared.clone())))
            .with_tool(FAMILY, Arc::new(AstEdit::new(shared.clone())))
            .with_tool(FAMILY, Arc::new(Resolve::new(shared)))
    }
}

/// `agent-tools status` lines for this family.
pub(crate) fn status_details(root: &Path, config: &Config) -> Vec<String> {
    let langs: Vec<String> =
        Lang::built().map(|l| format!("{} (.{})", l.id(), l.extensions().join(", ."))).collect();
    let c = &config.astgrep;
    vec![
        format!("bundled grammars: {}", langs.join(", ")),
        format!(
            "searches {} in parallel ({}), respecting .gitignore; files over {} bytes are skipped",
            root.display(),
            if c.threads == 0 {
                "a thread per CPU".to_string()
            } else {
                format!("{} threads", c.threads)
            },
            c.max_file_bytes
        ),
        "ast_edit stages changes in this run; resolve accepts (all files or none) or discards them"
            .to_string(),
    ]
}

/// Runs a blocking search on the blocking pool, cancelled with the call.
async fn blocking<T: Send + 'static>(
    ctx: &CallContext,
    work: impl FnOnce(Arc<AtomicBool>) -> Result<T, AstError> + Send + 'static,
) -> Result<T, AstError> {
    let flag = Arc::new(AtomicBool::new(false));
    let job = tokio::task::spawn_blocking({
        let flag = flag.clone();
        move || work(flag)
    });
    let cancel = ctx.cancel.clone();
    let watcher = tokio::spawn({
        let flag = flag.clone();
        async move {
            cancel.cancelled().await;
            flag.store(true, Ordering::Relaxed);
        }
    });
    let out = job.await;
    watcher.abort();
    match out {
        Ok(result) => result,
        Err(e) => Err(AstError::Io(format!("the search task failed: {e}"))),
    }
}

fn options(shared: &Shared, cancel: Arc<AtomicBool>) -> SearchOptions {
    SearchOptions { cancel: Some(cancel), ..shared.config.options() }
}

struct AstGrep {
    spec: ToolSpec,
    shared: Arc<Shared>,
}

impl AstGrep {
    fn new(shared: Arc<Shared>) -> Self {
        AstGrep {
            spec: ToolSpec::new::<SearchRequest>(
                "ast_grep",
                "Find code by shape, not text. The pattern is code of the language with metavariables: \
                 `$NAME` matches one node, `$$$NAME` zero or more siblings, `$_` any node without binding; \
                 a metavariable used twice must match the same code. Matches ignore formatting and \
                 comments and never hit strings or comments. The fragment is parsed as a statement, \
                 expression, class member or declaration (first that parses); an unparsable pattern is \
                 an error. Results: file:line:col, the code, the captures.",
                Tier::Read,
            ),
            shared,
        }
    }
}

#[async_trait]
impl Tool for AstGrep {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, ctx: &CallContext, args: Value) -> ToolResult {
        let request: SearchRequest = match parse_args("ast_grep", args) {
            Ok(r) => r,
            Err(e) => return e,
        };
        let shared = self.shared.clone();
        let root = ctx.root.clone();
        let out =
            blocking(ctx, move |cancel| search(&root, &request, &options(&shared, cancel))).await;
        match out {
            Ok(result) => ToolResult::text(render_search(&result))
                .with_structured(serde_json::to_value(&result).unwrap_or(Value::Null)),
            Err(e) => ToolResult::error(format!("ast_grep: {e}")),
        }
    }
}

struct AstEdit {
    spec: ToolSpec,
    shared: Arc<Shared>,
}

impl AstEdit {
    fn new(shared: Arc<Shared>) -> Self {
        AstEdit {
            spec: ToolSpec::new::<EditRequest>(
                "ast_edit",
                "Structural rewrite, staged: the same search as ast_grep, and each match is replaced by \
                 `rewrite` with `$NAME`/`$$$NAME` substituted (multi-line text keeps the match's \
                 indentation; nested matches: outermost wins). Nothing is written: the result is a \
                 unified diff and an edit_id; call resolve with it to accept or discard.",
                Tier::Write,
            ),
            shared,
        }
    }
}

#[async_trait]
impl Tool for AstEdit {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, ctx: &CallContext, args: Value) -> ToolResult {
        let request: EditRequest = match parse_args("ast_edit", args) {
            Ok(r) => r,
            Err(e) => return e,
        };
        let shared = self.shared.clone();
        let root = ctx.root.clone();
        let out = blocking(ctx, move |cancel| {
            shared.store.propose(&root, &request, &options(&shared, cancel))
        })
        .await;
        match out {
            Ok(proposal) => ToolResult::text(render_proposal(&proposal))
                .with_structured(serde_json::to_value(&proposal).unwrap_or(Value::Null)),
            Err(e) => ToolResult::error(format!("ast_edit: {e}")),
        }
    }
}

struct Resolve {
    spec: ToolSpec,
    shared: Arc<Shared>,
}

impl Resolve {
    fn new(shared: Arc<Shared>) -> Self {
        Resolve {
            spec: ToolSpec::new::<ResolveRequest>(
                "resolve",
                "Accept or discard a change staged by ast_edit. `accept` checks every file against the \
                 content it had at staging (by hash): if any changed, nothing is written; otherwise all \
                 files are written together or none. `discard` drops the change.",
                Tier::Write,
            ),
            shared,
        }
    }
}

#[async_trait]
impl Tool for Resolve {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, _ctx: &CallContext, args: Value) -> ToolResult {
        let request: ResolveRequest = match parse_args("resolve", args) {
            Ok(r) => r,
            Err(e) => return e,
        };
        let shared = self.shared.clone();
        let out = tokio::task::spawn_blocking(move || shared.store.resolve(&request)).await;
        match out {
            Ok(Ok(resolution)) => {
                let paths: Vec<PathBuf> = resolution.written_paths.clone();
                let mut result = ToolResult::text(render_resolution(&resolution))
                    .with_structured(serde_json::to_value(&resolution).unwrap_or(Value::Null));
                for path in paths {
                    result = result.with_changed_file(path);
                }
                result
            }
            Ok(Err(e)) => ToolResult::error(format!("resolve: {e}")),
            Err(e) => ToolResult::error(format!("resolve: the task failed: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RunInfo, SurfaceKind};
    use serde_json::json;

    fn registry() -> crate::Registry {
        RegistryBuilder::new().with_astgrep(AstgrepConfig::default()).build()
    }

    #[tokio::test]
    async fn the_three_tools_register_with_their_tiers_and_schemas() {
        let registry = registry();
        let build = registry.surface(SurfaceKind::Build);
        assert_eq!(build.names(), ["ast_edit", "ast_grep", "resolve"]);
        let plan = registry.surface(SurfaceKind::Plan);
        assert_eq!(plan.names(), ["ast_grep"]);
        let specs: Vec<Value> = build
            .specs()
            .iter()
            .map(|s| json!({"name": s.name, "tier": s.tier, "input_schema": s.input_schema}))
            .collect();
        insta::assert_json_snapshot!("astgrep_tool_specs", specs);
    }

    #[tokio::test]
    async fn search_stage_and_accept_through_the_surface() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.py"), "print(1)\n").unwrap();
        let registry = registry();
        let surface = registry.surface(SurfaceKind::Build);
        let run = RunInfo::new(dir.path());
        let ctx = surface.context(&run, None);
        let found = surface
            .call(&ctx, "ast_grep", json!({"pattern": "print($X)", "language": "python"}))
            .await;
        assert!(!found.is_error, "{}", found.text);
        assert!(found.text.contains("a.py:1:1  print(1)"), "{}", found.text);
        let staged = surface
            .call(
                &ctx,
                "ast_edit",
                json!({"pattern": "print($X)", "rewrite": "log($X)", "path": "a.py"}),
            )
            .await;
        assert!(staged.text.starts_with("(proposed) 1 replacement in 1 file"), "{}", staged.text);
        let done =
            surface.call(&ctx, "resolve", json!({"edit_id": "edit_1", "action": "accept"})).await;
        assert!(!done.is_error, "{}", done.text);
        assert_eq!(done.changed_files.len(), 1);
        assert_eq!(std::fs::read_to_string(dir.path().join("a.py")).unwrap(), "log(1)\n");
    }
}
