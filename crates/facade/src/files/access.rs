//! What every file tool does first: open the run's root by handle and its write journal, take
//! this process's turn on the files it writes, read text, and commit changes all or nothing.

use std::io::Read;

use agent_tools_support::{
    fs::{RelPath, Root},
    journal::{self, Change, Committed, Expect, Journal},
};

use crate::{
    ToolResult,
    tool::{Before, CallContext},
};

/// Bytes looked at to tell a binary file (one with a NUL byte) from text.
pub(super) const SNIFF_BYTES: usize = 8192;

/// The largest file `edit` and `apply_patch` load whole.
const MAX_EDIT_BYTES: u64 = 64 << 20;

/// How often a commit is planned again from a fresh read when another process changed a file
/// between the read and the commit.
const COMMIT_ATTEMPTS: usize = 4;

/// The root and journal of one call.
pub(crate) struct Access {
    pub(crate) root: Root,
    journal: Journal,
}

impl Access {
    /// Opens the call's root and its journal (which recovers any group a killed host left).
    pub(crate) fn open(ctx: &CallContext, tool: &str) -> Result<Access, ToolResult> {
        let fail = |e: agent_tools_support::Error| ToolResult::error(format!("{tool}: {e}"));
        let root = Root::open(&ctx.root).map_err(fail)?;
        let journal = Journal::for_root(&root).map_err(fail)?;
        Ok(Access { root, journal })
    }

    pub(crate) fn confine(&self, arg: &str, arg_name: &str) -> Result<RelPath, String> {
        self.root.confine(arg, arg_name).map_err(|e| e.to_string())
    }

    /// Reads a text file, refusing binary content, with an error that names `arg`. Whether it
    /// is binary, and whether it is too large to edit, is known before the rest is read.
    pub(crate) fn read_text(&self, rel: &RelPath, arg: &str) -> Result<String, String> {
        let mut file = self.root.open_file(rel, arg).map_err(|e| e.to_string())?;
        let size = file.metadata().map_err(|e| format!("cannot read {rel}: {e}"))?.len();
        let mut bytes = Vec::new();
        (&mut file)
            .take(SNIFF_BYTES as u64)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read {rel}: {e}"))?;
        if bytes.contains(&0) {
            return Err(binary(rel, arg, size));
        }
        if size > MAX_EDIT_BYTES {
            return Err(format!(
                "argument `{arg}`: {rel} is {size} bytes, more than the {} MiB these tools load \
                 whole; read it by ranges with `read`",
                MAX_EDIT_BYTES >> 20
            ));
        }
        file.read_to_end(&mut bytes).map_err(|e| format!("cannot read {rel}: {e}"))?;
        String::from_utf8(bytes)
            .map_err(|e| not_utf8(rel, arg, e.utf8_error().valid_up_to() as u64))
    }

    /// What `rel` holds before a write replaces it: the expectation the commit checks, and the
    /// contents for the wrappers, unless the file is larger than these tools load whole (then
    /// only its hash is taken, in blocks).
    pub(crate) fn read_before(&self, rel: &RelPath, arg: &str) -> Result<(Expect, Before), String> {
        let mut file = match self.root.open_file(rel, arg) {
            Ok(file) => file,
            Err(agent_tools_support::Error::NotFound { .. }) => {
                return Ok((Expect::Absent, Before::Absent));
            }
            Err(e) => return Err(e.to_string()),
        };
        let cannot =
            |e: std::io::Error| format!("cannot read {rel} (what the write replaces): {e}");
        if file.metadata().map_err(cannot)?.len() > MAX_EDIT_BYTES {
            let hash = journal::sha256_of(file).map_err(cannot)?;
            return Ok((Expect::Sha256(hash), Before::Unknown));
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(cannot)?;
        Ok((Expect::holding(Some(&bytes)), Before::Contents(bytes.into())))
    }

    /// Plans the changes from what the files hold now and commits them all or none. When
    /// another process changed a file between `plan`'s read and the commit (the journal checks
    /// each file under its folder's lock), nothing is written and `plan` runs again on a fresh
    /// read, told so by its argument (`true`), so it can say that the file changed when its
    /// change no longer applies. A change is never reported done unless it was written.
    pub(crate) fn commit_fresh<T>(
        &self,
        arg: &str,
        mut plan: impl FnMut(bool) -> Result<(Vec<Change>, T), String>,
    ) -> Result<(Vec<Committed>, T), String> {
        let mut attempt = 0;
        loop {
            let (changes, extra) = plan(attempt > 0)?;
            match self.journal.commit_named(&self.root, &changes, arg) {
                Ok(done) => return Ok((done, extra)),
                Err(agent_tools_support::Error::Changed { .. })
                    if attempt + 1 < COMMIT_ATTEMPTS =>
                {
                    attempt += 1;
                }
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    /// The absolute path of `rel`, for wrappers that look at changed files.
    pub(crate) fn absolute(&self, rel: &RelPath) -> std::path::PathBuf {
        self.root.join(rel)
    }
}

/// Runs a file tool's work on the blocking pool, so a slow disk or a huge file never holds an
/// async worker. A writer names the paths it will change (`writes`, as the model gave them):
/// it waits until no other call of this process writes any of them, and holds them until its
/// work is done, so concurrent writers of one file take turns and every change lands.
pub(crate) async fn run(
    ctx: &CallContext,
    tool: &'static str,
    writes: &[&str],
    work: impl FnOnce(Access) -> ToolResult + Send + 'static,
) -> ToolResult {
    let access = match Access::open(ctx, tool) {
        Ok(a) => a,
        Err(e) => return e,
    };
    // A path that is refused here is refused again, with its message, by the work itself.
    let paths: Vec<RelPath> =
        writes.iter().filter_map(|p| access.root.confine(p, "path").ok()).collect();
    let turn = journal::lock_files(&access.root, &paths).await;
    let job = tokio::task::spawn_blocking(move || {
        let result = work(access);
        drop(turn);
        result
    });
    job.await.unwrap_or_else(|e| ToolResult::error(format!("{tool}: the call failed: {e}")))
}

/// The error for a file with a NUL byte among its first bytes.
pub(super) fn binary(rel: &RelPath, arg: &str, size: u64) -> String {
    format!("argument `{arg}`: {rel} is a binary file ({size} bytes); these tools handle text only")
}

/// The error for bytes that are not UTF-8, `offset` being the first bad byte in the file.
pub(super) fn not_utf8(rel: &RelPath, arg: &str, offset: u64) -> String {
    format!(
        "argument `{arg}`: {rel} is not valid UTF-8 (first bad byte at offset {offset}); \
         these tools handle text only"
    )
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "tests write their fixtures by path")]
mod tests {
    use std::cell::RefCell;

    use agent_tools_support::journal::Expect;

    use super::*;

    /// A tree holding `a.txt` ("start"), a journal folder, and the access of a call on it.
    fn setup() -> (tempfile::TempDir, tempfile::TempDir, Access) {
        let (tree, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(tree.path().join("a.txt"), "start\n").unwrap();
        let root = Root::open(tree.path()).unwrap();
        let journal = Journal::at(state.path(), &root).unwrap();
        (tree, state, Access { root, journal })
    }

    /// A plan that appends `line` to what `a.txt` holds, and calls `meanwhile` after reading,
    /// as another process writing the file between this read and the commit would.
    fn append<'a>(
        access: &'a Access,
        line: &'a str,
        calls: &'a RefCell<Vec<bool>>,
        meanwhile: impl Fn(usize) + 'a,
    ) -> impl FnMut(bool) -> Result<(Vec<Change>, ()), String> + 'a {
        move |changed| {
            calls.borrow_mut().push(changed);
            let rel = access.confine("a.txt", "path")?;
            let text = access.read_text(&rel, "path")?;
            meanwhile(calls.borrow().len());
            let change = Change::write(
                rel,
                format!("{text}{line}").into_bytes(),
                Expect::holding(Some(text.as_bytes())),
            );
            Ok((vec![change], ()))
        }
    }

    #[test]
    fn a_change_made_by_another_writer_after_the_read_is_kept_and_the_plan_redone() {
        let (tree, _state, access) = setup();
        let calls = RefCell::new(Vec::new());
        let other = |call: usize| {
            if call == 1 {
                std::fs::write(tree.path().join("a.txt"), "start\nother\n").unwrap();
            }
        };
        access.commit_fresh("path", append(&access, "mine\n", &calls, other)).unwrap();
        assert_eq!(*calls.borrow(), [false, true], "planned again, told the file changed");
        let text = std::fs::read_to_string(tree.path().join("a.txt")).unwrap();
        assert_eq!(text, "start\nother\nmine\n");
    }

    #[test]
    fn a_file_that_keeps_changing_is_refused_saying_so_and_nothing_of_this_writer_lands() {
        let (tree, _state, access) = setup();
        let calls = RefCell::new(Vec::new());
        let other = |call: usize| {
            std::fs::write(tree.path().join("a.txt"), format!("other {call}\n")).unwrap();
        };
        let err =
            access.commit_fresh("path", append(&access, "mine\n", &calls, other)).unwrap_err();
        assert_eq!(calls.borrow().len(), COMMIT_ATTEMPTS);
        assert_eq!(
            err,
            "a.txt changed since it was read (its contents differ); nothing was written: read it \
             again and retry"
        );
        let text = std::fs::read_to_string(tree.path().join("a.txt")).unwrap();
        assert_eq!(text, format!("other {COMMIT_ATTEMPTS}\n"));
    }
}
