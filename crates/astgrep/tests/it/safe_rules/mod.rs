//! Rules ported from ast-grep that used to delete code or be refused (issue 25), one file per
//! theme, and the helpers they share.

mod config_keys;
mod matching;
mod transforms;

use crate::support;

use agent_tools_astgrep::{
    EditRequest, EditStore, Lang, ResolveAction, ResolveRequest, RuleSet, SearchOptions,
    SearchRequest, search,
};
use serde_json::Value;

pub(super) fn rule_error(lang: Lang, rule: Value) -> String {
    match RuleSet::compile(lang, &rule) {
        Ok(_) => panic!("{rule} compiled"),
        Err(e) => e.to_string(),
    }
}

/// Applies `config`'s fix to one file through `ast_edit` and `resolve`, and returns the file.
pub(super) fn fixed(name: &str, text: &str, config: Value) -> String {
    let dir = support::project(&[(name, text)]);
    let store = EditStore::new();
    let request = EditRequest { rule: Some(config), path: Some(name.into()), ..Default::default() };
    let proposal =
        store.propose(dir.path(), &request, &SearchOptions::default()).expect("proposal");
    if let Some(edit_id) = proposal.edit_id.clone() {
        store.resolve(&ResolveRequest { edit_id, action: ResolveAction::Accept }).expect("accept");
    }
    std::fs::read_to_string(dir.path().join(name)).expect("read back")
}

/// What `ast_edit` says about `config` on one file, when it refuses it.
pub(super) fn edit_error(name: &str, text: &str, config: Value) -> String {
    let dir = support::project(&[(name, text)]);
    let request = EditRequest { rule: Some(config), path: Some(name.into()), ..Default::default() };
    match EditStore::new().propose(dir.path(), &request, &SearchOptions::default()) {
        Ok(p) => panic!("proposed {:?}", p.edit_id),
        Err(e) => e.to_string(),
    }
}

pub(super) fn matched_texts(name: &str, text: &str, language: &str, rule: Value) -> Vec<String> {
    let dir = support::project(&[(name, text)]);
    let request =
        SearchRequest { rule: Some(rule), language: Some(language.into()), ..Default::default() };
    let result = search(dir.path(), &request, &SearchOptions::default()).expect("search");
    result.matches.iter().map(|m| m.text.clone()).collect()
}
