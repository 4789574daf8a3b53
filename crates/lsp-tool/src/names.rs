//! Whether a new name is an identifier of the file's language, checked before a rename is
//! asked of the server (servers apply `1 bad-name` or `class` without complaint).

const PYTHON: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];
const JAVASCRIPT: &[&str] = &[
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "function",
    "if",
    "implements",
    "import",
    "in",
    "instanceof",
    "interface",
    "let",
    "new",
    "null",
    "package",
    "private",
    "protected",
    "public",
    "return",
    "static",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "typeof",
    "var",
    "void",
    "while",
    "with",
    "yield",
];
const C: &[&str] = &[
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while", "_Bool", "bool", "true", "false",
];
const CPP: &[&str] = &[
    "class",
    "namespace",
    "template",
    "typename",
    "this",
    "new",
    "delete",
    "operator",
    "public",
    "private",
    "protected",
    "virtual",
    "friend",
    "using",
    "try",
    "catch",
    "throw",
    "nullptr",
    "constexpr",
    "decltype",
    "explicit",
    "mutable",
    "noexcept",
    "static_cast",
    "dynamic_cast",
    "reinterpret_cast",
    "const_cast",
];
const GO: &[&str] = &[
    "break",
    "case",
    "chan",
    "const",
    "continue",
    "default",
    "defer",
    "else",
    "fallthrough",
    "for",
    "func",
    "go",
    "goto",
    "if",
    "import",
    "interface",
    "map",
    "package",
    "range",
    "return",
    "select",
    "struct",
    "switch",
    "type",
    "var",
];
const RUST: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while",
];

/// `Err` with a message naming `new_name` and what would work, when it cannot be a name in
/// `language_id` (an LSP language id such as `python` or `typescriptreact`).
pub fn check_new_name(language_id: &str, new_name: &str) -> Result<(), String> {
    let (keywords, extra_ident, label): (Vec<&[&str]>, &[char], &str) = match language_id {
        "python" => (vec![PYTHON], &[], "Python"),
        "typescript" | "typescriptreact" | "javascript" | "javascriptreact" => {
            (vec![JAVASCRIPT], &['$'], "TypeScript/JavaScript")
        }
        "c" => (vec![C], &[], "C"),
        "cpp" => (vec![C, CPP], &[], "C++"),
        "go" => (vec![GO], &[], "Go"),
        "rust" => (vec![RUST], &[], "Rust"),
        _ => {
            if new_name.chars().any(char::is_whitespace) {
                return Err(format!("argument `new_name`: `{new_name}` contains whitespace"));
            }
            return Ok(());
        }
    };
    let name = if language_id == "rust" {
        new_name.strip_prefix("r#").unwrap_or(new_name)
    } else {
        new_name
    };
    let mut chars = name.chars();
    let first_ok =
        chars.next().is_some_and(|c| c.is_alphabetic() || c == '_' || extra_ident.contains(&c));
    let rest_ok = chars.all(|c| c.is_alphanumeric() || c == '_' || extra_ident.contains(&c));
    if !first_ok || !rest_ok {
        return Err(format!(
            "argument `new_name`: `{new_name}` is not a {label} identifier (a letter or `_` first, then letters, digits or `_`{}); nothing was changed",
            if extra_ident.is_empty() { "" } else { " or `$`" }
        ));
    }
    if name.len() == new_name.len() && keywords.iter().any(|k| k.contains(&name)) {
        return Err(format!(
            "argument `new_name`: `{new_name}` is a reserved word in {label}; pick another name; nothing was changed"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_are_not_identifiers_or_are_keywords_are_refused_per_language() {
        assert!(
            check_new_name("typescript", "1 bad-name")
                .unwrap_err()
                .contains("not a TypeScript/JavaScript identifier")
        );
        assert!(check_new_name("typescript", "class").unwrap_err().contains("reserved word"));
        assert!(check_new_name("typescript", "$ok_1").is_ok());
        assert!(check_new_name("python", "$no").is_err());
        assert!(check_new_name("python", "lambda").is_err());
        assert!(check_new_name("python", "größe").is_ok());
        assert!(check_new_name("cpp", "template").is_err());
        assert!(check_new_name("c", "template").is_ok());
        assert!(check_new_name("go", "func").is_err());
        assert!(check_new_name("rust", "r#type").is_ok());
        assert!(check_new_name("rust", "type").is_err());
        assert!(check_new_name("dart", "two words").is_err());
    }
}
