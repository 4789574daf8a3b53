//! What an approval card shows: the tool, its targets and its effect first and in full, then
//! every argument, long ones cut in the middle with their length, so padding can never push the
//! path of a write or the tail of a cell out of sight.

use serde_json::Value;

use super::ApprovalRequest;

/// A string argument longer than this is shown as its head and tail.
const MAX_SHOWN_VALUE: usize = 1200;
/// Characters kept at each end of a cut value.
const KEPT_EACH_END: usize = 500;
/// Argument keys that name what a call acts on.
const TARGET_KEYS: &[&str] = &["path", "file", "program", "module", "script", "cwd"];

impl ApprovalRequest {
    /// One line: the tool, what it acts on and what it does.
    pub fn action(&self) -> String {
        let targets = self.targets();
        let on =
            if targets.is_empty() { String::new() } else { format!(" on {}", targets.join(", ")) };
        format!("`{}` ({}-tier){on}: {}", self.tool, self.tier, self.effect())
    }

    /// Everything the operator judges by: targets in full, where the call came from, and every
    /// argument (targets first), long values cut in the middle with their length shown.
    pub fn details(&self) -> String {
        let origin = match &self.parent_call_id {
            Some(parent) => format!("a nested call from inside call {parent}"),
            None => "a call by the agent".to_string(),
        };
        let mut out = format!("{origin} on the {} surface\n", self.surface);
        let targets = self.targets();
        if !targets.is_empty() {
            out.push_str(&format!("Targets: {}\n", targets.join(", ")));
        }
        out.push_str(&format!("Effect: {}\nArguments:\n", self.effect()));
        let Value::Object(args) = &self.arguments else {
            out.push_str(&format!("  {}\n", shown(&self.arguments)));
            return out;
        };
        let mut keys: Vec<&String> = args.keys().collect();
        keys.sort_by_key(|k| (!TARGET_KEYS.contains(&k.as_str()), k.as_str()));
        for key in keys {
            let value = shown(&args[key]);
            if value.contains('\n') {
                out.push_str(&format!("  {key}:\n"));
                for line in value.lines() {
                    out.push_str(&format!("    {line}\n"));
                }
            } else {
                out.push_str(&format!("  {key}: {value}\n"));
            }
        }
        out
    }

    /// The paths the call acts on, in full: target arguments and the files a patch names.
    fn targets(&self) -> Vec<String> {
        let mut found: Vec<String> = Vec::new();
        let mut add = |s: &str| {
            if !s.is_empty() && !found.iter().any(|f| f == s) {
                found.push(s.to_string());
            }
        };
        for key in TARGET_KEYS {
            if let Some(value) = self.arguments.get(*key).and_then(Value::as_str) {
                add(value);
            }
        }
        if let Some(patch) = self.arguments.get("patch").and_then(Value::as_str) {
            for line in patch.lines() {
                let Some(path) = line.strip_prefix("+++ ").or_else(|| line.strip_prefix("--- "))
                else {
                    continue;
                };
                let path = path.split('\t').next().unwrap_or(path).trim();
                if path != "/dev/null" {
                    add(path
                        .strip_prefix("a/")
                        .or_else(|| path.strip_prefix("b/"))
                        .unwrap_or(path));
                }
            }
        }
        found
    }

    /// The call's effect in one line.
    fn effect(&self) -> String {
        let arg = |key: &str| self.arguments.get(key);
        let text = |key: &str| arg(key).and_then(Value::as_str).unwrap_or("");
        let size = |s: &str| {
            let lines = s.lines().count();
            format!(
                "{} characters ({lines} line{})",
                s.chars().count(),
                if lines == 1 { "" } else { "s" }
            )
        };
        match self.tool.as_str() {
            "write" => {
                format!("creates or replaces {} with {}", text("path"), size(text("content")))
            }
            "edit" => format!(
                "replaces {} of a {}-character text with a {}-character text in {}",
                if arg("replace_all").and_then(Value::as_bool) == Some(true) {
                    "every occurrence"
                } else {
                    "one occurrence"
                },
                text("old_string").chars().count(),
                text("new_string").chars().count(),
                text("path")
            ),
            "apply_patch" => format!("patches {} file(s), all or nothing", self.targets().len()),
            "eval" => format!(
                "runs {} of {} code{}",
                size(text("code")),
                arg("language").and_then(Value::as_str).unwrap_or("python"),
                if arg("reset").and_then(Value::as_bool) == Some(true) {
                    ", after resetting the kernel"
                } else {
                    ""
                }
            ),
            "lsp_rename" => format!(
                "renames `{}` on line {} of {} to `{}` across the project",
                text("symbol"),
                arg("line").map(Value::to_string).unwrap_or_default(),
                text("file"),
                text("new_name")
            ),
            "ast_edit" => "stages a structural rewrite (nothing is written until resolve)".into(),
            "resolve" => format!("{} the staged edit {}", text("action"), text("edit_id")),
            "debug" => format!("debugger operation `{}`", text("operation")),
            _ => {
                let count = self.arguments.as_object().map_or(0, |m| m.len());
                format!("runs `{}` with {count} argument(s)", self.tool)
            }
        }
    }
}

/// A value as the operator reads it: strings raw, other values as compact JSON, long ones cut
/// in the middle.
fn shown(value: &Value) -> String {
    let raw = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let total = raw.chars().count();
    if total <= MAX_SHOWN_VALUE {
        return raw;
    }
    let head: String = raw.chars().take(KEPT_EACH_END).collect();
    let tail: String = raw.chars().skip(total - KEPT_EACH_END).collect();
    format!(
        "{head}\n… [{} characters cut from the middle; {total} in all] …\n{tail}",
        total - 2 * KEPT_EACH_END
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::Tier;

    fn request(tool: &str, tier: Tier, arguments: Value) -> ApprovalRequest {
        ApprovalRequest {
            tool: tool.into(),
            tier,
            surface: "build".into(),
            arguments,
            parent_call_id: None,
        }
    }

    #[test]
    fn a_megabyte_write_shows_its_path_first_and_its_size() {
        let content = "x".repeat(1_000_000);
        let card =
            request("write", Tier::Write, json!({"content": content, "path": "src/main.rs"}));
        assert_eq!(
            card.action(),
            "`write` (write-tier) on src/main.rs: creates or replaces src/main.rs with 1000000 characters (1 line)"
        );
        let details = card.details();
        assert!(details.contains("Targets: src/main.rs"), "{details}");
        assert!(details.find("path: src/main.rs") < details.find("content:"), "{details}");
        assert!(details.contains("[999000 characters cut from the middle; 1000000 in all]"));
        assert!(details.len() < 3000, "the card stays readable: {} bytes", details.len());
    }

    #[test]
    fn a_long_edit_cannot_hide_its_path() {
        let card = request(
            "edit",
            Tier::Write,
            json!({"old_string": "a".repeat(5000), "new_string": "b", "path": "lib/auth.py"}),
        );
        assert!(card.action().contains("on lib/auth.py"), "{}", card.action());
        assert!(card.action().contains("one occurrence of a 5000-character text"));
    }

    #[test]
    fn padding_cannot_hide_the_tail_of_a_cell() {
        let code = format!("x = 1\n{}\nshutil.rmtree('.')", "#".repeat(2100));
        let card = request("eval", Tier::Exec, json!({"code": code, "description": "tidy up"}));
        let details = card.details();
        assert!(details.contains("shutil.rmtree('.')"), "{details}");
        assert!(details.contains("x = 1"), "{details}");
        assert!(card.action().contains("of python code"), "{}", card.action());
    }

    #[test]
    fn a_patch_lists_every_file_it_touches() {
        let patch = "--- a/one.py\n+++ b/one.py\n@@ -1 +1 @@\n-a\n+b\n--- /dev/null\n+++ b/two.py\n@@ -0,0 +1 @@\n+c\n";
        let card = request("apply_patch", Tier::Write, json!({"patch": patch}));
        assert_eq!(
            card.action(),
            "`apply_patch` (write-tier) on one.py, two.py: patches 2 file(s), all or nothing"
        );
    }
}
