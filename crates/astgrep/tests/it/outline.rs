//! Outlines of real-shaped files in every bundled grammar, and name paths resolved in them:
//! each declaration's span is exactly its text (doc comments, decorators, attributes included).

use agent_tools_astgrep::{
    Lang,
    outline::{Outline, Unresolved, outline},
};

fn sample(file: &str) -> String {
    let path = format!("{}/tests/it/outline_samples/{file}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).expect("sample file")
}

/// The outline of a sample file, each row with the first and last line of its span.
fn check(file: &str, lang: Lang) -> (String, Outline) {
    let source = sample(file);
    let outline = outline(lang, &source).expect("outline");
    let mut out = String::new();
    for row in outline.flatten() {
        let s = row.symbol;
        let text = &source[s.start_byte..s.end_byte];
        let first = text.lines().next().unwrap_or("");
        let last = text.lines().last().unwrap_or("");
        let name_line = source.lines().nth(s.name_line).unwrap_or("");
        assert!(
            name_line[s.name_column..].trim_start_matches(['"', '\'']).starts_with(&s.name),
            "{}: the name position points at `{}`",
            s.name_path,
            &name_line[s.name_column..]
        );
        out.push_str(&format!(
            "{:indent$}{} {} {}-{}  | {first} … {last}\n",
            "",
            s.kind.as_str(),
            s.name_path,
            s.start_line,
            s.end_line,
            indent = row.depth * 2
        ));
    }
    (out, outline)
}

#[test]
fn python_outline_has_decorators_properties_and_nested_classes_but_no_locals() {
    let (shown, _) = check("sample.py", Lang::Python);
    insta::assert_snapshot!(shown);
}

#[test]
fn typescript_outline_has_overloads_arrow_consts_namespaces_and_members() {
    let (shown, _) = check("sample.ts", Lang::Typescript);
    insta::assert_snapshot!(shown);
}

#[test]
fn go_outline_names_methods_by_their_receiver_type() {
    let (shown, _) = check("sample.go", Lang::Go);
    insta::assert_snapshot!(shown);
}

#[test]
fn rust_outline_has_impl_and_trait_blocks_generics_and_macros() {
    let (shown, _) = check("sample.rs", Lang::Rust);
    insta::assert_snapshot!(shown);
}

#[test]
fn c_outline_has_macros_prototypes_structs_and_typedefs() {
    let (shown, _) = check("sample.c", Lang::C);
    insta::assert_snapshot!(shown);
}

#[test]
fn cpp_outline_has_namespaces_templates_and_out_of_class_definitions() {
    let (shown, _) = check("sample.cpp", Lang::Cpp);
    insta::assert_snapshot!(shown);
}

#[test]
fn java_outline_has_overloads_nested_types_and_fields() {
    let (shown, _) = check("Sample.java", Lang::Java);
    insta::assert_snapshot!(shown);
}

#[test]
fn bash_and_dart_outlines_list_functions_and_classes() {
    let (bash, _) = check("sample.sh", Lang::Bash);
    let (dart, _) = check("sample.dart", Lang::Dart);
    insta::assert_snapshot!(format!("{bash}---\n{dart}"));
}

/// The text a name path resolves to in a sample, or the answer why it does not.
fn resolve(file: &str, lang: Lang, path: &str) -> Result<String, String> {
    let source = sample(file);
    let outline = outline(lang, &source).expect("outline");
    outline
        .resolve(path)
        .map(|s| source[s.start_byte..s.end_byte].to_string())
        .map_err(|e| e.to_string())
}

#[test]
fn a_name_path_resolves_to_exactly_its_declaration() {
    let main = resolve("sample.py", Lang::Python, "BaseCommand/main").unwrap();
    assert!(main.starts_with("@functools.lru_cache(maxsize=None)\n    def main(self"), "{main}");
    assert!(main.ends_with("        return local"), "{main}");
    let parse = resolve("sample.py", Lang::Python, "Options/parse").unwrap();
    assert_eq!(parse, "def parse(self, argv):\n            return argv");
    let start = resolve("sample.go", Lang::Go, "Server/Start").unwrap();
    assert!(start.starts_with("// Start starts the server.\nfunc (s *Server) Start() error {"));
    let area = resolve("sample.ts", Lang::Typescript, "/Geometry/area").unwrap();
    assert!(area.starts_with("export function area("), "{area}");
    let getter = resolve("sample.cpp", Lang::Cpp, "geo/Box/get[2]").unwrap();
    assert_eq!(getter, "template <typename T>\nT geo::Box<T>::get() const { return T(); }");
}

#[test]
fn n_picks_the_nth_of_several_matches_in_file_order() {
    let second = resolve("sample.ts", Lang::Typescript, "/parse[2]").unwrap();
    assert_eq!(second, "export function parse(input: number): number;");
    let setter = resolve("sample.py", Lang::Python, "BaseCommand/title[2]").unwrap();
    assert!(setter.starts_with("@title.setter"), "{setter}");
    let display = resolve("sample.rs", Lang::Rust, "Point/fmt").unwrap();
    assert!(display.starts_with("fn fmt(&self"), "one `fmt` under `Point`: {display}");
}

#[test]
fn an_ambiguous_name_path_lists_each_candidate_with_a_name_path_that_picks_it() {
    let err = resolve("Sample.java", Lang::Java, "find").unwrap_err();
    assert_eq!(
        err,
        "`find` matches 2 declarations: Repository/find[1] (method 14-18), \
         Repository/find[2] (method 20-22); give one of these name paths"
    );
    let err = resolve("sample.ts", Lang::Typescript, "parse").unwrap_err();
    assert!(err.contains(", /parse[1] (function 13-13), /parse[2]"), "{err}");
    assert!(err.contains("Options/parse (method 6-6)"), "{err}");
    assert!(err.contains("Parser/parse (method 34-38)"), "{err}");
}

#[test]
fn a_missing_name_path_lists_the_nearest_names() {
    let err = resolve("sample.py", Lang::Python, "BaseCommand/mian").unwrap_err();
    assert!(err.starts_with("no declaration is named `BaseCommand/mian`; nearest names: BaseCommand/main (method 25-30)"), "{err}");
    let err = resolve("sample.ts", Lang::Typescript, "parse[9]").unwrap_err();
    assert!(err.starts_with("no declaration is named `parse[9]`; nearest names: Options/parse (method 6-6), /parse[1]"), "{err}");
    let err = resolve("sample.py", Lang::Python, "Base/[2]x").unwrap_err();
    assert!(
        err.starts_with("name path `Base/[2]x` has an empty name") || err.contains("`[n]` before"),
        "{err}"
    );
}

#[test]
fn a_file_that_does_not_parse_says_where_when_a_name_is_missing() {
    let source = "def ok():\n    return (1,\n\ndef later():\n    pass\n";
    let outline = outline(Lang::Python, source).unwrap();
    assert_eq!(outline.error_lines, vec![2]);
    let err = outline.resolve("later").unwrap_err();
    assert!(matches!(err, Unresolved::Missing { .. }));
    assert!(
        err.to_string()
            .contains("(the file does not parse at line 2, which may hide declarations)"),
        "{err}"
    );
}

#[test]
fn a_rendered_outline_is_nested_and_capped() {
    let source = sample("sample.rs");
    let outline = outline(Lang::Rust, &source).unwrap();
    let shown = outline.render(4);
    assert_eq!(
        shown,
        "struct Point 4-9\n  field Point/x 7\n  field Point/y 8\ntrait Shape 11-18\n\
         [15 more declarations not shown; ask for one by name path]\n"
    );
    assert!(outline.render(100).contains("impl Point 28-32 (impl fmt::Display for Point<f64>)"));
}
