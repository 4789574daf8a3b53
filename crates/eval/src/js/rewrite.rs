//! REPL rewrite of a JavaScript cell: top-level `let`, `const` and `class` become `var`, so a
//! later cell may declare the same name again (as in a browser console) and the binding persists.
//!
//! A small lexer, not a parser: it tracks strings, template literals, comments, regular
//! expression literals and bracket depth, and rewrites only declarations at depth 0 that start
//! a statement.

/// The rewritten cell.
pub(crate) fn rewrite(code: &str) -> String {
    let mut lexer = Rewriter {
        code,
        bytes: code.as_bytes(),
        out: String::with_capacity(code.len() + 16),
        i: 0,
        depth: 0,
        template_stack: Vec::new(),
        prev: Prev::Start,
        class_pending: false,
        class_body_depth: None,
        last_copied: 0,
    };
    while lexer.i < lexer.bytes.len() {
        lexer.step();
    }
    lexer.out.push_str(&code[lexer.last_copied..]);
    lexer.out
}

/// The lexer's state as it walks a cell once, copying it to `out` with its rewrites.
struct Rewriter<'a> {
    code: &'a str,
    bytes: &'a [u8],
    out: String,
    i: usize,
    depth: i32,
    /// Template literal nesting: for each open `${`, the depth at which it closes.
    template_stack: Vec<i32>,
    /// The last significant token, to tell regex from division and statement starts.
    prev: Prev,
    /// A rewritten class at depth 0: insert `;` when its body closes.
    class_pending: bool,
    class_body_depth: Option<i32>,
    last_copied: usize,
}

impl Rewriter<'_> {
    /// Takes the next token (or comment, string, literal) at `i`.
    fn step(&mut self) {
        let bytes = self.bytes;
        let i = self.i;
        let c = bytes[i];
        match c {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while self.i < bytes.len() && bytes[self.i] != b'\n' {
                    self.i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                self.i += 2;
                while self.i + 1 < bytes.len()
                    && !(bytes[self.i] == b'*' && bytes[self.i + 1] == b'/')
                {
                    self.i += 1;
                }
                self.i = (self.i + 2).min(bytes.len());
            }
            b'\'' | b'"' => {
                self.i = skip_string(bytes, i, c);
                self.prev = Prev::Value;
            }
            b'`' => {
                self.i = skip_template(bytes, i + 1, &mut self.template_stack, self.depth);
                self.prev = Prev::Value;
            }
            b'/' if self.prev.allows_regex() => {
                self.i = skip_regex(bytes, i);
                self.prev = Prev::Value;
            }
            b'(' | b'[' | b'{' => self.open(c),
            b')' | b']' | b'}' => self.close(c),
            c if c.is_ascii_alphabetic() || c == b'_' || c == b'$' || c >= 0x80 => self.word(),
            b'0'..=b'9' => {
                while self.i < bytes.len()
                    && (bytes[self.i].is_ascii_alphanumeric() || bytes[self.i] == b'.')
                {
                    self.i += 1;
                }
                self.prev = Prev::Value;
            }
            b'\n' => {
                self.i += 1;
                if self.depth == 0 && matches!(self.prev, Prev::Value | Prev::Punct(b')' | b']')) {
                    // Automatic semicolon insertion: a new line may start a new statement.
                    self.prev = Prev::Newline;
                }
            }
            c if c.is_ascii_whitespace() => self.i += 1,
            _ => {
                // Operators and other punctuation.
                if (c == b'+' || c == b'-') && bytes.get(i + 1) == Some(&c) {
                    self.i += 2;
                    self.prev = Prev::Value;
                    return;
                }
                self.i += 1;
                self.prev = Prev::Punct(c);
            }
        }
    }

    /// An opening bracket; a rewritten class's body begins at its `{`.
    fn open(&mut self, c: u8) {
        if c == b'{' && self.class_pending && self.depth == 0 {
            self.class_pending = false;
            self.class_body_depth = Some(0);
        }
        self.depth += 1;
        self.i += 1;
        self.prev = Prev::Punct(c);
    }

    /// A closing bracket: the end of a template's `${`, or of a rewritten class's body (which
    /// gets its `;`).
    fn close(&mut self, c: u8) {
        if c == b'}' && self.template_stack.last() == Some(&self.depth) {
            self.template_stack.pop();
            self.depth -= 1;
            self.i = skip_template(self.bytes, self.i + 1, &mut self.template_stack, self.depth);
            self.prev = Prev::Value;
            return;
        }
        self.depth -= 1;
        self.i += 1;
        self.prev = if c == b'}' { Prev::Punct(b'}') } else { Prev::Value };
        if c == b'}' && self.class_body_depth == Some(self.depth) {
            self.class_body_depth = None;
            self.out.push_str(&self.code[self.last_copied..self.i]);
            self.out.push(';');
            self.last_copied = self.i;
        }
    }

    /// An identifier or keyword: a top-level `let`, `const` or `class` is rewritten.
    fn word(&mut self) {
        let (code, bytes) = (self.code, self.bytes);
        let start = self.i;
        self.i = identifier_end(bytes, start);
        let i = self.i;
        let word = &code[start..i];
        let at_statement = self.depth == 0 && self.prev.starts_statement() && !self.class_pending;
        if at_statement && (word == "let" || word == "const") && next_starts_binding(bytes, i) {
            self.out.push_str(&code[self.last_copied..start]);
            self.out.push_str("var");
            self.last_copied = i;
            self.prev = Prev::Keyword;
            return;
        }
        if at_statement
            && word == "class"
            && self.class_body_depth.is_none()
            && let Some((name_start, name_end)) = class_name(bytes, i)
        {
            let name = &code[name_start..name_end];
            self.out.push_str(&code[self.last_copied..start]);
            self.out.push_str(&format!("var {name} = class"));
            self.last_copied = i;
            self.class_pending = true;
            self.prev = Prev::Keyword;
            return;
        }
        self.prev = if is_keyword_before_expression(word) { Prev::Keyword } else { Prev::Value };
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Prev {
    Start,
    Value,
    Keyword,
    Newline,
    Punct(u8),
}

impl Prev {
    fn allows_regex(self) -> bool {
        !matches!(self, Prev::Value | Prev::Punct(b')' | b']'))
    }

    fn starts_statement(self) -> bool {
        matches!(self, Prev::Start | Prev::Newline | Prev::Punct(b';' | b'}'))
    }
}

fn is_keyword_before_expression(word: &str) -> bool {
    matches!(
        word,
        "return"
            | "typeof"
            | "instanceof"
            | "in"
            | "of"
            | "new"
            | "delete"
            | "void"
            | "throw"
            | "case"
            | "do"
            | "else"
            | "yield"
            | "await"
    )
}

/// `let`/`const` followed by an identifier, `[` or `{` (not `let.x` or `let(…)`).
fn next_starts_binding(bytes: &[u8], mut i: usize) -> bool {
    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
        i += 1;
    }
    bytes.get(i).is_some_and(|&c| {
        c.is_ascii_alphabetic() || c == b'_' || c == b'$' || c == b'[' || c == b'{' || c >= 0x80
    })
}

/// The class name after `class`, unless it is an anonymous class expression.
fn class_name(bytes: &[u8], mut i: usize) -> Option<(usize, usize)> {
    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
        i += 1;
    }
    let start = i;
    let end = identifier_end(bytes, start);
    let name = std::str::from_utf8(&bytes[start..end]).ok()?;
    (!name.is_empty() && name != "extends").then_some((start, end))
}

/// Where the identifier starting at `i` ends (letters, digits, `_`, `$`, any non-ASCII byte).
fn identifier_end(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len()
        && (bytes[i].is_ascii_alphanumeric()
            || bytes[i] == b'_'
            || bytes[i] == b'$'
            || bytes[i] >= 0x80)
    {
        i += 1;
    }
    i
}

fn skip_string(bytes: &[u8], start: usize, quote: u8) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'\n' => return i,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// Skips template text from `i` up to the closing backtick or a `${`, which opens a nested scope.
fn skip_template(bytes: &[u8], mut i: usize, stack: &mut Vec<i32>, depth: i32) -> usize {
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'`' => return i + 1,
            b'$' if bytes.get(i + 1) == Some(&b'{') => {
                // The `{` raises the depth; its matching `}` resumes the template.
                stack.push(depth + 1);
                return i + 1;
            }
            _ => i += 1,
        }
    }
    bytes.len()
}

fn skip_regex(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    let mut in_class = false;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'[' => {
                in_class = true;
                i += 1;
            }
            b']' => {
                in_class = false;
                i += 1;
            }
            b'/' if !in_class => {
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
                    i += 1;
                }
                return i;
            }
            b'\n' => return i,
            _ => i += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::rewrite;

    #[test]
    fn top_level_declarations_become_var_and_nested_ones_stay() {
        let cases = [
            ("let a = 1; a", "var a = 1; a"),
            ("const {x, y} = o\nlet [p] = q", "var {x, y} = o\nvar [p] = q"),
            ("for (let i = 0; i < 3; i++) {}", "for (let i = 0; i < 3; i++) {}"),
            ("function f() { let a = 1; const b = 2 }", "function f() { let a = 1; const b = 2 }"),
            (
                "class K { m() { return 1 } }\n[1].map(x => x)",
                "var K = class K { m() { return 1 } };\n[1].map(x => x)",
            ),
            ("class A extends B {}", "var A = class A extends B {};"),
            ("'let a = 1'; `${ {let: 1}.let } let b`", "'let a = 1'; `${ {let: 1}.let } let b`"),
            ("x = a / 2; let r = /let c/g", "x = a / 2; var r = /let c/g"),
            ("// let a\n/* const b */ const c = 3", "// let a\n/* const b */ var c = 3"),
            ("if (x) { let a = 1 }", "if (x) { let a = 1 }"),
            ("let\n  z = 1", "var\n  z = 1"),
            (
                "const f = async () => { const r = await tool('read', {}) }",
                "var f = async () => { const r = await tool('read', {}) }",
            ),
            ("x\nlet y = 2", "x\nvar y = 2"),
        ];
        for (input, expected) in cases {
            assert_eq!(rewrite(input), expected, "input: {input}");
        }
    }
}
