//! A WorkspaceEdit planned in memory (every new file content, version and content checks,
//! nothing outside the root) and written as one crash-atomic group.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use agent_tools_support::{
    Error as SupportError,
    fs::Root,
    journal::{Change, Expect, Journal},
};

use super::{EditOp, apply_text_edits};
use crate::{
    encoding::ColumnUnit,
    paths::{display_relative, is_inside},
};

/// The planned result of a WorkspaceEdit: new content per file (`None` = delete) and edit counts.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct EditPlan {
    pub files: BTreeMap<PathBuf, Option<String>>,
    pub edits_per_file: BTreeMap<PathBuf, usize>,
    pub renamed: Vec<(PathBuf, PathBuf)>,
    pub created: Vec<PathBuf>,
    pub deleted: Vec<PathBuf>,
}

/// Computes every new file content in memory. `server_doc` gives the version and text the
/// server has for a path (if open); a version or content mismatch rejects the whole edit.
pub(crate) fn plan_edit(
    root: &Path,
    ops: &[EditOp],
    encoding: ColumnUnit,
    server_doc: &dyn Fn(&Path) -> Option<(i32, String)>,
) -> Result<EditPlan, String> {
    let mut plan = EditPlan::default();
    let current = |plan: &EditPlan, path: &Path| -> Result<Option<String>, String> {
        if let Some(state) = plan.files.get(path) {
            return Ok(state.clone());
        }
        match agent_tools_support::fs::read_regular(path, "file") {
            Ok(bytes) => String::from_utf8(bytes)
                .map(Some)
                .map_err(|_| format!("{} is not UTF-8 text", display_relative(root, path))),
            Err(_) if std::fs::symlink_metadata(path).is_err() => Ok(None),
            Err(e) => Err(format!("cannot edit {}: {e}", display_relative(root, path))),
        }
    };
    let check_inside = |path: &Path| {
        if is_inside(root, path) {
            Ok(())
        } else {
            Err(format!("the edit touches {}, outside the workspace root", path.display()))
        }
    };
    for op in ops {
        match op {
            EditOp::Text { path, version, edits } => {
                check_inside(path)?;
                let shown = display_relative(root, path);
                let Some(text) = current(&plan, path)? else {
                    return Err(format!("the edit changes {shown}, which does not exist"));
                };
                if !plan.files.contains_key(path)
                    && let Some((open_version, open_text)) = server_doc(path)
                {
                    if let Some(v) = version
                        && *v != open_version
                    {
                        return Err(format!(
                            "{shown} is at version {open_version} but the edit was computed for version {v}"
                        ));
                    }
                    if open_text != text {
                        return Err(format!(
                            "{shown} changed on disk while the rename was computed"
                        ));
                    }
                }
                let new_text = apply_text_edits(&text, edits, encoding)
                    .map_err(|e| format!("{shown}: {e}"))?;
                *plan.edits_per_file.entry(path.clone()).or_default() += edits.len();
                plan.files.insert(path.clone(), Some(new_text));
            }
            EditOp::Create { path, overwrite, ignore_if_exists } => {
                check_inside(path)?;
                if current(&plan, path)?.is_some() {
                    if *overwrite {
                        plan.files.insert(path.clone(), Some(String::new()));
                    } else if !*ignore_if_exists {
                        return Err(format!(
                            "the edit creates {}, which exists",
                            display_relative(root, path)
                        ));
                    }
                    continue;
                }
                plan.files.insert(path.clone(), Some(String::new()));
                plan.created.push(path.clone());
            }
            EditOp::Rename { from, to, overwrite, ignore_if_exists } => {
                check_inside(from)?;
                check_inside(to)?;
                let Some(text) = current(&plan, from)? else {
                    return Err(format!(
                        "the edit renames {}, which does not exist",
                        display_relative(root, from)
                    ));
                };
                if current(&plan, to)?.is_some() && !*overwrite {
                    if *ignore_if_exists {
                        continue;
                    }
                    return Err(format!(
                        "the edit renames onto {}, which exists",
                        display_relative(root, to)
                    ));
                }
                plan.files.insert(from.clone(), None);
                plan.files.insert(to.clone(), Some(text));
                if let Some(n) = plan.edits_per_file.remove(from) {
                    plan.edits_per_file.insert(to.clone(), n);
                }
                plan.renamed.push((from.clone(), to.clone()));
            }
            EditOp::Delete { path, ignore_if_not_exists } => {
                check_inside(path)?;
                if path.is_dir() {
                    return Err(format!(
                        "the edit deletes the folder {}, which this tool does not do",
                        display_relative(root, path)
                    ));
                }
                if current(&plan, path)?.is_none() {
                    if *ignore_if_not_exists {
                        continue;
                    }
                    return Err(format!(
                        "the edit deletes {}, which does not exist",
                        display_relative(root, path)
                    ));
                }
                plan.files.insert(path.clone(), None);
                plan.deleted.push(path.clone());
            }
        }
    }
    // Drop files whose final content equals what is on disk.
    let unchanged: Vec<PathBuf> = plan
        .files
        .iter()
        .filter(|(p, state)| crate::paths::read_text(p) == **state)
        .map(|(p, _)| p.clone())
        .collect();
    for p in unchanged {
        plan.files.remove(&p);
    }
    Ok(plan)
}

/// Writes the plan as one crash-atomic group through support's journal: every path is
/// resolved beneath `root` by handle (a folder swapped for a symlink cannot redirect a write),
/// each file must still hold what it held when read here, and after a crash at any instant the
/// next start on the root rolls the group forward or back. All files change, or none does.
pub(crate) fn write_plan(root: &Path, plan: &EditPlan) -> Result<(), String> {
    let handle = Root::open(root).map_err(|e| e.to_string())?;
    let journal = Journal::for_root(&handle).map_err(|e| e.to_string())?;
    let mut changes = Vec::new();
    for (path, state) in &plan.files {
        let rel = handle
            .relative_of(path)
            .ok_or_else(|| format!("{} is outside the workspace root", path.display()))?;
        let before = match handle.read(&rel, "file") {
            Ok(bytes) => Some(bytes),
            Err(SupportError::NotFound { .. }) => None,
            Err(e) => return Err(e.to_string()),
        };
        let expect = Expect::holding(before.as_deref());
        changes.push(match state {
            Some(text) => Change::write(rel, text.clone().into_bytes(), expect),
            None => Change::delete(rel, expect),
        });
    }
    journal.commit_named(&handle, &changes, "file").map(|_| ()).map_err(|e| e.to_string())
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "tests write their fixtures by path")]
mod tests {
    use super::*;
    use crate::{
        paths::uri_from_path,
        workspace_edit::{parse_workspace_edit, tests::range},
    };
    use serde_json::json;

    #[test]
    fn a_stale_version_rejects_the_whole_edit_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a.py"), "x = 1\n").unwrap();
        std::fs::write(root.join("b.py"), "print(x)\n").unwrap();
        let edit = json!({"documentChanges": [
            {"textDocument": {"uri": uri_from_path(&root.join("a.py")).unwrap().as_str(), "version": 1}, "edits": [{"range": range(0,0,0,1), "newText": "y"}]},
            {"textDocument": {"uri": uri_from_path(&root.join("b.py")).unwrap().as_str(), "version": 3}, "edits": [{"range": range(0,6,0,7), "newText": "y"}]},
        ]});
        let ops = parse_workspace_edit(&edit).unwrap();
        let b = root.join("b.py");
        let err = plan_edit(&root, &ops, ColumnUnit::Utf16, &|p| {
            (p == b).then(|| (4, "print(x)\n".to_string()))
        })
        .unwrap_err();
        assert_eq!(err, "b.py is at version 4 but the edit was computed for version 3");
        let plan = plan_edit(&root, &ops, ColumnUnit::Utf16, &|_| None).unwrap();
        write_plan(&root, &plan).unwrap();
        assert_eq!(std::fs::read_to_string(root.join("a.py")).unwrap(), "y = 1\n");
        assert_eq!(std::fs::read_to_string(root.join("b.py")).unwrap(), "print(y)\n");
    }

    #[test]
    fn resource_operations_create_rename_and_delete_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("old.ts"), "export const a = 1;\n").unwrap();
        std::fs::write(root.join("gone.ts"), "").unwrap();
        let u = |n: &str| uri_from_path(&root.join(n)).unwrap().as_str().to_string();
        let edit = json!({"documentChanges": [
            {"kind": "rename", "oldUri": u("old.ts"), "newUri": u("new.ts")},
            {"textDocument": {"uri": u("new.ts"), "version": null}, "edits": [{"range": range(0,13,0,14), "newText": "b"}]},
            {"kind": "create", "uri": u("made.ts")},
            {"kind": "delete", "uri": u("gone.ts")},
        ]});
        let plan =
            plan_edit(&root, &parse_workspace_edit(&edit).unwrap(), ColumnUnit::Utf16, &|_| None)
                .unwrap();
        write_plan(&root, &plan).unwrap();
        assert!(!root.join("old.ts").exists() && !root.join("gone.ts").exists());
        assert_eq!(std::fs::read_to_string(root.join("new.ts")).unwrap(), "export const b = 1;\n");
        assert_eq!(std::fs::read_to_string(root.join("made.ts")).unwrap(), "");
    }

    #[test]
    fn a_folder_swapped_for_a_symlink_out_of_the_root_cannot_redirect_the_write() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let (root, outside) = (base.join("root"), base.join("outside"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("a.py"), "x = 1\n").unwrap();
        std::fs::write(outside.join("b.py"), "x = 1\n").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("sub")).unwrap();
        let mut plan = EditPlan::default();
        plan.files.insert(root.join("a.py"), Some("y = 1\n".into()));
        plan.files.insert(root.join("sub/b.py"), Some("y = 1\n".into()));
        assert!(write_plan(&root, &plan).is_err());
        assert_eq!(std::fs::read_to_string(outside.join("b.py")).unwrap(), "x = 1\n");
        assert_eq!(
            std::fs::read_to_string(root.join("a.py")).unwrap(),
            "x = 1\n",
            "all or nothing"
        );
    }

    #[test]
    fn an_edit_outside_the_root_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("inner");
        std::fs::create_dir_all(&root).unwrap();
        let ops = vec![EditOp::Create {
            path: root.parent().unwrap().join("x.py"),
            overwrite: false,
            ignore_if_exists: false,
        }];
        assert!(
            plan_edit(&root, &ops, ColumnUnit::Utf16, &|_| None)
                .unwrap_err()
                .contains("outside the workspace root")
        );
    }
}
