//! `agent-tools.toml`: defaults, and errors that name the key and the file.

use std::path::Path;

use agent_tools::Config;

fn check(text: &str) -> Result<Config, String> {
    Config::parse(text, Path::new("/p/agent-tools.toml")).map_err(|e| e.to_string())
}

#[test]
fn an_empty_file_gives_the_defaults() {
    let config = check("").unwrap();
    assert_eq!(config.output.max_chars, agent_tools::DEFAULT_MAX_OUTPUT_CHARS);
}

#[test]
fn an_unknown_key_names_the_key_and_the_file() {
    let err = check("[output]\nmax_char = 5000\n").unwrap_err();
    assert!(err.starts_with("config /p/agent-tools.toml: unknown field `max_char`"), "{err}");
    assert!(err.contains("line 2"), "{err}");
}

#[test]
fn a_wrong_type_names_the_file() {
    let err = check("[output]\nmax_chars = \"many\"\n").unwrap_err();
    assert!(
        err.starts_with(
            "config /p/agent-tools.toml: invalid type: string \"many\", expected usize"
        ),
        "{err}"
    );
}

#[test]
fn the_root_file_is_found_first() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("agent-tools.toml"), "[output]\nmax_chars = 5000\n").unwrap();
    let config = Config::load(dir.path()).unwrap();
    assert_eq!(config.output.max_chars, 5000);
    assert_eq!(config.source.as_deref(), Some(dir.path().join("agent-tools.toml").as_path()));
}
