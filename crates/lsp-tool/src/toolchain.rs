//! Toolchain pins: the environment that keeps toolchain managers (rustup, pyenv, nodenv, asdf,
//! mise, corepack, Volta) from choosing a binary by what the project names, for servers,
//! checkers, the children they start and `--version` probes, where project code may not run.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Environment that keeps toolchain managers from choosing a binary by what the project
/// names. Applied to servers, checkers, the children they start and `--version` probes, where
/// project code may not run:
/// - Go downloads no toolchain a `go.mod` asks for (`GOTOOLCHAIN=local`);
/// - rustup runs the user's default toolchain, not the one (or the `path` of one) a
///   `rust-toolchain.toml` names;
/// - pyenv and nodenv shims run the user's global version, not a `.python-version` or
///   `.node-version` (whose name can climb out of the versions folder into the project);
/// - asdf runs the versions of the user's own `~/.tool-versions`, not the project's;
/// - mise reads no configuration file of the project (`mise.toml`, `.tool-versions`, whose
///   `path:` versions run any folder);
/// - corepack neither downloads the package manager a `packageManager` field names nor writes
///   one into `package.json`;
/// - Volta's shims run what `PATH` holds past Volta's own folder (`VOLTA_BYPASS`), not the
///   versions a `package.json` `"volta"` key pins (or `extends` from any file) nor the project's
///   own copy of a dependency's binary, which a shim runs for a direct dependency; the user's
///   default Node (Volta's `tools/user/platform.json`) comes first on `PATH`, so `node` is still
///   theirs (see [`volta_pins`]).
pub(crate) fn toolchain_pins() -> Vec<(String, String)> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let unset = |name: &str| std::env::var_os(name).is_none();
    let mut pins = vec![("GOTOOLCHAIN".to_string(), "local".to_string())];
    if unset("RUSTUP_TOOLCHAIN")
        && let Some(default) = rustup_default()
    {
        pins.push(("RUSTUP_TOOLCHAIN".into(), default));
    }
    for (manager, variable) in [("pyenv", "PYENV_VERSION"), ("nodenv", "NODENV_VERSION")] {
        if unset(variable) {
            let root_variable = format!("{}_ROOT", manager.to_uppercase());
            let root = std::env::var_os(&root_variable)
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|h| h.join(format!(".{manager}"))));
            let global = root.and_then(|r| first_word(&r.join("version")));
            pins.push((variable.into(), global.unwrap_or_else(|| "system".into())));
        }
    }
    if let Some(home) = &home
        && let Ok(text) = std::fs::read_to_string(home.join(".tool-versions"))
    {
        for line in text.lines().map(str::trim).filter(|l| !l.starts_with('#')) {
            let mut words = line.split_whitespace();
            if let (Some(tool), Some(version)) = (words.next(), words.next()) {
                let variable = format!("ASDF_{}_VERSION", tool.to_uppercase().replace('-', "_"));
                if unset(&variable) {
                    pins.push((variable, version.to_string()));
                }
            }
        }
    }
    // No project can have a file by this name: mise then reads only the user's global config.
    for variable in ["MISE_OVERRIDE_CONFIG_FILENAMES", "MISE_OVERRIDE_TOOL_VERSIONS_FILENAMES"] {
        pins.push((variable.into(), "agent-tools-ignores-project-toolchains".into()));
    }
    for (variable, value) in [
        ("COREPACK_ENABLE_NETWORK", "0"),
        ("COREPACK_ENABLE_AUTO_PIN", "0"),
        ("COREPACK_ENABLE_STRICT", "0"),
    ] {
        pins.push((variable.into(), value.into()));
    }
    pins.extend(volta_pins(volta_home().as_deref(), std::env::var_os("PATH").as_deref()));
    pins
}

/// Volta's folder: `$VOLTA_HOME`, else `~/.volta`.
pub(crate) fn volta_home() -> Option<PathBuf> {
    std::env::var_os("VOLTA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".volta")))
}

/// What keeps Volta from choosing by the project: `VOLTA_BYPASS=1` always (a shim then runs
/// the command `PATH` holds past Volta's `bin` folder), and, when `volta_home` has a default
/// Node for the user, `path` with that Node's folder first, so a `node` (or `npm`) a server
/// starts is the user's default rather than whatever a shim would pick or nothing.
pub(crate) fn volta_pins(
    volta_home: Option<&Path>,
    path: Option<&std::ffi::OsStr>,
) -> Vec<(String, String)> {
    let mut pins = vec![("VOLTA_BYPASS".to_string(), "1".to_string())];
    let default_node = volta_home.and_then(|home| {
        let platform = std::fs::read_to_string(home.join("tools/user/platform.json")).ok()?;
        let platform: Value = serde_json::from_str(&platform).ok()?;
        let version = platform.pointer("/node/runtime")?.as_str()?;
        // A version is a version: nothing that climbs out of Volta's image folder.
        if version.contains('/') || version.starts_with('.') {
            return None;
        }
        let bin = home.join("tools/image/node").join(version).join("bin");
        bin.join("node").is_file().then_some(bin)
    });
    if let Some(bin) = default_node {
        let mut dirs = vec![bin];
        if let Some(path) = path {
            dirs.extend(std::env::split_paths(path));
        }
        if let Ok(joined) = std::env::join_paths(dirs) {
            pins.push(("PATH".into(), joined.to_string_lossy().into_owned()));
        }
    }
    pins
}

/// The real binary behind a Volta shim `program` (a link to `volta-shim`): the one Volta's
/// default install of its package holds (`tools/user/bins/NAME.json` names the package), or
/// `None` when `program` is no Volta shim or has no default install.
pub(crate) fn behind_volta_shim(program: &Path, volta_home: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(program).ok()?;
    if real.file_name().is_none_or(|n| n != "volta-shim") {
        return None;
    }
    let name = program.file_name()?.to_str()?;
    let config =
        std::fs::read_to_string(volta_home.join("tools/user/bins").join(format!("{name}.json")));
    let config: Value = serde_json::from_str(&config.ok()?).ok()?;
    let package = config.get("package")?.as_str()?;
    if package.contains("..") {
        return None;
    }
    let binary = volta_home.join("tools/image/packages").join(package).join("bin").join(name);
    binary.is_file().then_some(binary)
}

/// The first word of a version file (`3.12.4`), if it has one.
fn first_word(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.split_whitespace().next().map(str::to_string)
}

/// The user's default rustup toolchain, read from rustup's settings (nothing is run).
fn rustup_default() -> Option<String> {
    let home = std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".rustup")))?;
    let settings = std::fs::read_to_string(home.join("settings.toml")).ok()?;
    settings.lines().find_map(|line| {
        let value = line.trim().strip_prefix("default_toolchain")?.trim().strip_prefix('=')?;
        let value = value.trim().trim_matches('"');
        (!value.is_empty()).then(|| value.to_string())
    })
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "tests write their fixtures by path")]
mod tests {
    use std::{os::unix::fs::PermissionsExt, path::Path};

    use super::{behind_volta_shim, volta_pins};

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// A Volta folder laid out as Volta lays it: shims linked to `volta-shim`, the user's
    /// default Node and a package installed with it.
    fn volta_home(dir: &Path) {
        write(&dir.join("bin/volta-shim"), "#!/bin/sh\nexit 3\n");
        for shim in ["node", "typescript-language-server"] {
            std::os::unix::fs::symlink(dir.join("bin/volta-shim"), dir.join("bin").join(shim))
                .unwrap();
        }
        write(
            &dir.join("tools/user/platform.json"),
            r#"{"node": {"runtime": "20.11.1", "npm": null}}"#,
        );
        write(&dir.join("tools/image/node/20.11.1/bin/node"), "#!/bin/sh\n");
        write(
            &dir.join("tools/user/bins/typescript-language-server.json"),
            r#"{"name": "typescript-language-server", "package": "typescript-language-server",
                "version": "5.0.0", "platform": {"node": "20.11.1"}, "manager": "Npm"}"#,
        );
        write(
            &dir.join(
                "tools/image/packages/typescript-language-server/bin/typescript-language-server",
            ),
            "#!/usr/bin/env node\n",
        );
    }

    #[test]
    fn volta_shims_are_bypassed_and_the_users_default_node_comes_first() {
        let dir = tempfile::tempdir().unwrap();
        volta_home(dir.path());
        let pins = volta_pins(Some(dir.path()), Some("/usr/local/bin:/usr/bin".as_ref()));
        assert_eq!(pins[0], ("VOLTA_BYPASS".to_string(), "1".to_string()));
        let path = &pins.iter().find(|(k, _)| k == "PATH").expect("PATH").1;
        let node_bin = dir.path().join("tools/image/node/20.11.1/bin");
        assert_eq!(path, &format!("{}:/usr/local/bin:/usr/bin", node_bin.display()));
        // Without Volta, or without a default Node, only the bypass.
        assert_eq!(volta_pins(None, None), [("VOLTA_BYPASS".to_string(), "1".to_string())]);
    }

    #[test]
    fn a_default_node_that_climbs_out_of_voltas_images_is_not_put_on_path() {
        let dir = tempfile::tempdir().unwrap();
        volta_home(dir.path());
        write(
            &dir.path().join("tools/user/platform.json"),
            r#"{"node": {"runtime": "../../../evil"}}"#,
        );
        let pins = volta_pins(Some(dir.path()), None);
        assert!(pins.iter().all(|(k, _)| k != "PATH"), "{pins:?}");
    }

    #[test]
    fn a_server_installed_through_volta_is_started_as_itself_not_through_its_shim() {
        let dir = tempfile::tempdir().unwrap();
        volta_home(dir.path());
        let shim = dir.path().join("bin/typescript-language-server");
        let real = behind_volta_shim(&shim, dir.path()).expect("the package's binary");
        assert!(real.ends_with(
            "tools/image/packages/typescript-language-server/bin/typescript-language-server"
        ));
        // A program that is no shim stays as it is.
        let node = dir.path().join("tools/image/node/20.11.1/bin/node");
        assert_eq!(behind_volta_shim(&node, dir.path()), None);
    }
}
