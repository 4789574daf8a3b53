//! Cargo features: a language compiled out is refused with the feature to enable; runs in every build.

use agent_tools_astgrep::{Lang, Pattern, SearchOptions, SearchRequest, search};

use crate::support;
use support::project;

/// Searches `path` (or the root) for `pattern` in `language`; returns the error text, if any.
fn check(files: &[(&str, &str)], path: Option<&str>, language: Option<&str>) -> Option<String> {
    let dir = project(files);
    let request = SearchRequest {
        pattern: Some("foo($A)".into()),
        rule: None,
        path: path.map(Into::into),
        language: language.map(Into::into),
        max_results: None,
        context: None,
    };
    search(dir.path(), &request, &SearchOptions::default()).err().map(|e| e.to_string())
}

fn not_built(lang: Lang) -> String {
    format!(
        "language `{lang}` is not in this build: enable the cargo feature `lang-{lang}` of \
         agent-tools-astgrep (languages in this build: {})",
        Lang::built_ids()
    )
}

#[test]
fn every_language_compiles_or_names_the_feature_to_enable() {
    for lang in Lang::ALL {
        assert_eq!(lang.feature(), format!("lang-{lang}"));
        let compiled = Pattern::compile(lang, "foo($A)", None).err().map(|e| e.to_string());
        let searched = check(&[], None, Some(lang.id()));
        if lang.is_built() {
            // JSON has no calls: an error other than "not in this build" still means it is built.
            for err in [compiled, searched].into_iter().flatten() {
                assert!(!err.contains("not in this build"), "{lang}: {err}");
            }
        } else {
            assert_eq!(compiled, Some(not_built(lang)));
            assert_eq!(searched, Some(not_built(lang)));
        }
    }
}

#[test]
fn errors_list_only_the_languages_in_this_build() {
    let err = check(&[], None, Some("cobol")).unwrap();
    let listed = err.split_once("languages in this build: ").map(|(_, ids)| ids.to_string());
    let built: Vec<&str> = Lang::built().map(Lang::id).collect();
    assert_eq!(listed, Some(built.join(", ")), "{err}");
}

#[cfg(feature = "default")]
#[test]
fn the_default_build_has_every_language() {
    assert_eq!(Lang::built().collect::<Vec<_>>(), Lang::ALL);
}

#[cfg(not(feature = "lang-dart"))]
#[test]
fn a_file_of_a_compiled_out_language_names_its_feature() {
    let err = check(&[("lib/a.dart", "void main() { foo(1); }\n")], Some("lib/a.dart"), None);
    assert_eq!(err, Some(not_built(Lang::Dart)));
}
