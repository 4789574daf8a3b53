//! What a capsule shows of the user's home folder: nothing but what the run needs from it.
//!
//! A deny-list of known secrets cannot know the user's own (shell histories, `~/.pgpass`,
//! tokens of tools nobody listed), so the home is private: every backend hides it whole and
//! shows, read-only at their own paths, the folders the run resolves its programs from (the
//! `PATH` folders under the home and the prefixes their programs live in, symlinks followed),
//! the toolchain homes those programs read (`~/.cargo`, `~/.rustup`, Go's module cache,
//! pyenv, nvm, asdf), the programs the run was configured with (an interpreter and its
//! prefix), and what the user's configuration exposes. The secret locations stay hidden even
//! inside what is shown (`~/.cargo/credentials.toml`).

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

/// Toolchain homes read where they exist: (variable that moves it, default under the home).
const TOOLCHAIN_HOMES: &[(&str, &str)] = &[
    ("CARGO_HOME", ".cargo"),
    ("RUSTUP_HOME", ".rustup"),
    ("GOMODCACHE", "go/pkg/mod"),
    ("GOBIN", "go/bin"),
    ("PYENV_ROOT", ".pyenv"),
    ("NVM_DIR", ".nvm"),
    ("ASDF_DATA_DIR", ".asdf"),
    ("VOLTA_HOME", ".volta"),
];

/// Entries read per `PATH` folder to follow symlinks out of it (a `~/.local/bin` of pipx
/// links); a folder with more is shown as it is.
const MAX_ENTRIES_FOLLOWED: usize = 512;

/// The home folder and what of it a capsule shows, each with why.
#[derive(Debug, Clone, Default)]
pub struct HomeView {
    home: Option<PathBuf>,
    /// Shown path → why (first reason found). Sorted, and none below another.
    shown: BTreeMap<PathBuf, String>,
    /// Symlinks under the home that lead to a shown place: (link, where it points).
    links: Vec<(PathBuf, PathBuf)>,
}

/// What a run resolves, for [`HomeView::resolve`].
#[derive(Debug, Clone)]
pub struct HomeNeeds<'a> {
    /// The project (shown read-write by the capsule when it lies under the home).
    pub project: &'a Path,
    /// Programs the run was configured with (an interpreter, `node`, an adapter).
    pub programs: &'a [PathBuf],
    /// Paths the user's configuration exposes.
    pub expose: &'a [PathBuf],
    /// Paths shown for a worker CLI's login, each with why.
    pub logins: &'a [(PathBuf, String)],
}

impl HomeView {
    /// What of `home` a run with `needs` sees; `None` or an unusable home (`/`, relative): no
    /// private home (nothing to hide).
    pub fn resolve(home: Option<&Path>, needs: &HomeNeeds<'_>) -> HomeView {
        let Some(home) = home.filter(|h| h.is_absolute() && h.parent().is_some()) else {
            return HomeView::default();
        };
        let home = std::fs::canonicalize(home).unwrap_or_else(|_| home.to_path_buf());
        let mut view = HomeView { home: Some(home.clone()), ..HomeView::default() };
        for path in needs.expose {
            view.show(path, "exposed by the configuration");
        }
        for (path, why) in needs.logins {
            view.show(path, why);
        }
        if needs.project.starts_with(&home) {
            view.show(needs.project, "the project");
        }
        for program in needs.programs {
            view.show_program(program, &format!("the run's program {}", program.display()));
        }
        for folder in std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .unwrap_or_default()
        {
            view.show_path_folder(&folder);
        }
        for (variable, default) in TOOLCHAIN_HOMES {
            let path = std::env::var_os(variable).map_or_else(|| home.join(default), PathBuf::from);
            if path.is_dir() {
                view.show(&path, &format!("toolchain home (${variable})"));
            }
        }
        view.tidy();
        view
    }

    /// The home folder hidden, if any.
    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// Shown paths under the home (real paths), outermost only.
    pub fn shown(&self) -> impl Iterator<Item = &Path> {
        self.shown.keys().map(PathBuf::as_path)
    }

    /// Symlinks under the home to shown places: (link, target as it reads).
    pub fn links(&self) -> &[(PathBuf, PathBuf)] {
        &self.links
    }

    /// `~/.cargo (toolchain home ($CARGO_HOME)), …` for `status`.
    pub fn describe(&self) -> String {
        let Some(home) = &self.home else {
            return "no home folder to hide".to_string();
        };
        if self.shown.is_empty() {
            return format!(
                "the home folder {} is private: nothing of it is visible",
                home.display()
            );
        }
        let shown: Vec<String> =
            self.shown.iter().map(|(p, why)| format!("{} ({why})", self.relative(p))).collect();
        format!(
            "the home folder {} is private: only {} visible, read-only",
            home.display(),
            shown.join(", ")
        )
    }

    /// `~/x` for a path under the home.
    pub fn relative(&self, path: &Path) -> String {
        match self.home.as_deref().and_then(|h| path.strip_prefix(h).ok()) {
            Some(rest) if rest.as_os_str().is_empty() => "~".to_string(),
            Some(rest) => format!("~/{}", rest.display()),
            None => path.display().to_string(),
        }
    }

    /// Whether `path` (as a process inside names it) is hidden: under the home, not shown.
    pub fn hides(&self, path: &Path) -> bool {
        let Some(home) = &self.home else { return false };
        path.starts_with(home) && !self.shown.keys().any(|shown| path.starts_with(shown))
    }

    /// A `PATH` folder under the home: its prefix (the parent of `bin` or `shims`), and the
    /// prefixes its symlinks lead to.
    fn show_path_folder(&mut self, folder: &Path) {
        let Some(home) = self.home.clone() else { return };
        let real = std::fs::canonicalize(folder).unwrap_or_else(|_| folder.to_path_buf());
        if !folder.starts_with(&home) && !real.starts_with(&home) {
            return;
        }
        let why = format!("on PATH: {}", self.relative(folder));
        for prefix in prefix_of_folder(folder) {
            self.show(&prefix, &why);
        }
        let Ok(entries) = std::fs::read_dir(&real) else { return };
        for entry in entries.flatten().take(MAX_ENTRIES_FOLLOWED) {
            let path = entry.path();
            if path.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink())
                && let Ok(target) = std::fs::canonicalize(&path)
                && target.starts_with(&home)
            {
                self.show_program(&target, &why);
            }
        }
    }

    /// A program: its prefix (`…/bin/python` → `…`), its real file's prefix, and the virtual
    /// environment it belongs to.
    fn show_program(&mut self, program: &Path, why: &str) {
        let resolved = if program.components().count() > 1 {
            Some(program.to_path_buf())
        } else {
            which(program)
        };
        let Some(program) = resolved else { return };
        let real = std::fs::canonicalize(&program).ok();
        for folder in [Some(program.as_path()), real.as_deref()].into_iter().flatten() {
            for prefix in folder.parent().map(prefix_of_folder).unwrap_or_default() {
                self.show(&prefix, why);
            }
        }
    }

    /// Shows `path` (if under the home and existing), its real path, and the symlink to it.
    fn show(&mut self, path: &Path, why: &str) {
        let Some(home) = self.home.clone() else { return };
        if path.symlink_metadata().is_err() {
            return;
        }
        let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        if path != real && path.starts_with(&home) && path != home {
            self.links.push((path.to_path_buf(), real.clone()));
        }
        if real.starts_with(&home) && real != home {
            self.shown.entry(real).or_insert_with(|| why.to_string());
        }
    }

    /// Keeps the outermost of nested shown paths, and links that are not inside a shown one.
    fn tidy(&mut self) {
        let all: Vec<PathBuf> = self.shown.keys().cloned().collect();
        self.shown.retain(|p, _| !all.iter().any(|o| o != p && p.starts_with(o)));
        let shown: Vec<PathBuf> = self.shown.keys().cloned().collect();
        self.links.retain(|(link, _)| !shown.iter().any(|s| link.starts_with(s)));
        self.links.sort();
        self.links.dedup();
    }
}

/// The prefix a folder of programs belongs to: `~/.pyenv/shims` → `~/.pyenv`, `x/bin` → `x`;
/// but `~/.local/bin` → itself and `~/.local/lib` (`~/.local/share` holds other programs' data).
fn prefix_of_folder(folder: &Path) -> Vec<PathBuf> {
    let parent = folder.parent().unwrap_or(folder);
    match folder.file_name().and_then(|n| n.to_str()) {
        Some("bin") if parent.file_name().is_some_and(|n| n == ".local") => {
            vec![folder.to_path_buf(), parent.join("lib")]
        }
        Some("bin" | "shims" | "sbin") => vec![parent.to_path_buf()],
        _ => vec![folder.to_path_buf()],
    }
}

/// The prefixes of the run's programs that lie in a temp folder (a virtual environment made
/// under `/tmp`), which a capsule's private temp folder would otherwise hide: shown read-only
/// at their paths, outermost only.
pub(super) fn programs_in_temp(programs: &[PathBuf]) -> Vec<PathBuf> {
    let temps: Vec<PathBuf> =
        [PathBuf::from("/tmp"), PathBuf::from("/var/tmp"), std::env::temp_dir()]
            .into_iter()
            .map(|t| std::fs::canonicalize(&t).unwrap_or(t))
            .collect();
    let mut found: Vec<PathBuf> = Vec::new();
    for program in programs {
        let resolved =
            if program.components().count() > 1 { Some(program.clone()) } else { which(program) };
        let Some(program) = resolved else { continue };
        let real = std::fs::canonicalize(&program).ok();
        for file in [Some(program.as_path()), real.as_deref()].into_iter().flatten() {
            for prefix in file.parent().map(prefix_of_folder).unwrap_or_default() {
                let prefix = std::fs::canonicalize(&prefix).unwrap_or(prefix);
                if prefix.is_dir() && temps.iter().any(|t| prefix.starts_with(t) && prefix != *t) {
                    found.push(prefix);
                }
            }
        }
    }
    // A folder of the host's PATH in a temp folder (an activated environment there).
    for folder in std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
    {
        for prefix in prefix_of_folder(&folder) {
            let prefix = std::fs::canonicalize(&prefix).unwrap_or(prefix);
            if prefix.is_dir() && temps.iter().any(|t| prefix.starts_with(t) && prefix != *t) {
                found.push(prefix);
            }
        }
    }
    found.sort();
    found.dedup();
    let outermost: Vec<PathBuf> = found
        .iter()
        .filter(|p| !found.iter().any(|q| q != *p && p.starts_with(q)))
        .cloned()
        .collect();
    outermost
}

/// `name` on the host's PATH.
fn which(name: &Path) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join(name)).find(|p| p.is_file()))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "the test lays out a home of its own")]
mod tests {
    use super::*;

    #[test]
    fn a_virtual_environment_in_a_temp_folder_is_shown_by_its_prefix() {
        let temp = tempfile::tempdir().unwrap();
        let bin = temp.path().join("venv/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("python3"), "").unwrap();
        let shown = programs_in_temp(&[bin.join("python3"), PathBuf::from("/usr/bin/env")]);
        let venv = std::fs::canonicalize(temp.path().join("venv")).unwrap();
        assert!(shown.contains(&venv), "{shown:?}");
        assert!(!shown.iter().any(|p| p.starts_with("/usr")), "{shown:?}");
    }

    #[test]
    fn a_venv_interpreter_shows_its_prefix_and_the_one_it_links_to() {
        let home = tempfile::tempdir().unwrap();
        let base = home.path().join(".pyenv/versions/3.12/bin");
        std::fs::create_dir_all(&base).unwrap();
        std::fs::write(base.join("python3.12"), "").unwrap();
        let venv = home.path().join("envs/tool/bin");
        std::fs::create_dir_all(&venv).unwrap();
        std::os::unix::fs::symlink(base.join("python3.12"), venv.join("python")).unwrap();
        std::fs::write(home.path().join(".pgpass"), "secret").unwrap();
        let project = home.path().join("src/app");
        std::fs::create_dir_all(&project).unwrap();
        let local = home.path().join(".local/bin");
        std::fs::create_dir_all(&local).unwrap();
        std::fs::create_dir_all(home.path().join(".local/share/fish")).unwrap();
        std::fs::write(local.join("tool"), "").unwrap();
        let programs = [venv.join("python"), local.join("tool")];
        let view = HomeView::resolve(
            Some(home.path()),
            &HomeNeeds { project: &project, programs: &programs, expose: &[], logins: &[] },
        );
        let home = std::fs::canonicalize(home.path()).unwrap();
        let shown: Vec<&Path> = view.shown().collect();
        assert!(shown.contains(&home.join(".pyenv/versions/3.12").as_path()), "{shown:?}");
        assert!(shown.contains(&home.join("envs/tool").as_path()), "{shown:?}");
        assert!(shown.contains(&home.join("src/app").as_path()), "{shown:?}");
        assert!(view.hides(&home.join(".pgpass")));
        assert!(!view.hides(&home.join(".local/bin/tool")));
        assert!(view.hides(&home.join(".local/share/fish/fish_history")), "{shown:?}");
        assert!(!view.hides(&home.join("src/app/main.py")));
        assert!(view.describe().contains("~/envs/tool (the run's program"), "{}", view.describe());
    }
}
