//! Previews of lldb values whose summary leaves their content out (`std::optional`'s
//! "Has Value=true", a container's "size=2", a `std::pair` shown as "type @ 0xADDR"): the first
//! children, one level further where they need it too, so a local reads as
//! `size=2 {[0] = {first = "ada", second = 36}, …}` without a `variables` call per level.

use std::{future::Future, pin::Pin};

use super::Session;
use crate::{
    adapters::AdapterKind,
    dap_types::{Variable, Variables, VariablesArguments},
    response::MAX_VALUE_CHARS,
};

/// Children shown in a preview.
const PREVIEW_CHILDREN: usize = 4;
/// Levels of children a preview goes down.
const PREVIEW_DEPTH: u8 = 2;

impl Session {
    /// `var` with its value completed by a preview of its children, where lldb's summary
    /// leaves them out; other adapters' values already say what they hold.
    pub(super) async fn with_preview(&self, mut var: Variable) -> Variable {
        if self.kind != AdapterKind::Lldb {
            return var;
        }
        if let Some(preview) = self.preview(&var, PREVIEW_DEPTH).await {
            var.value = combine(var.value.trim(), &preview);
        }
        var
    }

    fn preview<'a>(
        &'a self,
        var: &'a Variable,
        depth: u8,
    ) -> Pin<Box<dyn Future<Output = Option<String>> + Send + 'a>> {
        Box::pin(async move {
            let reference = Some(var.variables_reference).filter(|r| *r > 0)?;
            let value = var.value.trim();
            if depth == 0 || !needs_preview(value) {
                return None;
            }
            let args = VariablesArguments {
                variables_reference: reference,
                start: Some(0),
                count: Some(PREVIEW_CHILDREN as u64 + 1),
            };
            let body =
                self.client.request::<Variables>(args, self.config.request_timeout()).await.ok()?;
            let children = body.variables;
            if children.is_empty() {
                return None;
            }
            let mut parts = Vec::new();
            for child in children.iter().take(PREVIEW_CHILDREN) {
                let name = child.name.as_str();
                let shown = child.value.trim();
                let shown = match self.preview(child, depth - 1).await {
                    Some(inner) => combine(shown, &inner),
                    None => shown.to_string(),
                };
                parts.push(if name.is_empty() { shown } else { format!("{name} = {shown}") });
            }
            let known = var.indexed_variables.or(var.named_variables);
            if children.len() > PREVIEW_CHILDREN
                || known.is_some_and(|n| n > PREVIEW_CHILDREN as u64)
            {
                parts.push("…".into());
            }
            let preview = format!("{{{}}}", parts.join(", "));
            Some(crate::session::cut(&preview, MAX_VALUE_CHARS).0)
        })
    }
}

/// Whether lldb's summary leaves the content out.
fn needs_preview(value: &str) -> bool {
    value.is_empty()
        || is_bare_address(value)
        || value.starts_with("Has Value=true")
        || value.starts_with("size=")
}

/// `std::pair<…> @ 0x55555556fed0`: lldb's value of an aggregate without a summary.
fn is_bare_address(value: &str) -> bool {
    value.rsplit_once(" @ 0x").is_some_and(|(_, hex)| hex.chars().all(|c| c.is_ascii_hexdigit()))
}

/// The summary with the preview after it; a bare address is replaced by it.
fn combine(value: &str, preview: &str) -> String {
    if value.is_empty() || is_bare_address(value) {
        preview.to_string()
    } else {
        format!("{value} {preview}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_that_leave_the_content_out_get_a_preview() {
        assert!(needs_preview("Has Value=true"));
        assert!(needs_preview("size=2"));
        assert!(needs_preview("std::pair<const std::basic_string<char>, int> @ 0x55555556fed0"));
        assert!(!needs_preview("\"line one\\nline two\""));
        assert!(!needs_preview("Has Value=false"));
        assert_eq!(combine("size=1", "{[0] = 1}"), "size=1 {[0] = 1}");
        assert_eq!(combine("std::pair<int, int> @ 0xab", "{first = 1}"), "{first = 1}");
    }
}
