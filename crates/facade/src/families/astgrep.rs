//! Adapter for `agent-tools-astgrep`: `ast_grep` (read), `ast_edit` (write) and `resolve` (write),
//! with the run's staged edits kept in one `EditStore` per registry (one registry per run).

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use agent_tools_astgrep::{
    AstError, AstgrepConfig, DEFAULT_CACHE_BYTES, EditRequest, EditStore, Lang, ResolveRequest,
    SearchOptions, SearchPayload, SearchRequest, TreeCache, render_payload, render_proposal,
    render_resolution, search, search_payload, tools,
};
use agent_tools_support::progress::CallScope;
use async_trait::async_trait;

use crate::{
    AttachFamily, Attachment, Before, CallContext, Config, FamilyDescriptor, Tier, ToolResult,
    ToolSpec, TypedTool, fit_prefix,
};

/// What the three tools share: configuration, the run's staged edits and its parse cache.
struct Shared {
    config: AstgrepConfig,
    store: EditStore,
    cache: Arc<TreeCache>,
    /// The files of each staged edit, so that `resolve` can hand diagnostics on write what
    /// they held before (accept writes only files that still hold exactly that).
    staged_files: std::sync::Mutex<std::collections::HashMap<String, Vec<PathBuf>>>,
}

/// The astgrep family: `ast_grep`, and `ast_edit` and `resolve` in the role of file tools (so
/// diagnostics on write check what an accepted change broke); staged edits live as long as the
/// registry.
pub struct AstgrepFamily {
    config: AstgrepConfig,
}

impl AstgrepFamily {
    pub fn new(config: AstgrepConfig) -> Self {
        AstgrepFamily { config }
    }
}

impl AttachFamily for AstgrepFamily {
    fn descriptor(&self) -> &'static FamilyDescriptor {
        &agent_tools_astgrep::family::FAMILY
    }

    fn attach(self: Box<Self>, to: &mut Attachment<'_>) {
        let cache = Arc::new(TreeCache::new(DEFAULT_CACHE_BYTES));
        let shared = Arc::new(Shared {
            config: self.config,
            store: EditStore::new(),
            cache,
            staged_files: Default::default(),
        });
        to.tool(Arc::new(AstGrep::new(shared.clone())))
            .writer_tool(Arc::new(AstEdit::new(shared.clone())))
            .writer_tool(Arc::new(Resolve::new(shared)));
    }
}

/// The table entry: in every run, with the configured limits.
pub(super) const ENTRY: super::BuiltFamily = super::BuiltFamily {
    descriptor: &agent_tools_astgrep::family::FAMILY,
    for_run: |run| Some(Box::new(AstgrepFamily::new(run.config.astgrep.clone()))),
    details: status_details,
};

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

/// Runs a blocking search on the blocking pool with the call's scope: its cancellation stops
/// the walk at the next file (the call is awaited until it has), and progress goes out as files
/// searched.
async fn blocking<T: Send + 'static>(
    ctx: &CallContext,
    work: impl FnOnce(CallScope) -> Result<T, AstError> + Send + 'static,
) -> Result<T, AstError> {
    let scope = ctx.scope();
    match tokio::task::spawn_blocking(move || work(scope)).await {
        Ok(result) => result,
        Err(e) => Err(AstError::Io(format!("the search task failed: {e}"))),
    }
}

fn options(shared: &Shared, scope: CallScope) -> SearchOptions {
    SearchOptions { scope, cache: Some(shared.cache.clone()), ..shared.config.options() }
}

struct AstGrep {
    spec: ToolSpec,
    shared: Arc<Shared>,
}

impl AstGrep {
    fn new(shared: Arc<Shared>) -> Self {
        AstGrep {
            spec: ToolSpec::new::<SearchRequest>(
                tools::SEARCH,
                tools::SEARCH_DESCRIPTION,
                Tier::Read,
            )
            .with_output_schema::<SearchPayload>(),
            shared,
        }
    }
}

#[async_trait]
impl TypedTool for AstGrep {
    type Args = SearchRequest;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, ctx: &CallContext, request: SearchRequest) -> ToolResult {
        let shared = self.shared.clone();
        let root = ctx.root.clone();
        let out =
            blocking(ctx, move |scope| search(&root, &request, &options(&shared, scope))).await;
        match out {
            Ok(result) => {
                // The text and the structured content are one payload, cut to the output cap
                // at a whole match.
                let payload = search_payload(&result);
                let max_chars = ctx.max_output_chars;
                let (_, result) = fit_prefix(payload.matches.len(), max_chars, |n| {
                    rendered(&first_matches(&payload, n, result.total_matches, max_chars))
                });
                result
            }
            Err(e) => ToolResult::error(format!("ast_grep: {e}")),
        }
    }
}

/// The result of one search payload: its text rendering and the payload itself.
fn rendered(payload: &SearchPayload) -> ToolResult {
    let text = render_payload(payload);
    match serde_json::to_value(payload) {
        Ok(value) => ToolResult::text(text).with_structured(value),
        Err(_) => ToolResult::text(text),
    }
}

/// `payload` with only its first `n` matches; when that cuts some, the note on matches not
/// shown says how many were cut by the output cap.
fn first_matches(
    payload: &SearchPayload,
    n: usize,
    total: usize,
    max_chars: usize,
) -> SearchPayload {
    let mut cut = payload.clone();
    if n >= payload.matches.len() {
        return cut;
    }
    cut.matches.truncate(n);
    cut.notes.retain(|note| !note.starts_with("[showing "));
    cut.notes.insert(
        0,
        format!(
            "[showing {n} of {total} matches: the rest is over the {max_chars}-character output \
             cap; {} more not shown: narrow `path` or the pattern to see them]",
            total - n
        ),
    );
    cut
}

struct AstEdit {
    spec: ToolSpec,
    shared: Arc<Shared>,
}

impl AstEdit {
    fn new(shared: Arc<Shared>) -> Self {
        AstEdit {
            spec: ToolSpec::new::<EditRequest>(tools::EDIT, tools::EDIT_DESCRIPTION, Tier::Write),
            shared,
        }
    }
}

#[async_trait]
impl TypedTool for AstEdit {
    type Args = EditRequest;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, ctx: &CallContext, request: EditRequest) -> ToolResult {
        let shared = self.shared.clone();
        let root = ctx.root.clone();
        let out = blocking(ctx, move |scope| {
            shared.store.propose(&root, &request, &options(&shared, scope))
        })
        .await;
        match out {
            // The diff is the payload; structured content would repeat it (D8: absent).
            Ok(proposal) => {
                let mut result = ToolResult::text(render_proposal(&proposal));
                if let Some(id) = &proposal.edit_id {
                    let files = proposal.files.iter().map(|f| ctx.root.join(&f.file)).collect();
                    self.shared
                        .staged_files
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(id.clone(), files);
                    // Diagnostics on write checks the staged change as a preview.
                    for (path, after) in self.shared.store.staged_contents(id).unwrap_or_default() {
                        let before = agent_tools_support::fs::read_regular(&path, "file")
                            .map_or(Before::Unknown, |b| Before::Contents(b.into()));
                        result = result.with_proposed_file(
                            path,
                            before,
                            Some(after.into_bytes().into()),
                        );
                    }
                }
                result
            }
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
                tools::RESOLVE,
                tools::RESOLVE_DESCRIPTION,
                Tier::Write,
            ),
            shared,
        }
    }
}

#[async_trait]
impl TypedTool for Resolve {
    type Args = ResolveRequest;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, _ctx: &CallContext, request: ResolveRequest) -> ToolResult {
        let shared = self.shared.clone();
        let staged = shared
            .staged_files
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(request.edit_id.trim())
            .unwrap_or_default();
        let out = tokio::task::spawn_blocking(move || {
            // What the files hold now is what accept checks they still hold.
            let before: Vec<(PathBuf, Option<Vec<u8>>)> =
                staged.into_iter().map(|p| (p.clone(), std::fs::read(&p).ok())).collect();
            shared.store.resolve(&request).map(|r| (r, before))
        })
        .await;
        match out {
            Ok(Ok((resolution, before))) => {
                let paths: Vec<PathBuf> = resolution.written_paths.clone();
                // The run's own writes: parsed copies of those files are stale now.
                self.shared.cache.invalidate(paths.iter().map(PathBuf::as_path));
                let mut result = ToolResult::text(render_resolution(&resolution));
                for path in paths {
                    let old = before.iter().find(|(p, _)| *p == path).and_then(|(_, b)| b.clone());
                    result = result.with_changed_file_before(
                        path,
                        old.map_or(Before::Unknown, |b| Before::Contents(b.into())),
                    );
                }
                result
            }
            Ok(Err(e)) => ToolResult::error(format!("resolve: {e}")),
            Err(e) => ToolResult::error(format!("resolve: the task failed: {e}")),
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "tests write their fixtures by path")]
mod tests {
    use super::*;
    use crate::{RunInfo, SurfaceKind};
    use serde_json::{Value, json};

    fn registry() -> crate::Registry {
        crate::RegistryBuilder::new()
            .with_family(AstgrepFamily::new(AstgrepConfig::default()))
            .build()
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
            .map(|s| {
                json!({
                    "name": s.name,
                    "tier": s.tier,
                    "description": s.description,
                    "input_schema": s.input_schema,
                    "output_schema": s.output_schema,
                })
            })
            .collect();
        insta::assert_json_snapshot!("astgrep_tool_specs", specs);
    }

    /// chars/4 of name, description and input schema: the build surface's budget is 3,000
    /// tokens for all tools, and these three get at most 550 of it.
    #[test]
    fn the_three_tools_fit_their_share_of_the_tool_list_budget() {
        let registry = registry();
        let build = registry.surface(SurfaceKind::Build);
        let sizes: Vec<(String, usize)> = build
            .specs()
            .iter()
            .map(|s| {
                let chars = s.name.len() + s.description.len() + s.input_schema.to_string().len();
                (s.name.clone(), chars / 4)
            })
            .collect();
        let total: usize = sizes.iter().map(|(_, t)| t).sum();
        assert!(total <= 550, "{total} tokens: {sizes:?}");
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
        // The next search of the run sees the write, not the parsed copy it kept.
        let again = surface
            .call(&ctx, "ast_grep", json!({"pattern": "log($X)", "language": "python"}))
            .await;
        assert!(again.text.contains("a.py:1:1  log(1)"), "{}", again.text);
        let old = surface
            .call(&ctx, "ast_grep", json!({"pattern": "print($X)", "language": "python"}))
            .await;
        assert!(old.text.contains("no matches"), "{}", old.text);
    }
}
