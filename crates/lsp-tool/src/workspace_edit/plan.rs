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
    let mut planner = Planner { root, encoding, server_doc, plan: EditPlan::default() };
    for op in ops {
        match op {
            EditOp::Text { path, version, edits } => planner.text(path, *version, edits)?,
            EditOp::Create { path, overwrite, ignore_if_exists } => {
                planner.create(path, *overwrite, *ignore_if_exists)?;
            }
            EditOp::Rename { from, to, overwrite, ignore_if_exists } => {
                planner.rename(from, to, *overwrite, *ignore_if_exists)?;
            }
            EditOp::Delete { path, ignore_if_not_exists } => {
                planner.delete(path, *ignore_if_not_exists)?;
            }
        }
    }
    Ok(planner.without_unchanged_files())
}

/// The plan as the operations so far leave it, and what checks the next one.
struct Planner<'a> {
    root: &'a Path,
    encoding: ColumnUnit,
    server_doc: &'a dyn Fn(&Path) -> Option<(i32, String)>,
    plan: EditPlan,
}

impl Planner<'_> {
    /// The file's content as the plan leaves it so far (`None`: absent).
    fn current(&self, path: &Path) -> Result<Option<String>, String> {
        if let Some(state) = self.plan.files.get(path) {
            return Ok(state.clone());
        }
        match agent_tools_support::fs::read_regular(path, "file") {
            Ok(bytes) => String::from_utf8(bytes)
                .map(Some)
                .map_err(|_| format!("{} is not UTF-8 text", self.shown(path))),
            Err(_) if std::fs::symlink_metadata(path).is_err() => Ok(None),
            Err(e) => Err(format!("cannot edit {}: {e}", self.shown(path))),
        }
    }

    fn shown(&self, path: &Path) -> String {
        display_relative(self.root, path)
    }

    fn check_inside(&self, path: &Path) -> Result<(), String> {
        if is_inside(self.root, path) {
            Ok(())
        } else {
            Err(format!("the edit touches {}, outside the workspace root", path.display()))
        }
    }

    /// Text edits of an existing file, computed for the content the server has (its version,
    /// and the disk's text when the server has the file open).
    fn text(
        &mut self,
        path: &Path,
        version: Option<i32>,
        edits: &[super::parse::TextChange],
    ) -> Result<(), String> {
        self.check_inside(path)?;
        let shown = self.shown(path);
        let Some(text) = self.current(path)? else {
            return Err(format!("the edit changes {shown}, which does not exist"));
        };
        if !self.plan.files.contains_key(path)
            && let Some((open_version, open_text)) = (self.server_doc)(path)
        {
            if let Some(v) = version
                && v != open_version
            {
                return Err(format!(
                    "{shown} is at version {open_version} but the edit was computed for version {v}"
                ));
            }
            if open_text != text {
                return Err(format!("{shown} changed on disk while the rename was computed"));
            }
        }
        let new_text =
            apply_text_edits(&text, edits, self.encoding).map_err(|e| format!("{shown}: {e}"))?;
        *self.plan.edits_per_file.entry(path.to_path_buf()).or_default() += edits.len();
        self.plan.files.insert(path.to_path_buf(), Some(new_text));
        Ok(())
    }

    fn create(
        &mut self,
        path: &Path,
        overwrite: bool,
        ignore_if_exists: bool,
    ) -> Result<(), String> {
        self.check_inside(path)?;
        if self.current(path)?.is_some() {
            if overwrite {
                self.plan.files.insert(path.to_path_buf(), Some(String::new()));
            } else if !ignore_if_exists {
                return Err(format!("the edit creates {}, which exists", self.shown(path)));
            }
            return Ok(());
        }
        self.plan.files.insert(path.to_path_buf(), Some(String::new()));
        self.plan.created.push(path.to_path_buf());
        Ok(())
    }

    fn rename(
        &mut self,
        from: &Path,
        to: &Path,
        overwrite: bool,
        ignore_if_exists: bool,
    ) -> Result<(), String> {
        self.check_inside(from)?;
        self.check_inside(to)?;
        let Some(text) = self.current(from)? else {
            return Err(format!("the edit renames {}, which does not exist", self.shown(from)));
        };
        if self.current(to)?.is_some() && !overwrite {
            if ignore_if_exists {
                return Ok(());
            }
            return Err(format!("the edit renames onto {}, which exists", self.shown(to)));
        }
        self.plan.files.insert(from.to_path_buf(), None);
        self.plan.files.insert(to.to_path_buf(), Some(text));
        if let Some(n) = self.plan.edits_per_file.remove(from) {
            self.plan.edits_per_file.insert(to.to_path_buf(), n);
        }
        self.plan.renamed.push((from.to_path_buf(), to.to_path_buf()));
        Ok(())
    }

    fn delete(&mut self, path: &Path, ignore_if_not_exists: bool) -> Result<(), String> {
        self.check_inside(path)?;
        if path.is_dir() {
            return Err(format!(
                "the edit deletes the folder {}, which this tool does not do",
                self.shown(path)
            ));
        }
        if self.current(path)?.is_none() {
            if ignore_if_not_exists {
                return Ok(());
            }
            return Err(format!("the edit deletes {}, which does not exist", self.shown(path)));
        }
        self.plan.files.insert(path.to_path_buf(), None);
        self.plan.deleted.push(path.to_path_buf());
        Ok(())
    }

    /// The plan without the files whose final content equals what is on disk.
    fn without_unchanged_files(mut self) -> EditPlan {
        let unchanged: Vec<PathBuf> = self
            .plan
            .files
            .iter()
            .filter(|(p, state)| crate::paths::read_text(p) == **state)
            .map(|(p, _)| p.clone())
            .collect();
        for p in unchanged {
            self.plan.files.remove(&p);
        }
        self.plan
    }
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
    fn an_edit_whose_range_lacks_a_line_is_refused_instead_of_landing_on_the_first_line() {
        let edit = json!({"changes": {"file:///p/a.py": [
            {"range": {"start": {"character": 0}, "end": {"line": 0, "character": 1}}, "newText": "y"}
        ]}});
        let err = serde_json::from_value::<lsp_types::WorkspaceEdit>(edit).unwrap_err();
        assert!(err.to_string().contains("missing field `line`"), "{err}");
    }

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
        let ops = parse_workspace_edit(&serde_json::from_value(edit).unwrap()).unwrap();
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
        let plan = plan_edit(
            &root,
            &parse_workspace_edit(&serde_json::from_value(edit.clone()).unwrap()).unwrap(),
            ColumnUnit::Utf16,
            &|_| None,
        )
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
