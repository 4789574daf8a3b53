//! Which tree-sitter nodes are declarations, per language, and how the walk finds their names,
//! spans (doc comments, decorators, attributes, `export` and `template<>` included) and children.

use tree_sitter::Node;

use super::{Symbol, SymbolKind};
use crate::lang::Lang;

/// What the walk does with a node.
enum Visit<'t> {
    /// A declaration: a symbol per name.
    Decl(Decl<'t>),
    /// Not a declaration, but declarations may sit inside (a class body, `export`, `#ifdef`).
    Through,
    /// Neither (statements, expressions, function bodies).
    Skip,
}

struct Decl<'t> {
    kind: SymbolKind,
    /// The names it declares (several for `int a, b;` or Go's `x, y int`), with their nodes.
    names: Vec<(String, Node<'t>)>,
    /// Qualifiers before the name: a Go method's receiver type, a C++ `Foo::` qualifier.
    scope: Vec<String>,
    detail: Option<String>,
    /// Its children are declarations too (a class, not a function).
    container: bool,
}

impl<'t> Decl<'t> {
    fn one(kind: SymbolKind, name: Option<(String, Node<'t>)>) -> Visit<'t> {
        match name {
            Some(name) if !name.0.is_empty() => Visit::Decl(Decl {
                kind,
                names: vec![name],
                scope: Vec::new(),
                detail: None,
                container: false,
            }),
            _ => Visit::Skip,
        }
    }

    fn container(kind: SymbolKind, name: Option<(String, Node<'t>)>) -> Visit<'t> {
        match Decl::one(kind, name) {
            Visit::Decl(d) => Visit::Decl(Decl { container: true, ..d }),
            other => other,
        }
    }

    fn many(kind: SymbolKind, names: Vec<(String, Node<'t>)>) -> Visit<'t> {
        if names.is_empty() {
            return Visit::Skip;
        }
        Visit::Decl(Decl { kind, names, scope: Vec::new(), detail: None, container: false })
    }
}

/// Nodes that may precede a declaration and belong to it when they start their line and touch it.
const LEADING: &[&str] = &[
    "comment",
    "line_comment",
    "block_comment",
    "documentation_comment",
    "attribute_item",
    "attribute_declaration",
    "decorator",
    "annotation",
    "marker_annotation",
];

/// Nodes whose whole text belongs to the one declaration inside them.
const WRAPPERS: &[&str] = &[
    "decorated_definition",
    "export_statement",
    "ambient_declaration",
    "template_declaration",
    "expression_statement",
    "lexical_declaration",
    "variable_declaration",
    "type_declaration",
    "const_declaration",
    "var_declaration",
    "member_declaration",
];

pub(super) struct Walker<'s> {
    pub(super) lang: Lang,
    pub(super) source: &'s str,
}

impl Walker<'_> {
    /// The declarations directly inside `node` (through bodies and wrappers), under `path`.
    pub(super) fn children(&self, node: Node<'_>, path: &[String]) -> Vec<Symbol> {
        let mut out = Vec::new();
        self.visit(node, path, None, &mut out);
        out
    }

    fn visit(
        &self,
        node: Node<'_>,
        path: &[String],
        parent: Option<SymbolKind>,
        out: &mut Vec<Symbol>,
    ) {
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            match self.classify(child, parent) {
                Visit::Decl(decl) => self.push(child, decl, path, out),
                Visit::Through => self.visit(child, path, parent, out),
                Visit::Skip => {}
            }
        }
    }

    fn push(&self, node: Node<'_>, decl: Decl<'_>, path: &[String], out: &mut Vec<Symbol>) {
        let outer = self.span_node(node);
        let start = self.leading_start(outer);
        let mut end = outer.end_byte();
        let bytes = self.source.as_bytes();
        while end > start && matches!(bytes[end - 1], b'\n' | b'\r') {
            end -= 1;
        }
        for (name, name_node) in &decl.names {
            let mut names = path.to_vec();
            names.extend(decl.scope.iter().cloned());
            names.push(name.clone());
            let children = if decl.container {
                let mut inner = Vec::new();
                self.visit(node, &names, Some(decl.kind), &mut inner);
                inner
            } else {
                Vec::new()
            };
            out.push(Symbol {
                kind: decl.kind,
                name: name.clone(),
                name_path: names.join("/"),
                detail: decl.detail.clone(),
                start_line: line_of(self.source, start),
                end_line: line_of(self.source, end.saturating_sub(1).max(start)),
                start_byte: start,
                end_byte: end,
                name_line: name_node.start_position().row,
                name_column: name_node.start_position().column,
                children,
            });
        }
    }

    /// The outermost node that holds only this declaration (`export`, decorators, a
    /// `template<>` header, the statement around an assignment).
    fn span_node<'t>(&self, node: Node<'t>) -> Node<'t> {
        let mut node = node;
        while let Some(parent) = node.parent() {
            if !WRAPPERS.contains(&parent.kind()) || parent.named_child_count() == 0 {
                break;
            }
            // A wrapper of several declarations (`const a = 1, b = 2;`) belongs to none alone.
            let mut cursor = parent.walk();
            let declarations = parent
                .named_children(&mut cursor)
                .filter(|c| !LEADING.contains(&c.kind()) && c.kind() != "template_parameter_list")
                .count();
            if declarations != 1 {
                break;
            }
            node = parent;
        }
        node
    }

    /// Where the doc comments, attributes and decorators right above `node` start.
    fn leading_start(&self, node: Node<'_>) -> usize {
        let mut first = node;
        while let Some(prev) = first.prev_named_sibling() {
            let touches = prev.end_position().row + 1 >= first.start_position().row;
            // A `#!` line or an inner doc comment (`//!`) belongs to the file, not to this.
            let of_file = ["#!", "//!", "/*!"].iter().any(|p| self.text(prev).starts_with(p));
            if !LEADING.contains(&prev.kind()) || !touches || !self.starts_its_line(prev) || of_file
            {
                break;
            }
            first = prev;
        }
        first.start_byte()
    }

    fn starts_its_line(&self, node: Node<'_>) -> bool {
        let start = node.start_byte();
        let line_start = self.source[..start].rfind('\n').map_or(0, |i| i + 1);
        self.source[line_start..start].trim().is_empty()
    }

    fn text(&self, node: Node<'_>) -> &str {
        self.source.get(node.byte_range()).unwrap_or("")
    }

    fn named<'t>(&self, node: Node<'t>) -> Option<(String, Node<'t>)> {
        node.child_by_field_name("name").map(|n| (self.text(n).to_string(), n))
    }

    fn classify<'t>(&self, node: Node<'t>, parent: Option<SymbolKind>) -> Visit<'t> {
        match self.lang {
            Lang::Python => self.python(node, parent),
            Lang::Javascript | Lang::Typescript | Lang::Tsx => self.script(node, parent),
            Lang::Go => self.go(node),
            Lang::Rust => self.rust(node, parent),
            Lang::C | Lang::Cpp => self.c_family(node, parent),
            Lang::Java => self.java(node),
            Lang::Dart => self.dart(node, parent),
            Lang::Bash => match node.kind() {
                "function_definition" => Decl::one(SymbolKind::Function, self.named(node)),
                _ => Visit::Skip,
            },
            Lang::Json => Visit::Skip,
        }
    }

    fn python<'t>(&self, node: Node<'t>, parent: Option<SymbolKind>) -> Visit<'t> {
        let in_class = parent == Some(SymbolKind::Class);
        match node.kind() {
            "class_definition" => Decl::container(SymbolKind::Class, self.named(node)),
            "function_definition" => {
                let decorated = node.parent().filter(|p| p.kind() == "decorated_definition");
                let property = decorated.is_some_and(|d| {
                    let mut cursor = d.walk();
                    d.named_children(&mut cursor).filter(|c| c.kind() == "decorator").any(|c| {
                        let text = self.text(c);
                        text.contains("property")
                            || [".setter", ".getter", ".deleter"].iter().any(|s| text.ends_with(s))
                    })
                });
                let kind = match (in_class, property) {
                    (true, true) => SymbolKind::Property,
                    (true, false) => SymbolKind::Method,
                    _ => SymbolKind::Function,
                };
                Decl::one(kind, self.named(node))
            }
            "assignment" => {
                let Some(left) = node.child_by_field_name("left") else { return Visit::Skip };
                if left.kind() != "identifier" {
                    return Visit::Skip;
                }
                let name = self.text(left).to_string();
                let kind = if in_class {
                    SymbolKind::Field
                } else if name.chars().all(|c| c.is_uppercase() || c == '_' || c.is_numeric()) {
                    SymbolKind::Constant
                } else {
                    SymbolKind::Variable
                };
                Decl::one(kind, Some((name, left)))
            }
            "decorated_definition" | "expression_statement" | "block" => Visit::Through,
            _ => Visit::Skip,
        }
    }

    fn script<'t>(&self, node: Node<'t>, parent: Option<SymbolKind>) -> Visit<'t> {
        use SymbolKind::*;
        match node.kind() {
            "function_declaration" | "generator_function_declaration" | "function_signature" => {
                Decl::one(Function, self.named(node))
            }
            "class_declaration" | "abstract_class_declaration" | "class" => {
                Decl::container(Class, self.named(node))
            }
            "interface_declaration" => Decl::container(Interface, self.named(node)),
            "type_alias_declaration" => Decl::one(TypeAlias, self.named(node)),
            "enum_declaration" => Decl::one(Enum, self.named(node)),
            "internal_module" => Decl::container(Namespace, self.named(node)),
            "module" => {
                let name =
                    self.named(node).map(|(n, node)| (n.trim_matches(['"', '\'']).into(), node));
                Decl::container(Module, name)
            }
            "method_definition" | "method_signature" | "abstract_method_signature" => {
                let name = self.named(node);
                let accessor = {
                    let mut cursor = node.walk();
                    node.children(&mut cursor).any(|c| matches!(c.kind(), "get" | "set"))
                };
                let kind = match name.as_ref().map(|n| n.0.as_str()) {
                    Some("constructor") => Constructor,
                    _ if accessor => Property,
                    _ => Method,
                };
                Decl::one(kind, name)
            }
            "public_field_definition" | "property_signature" | "field_definition" => {
                let name = self.named(node).or_else(|| {
                    node.child_by_field_name("property").map(|n| (self.text(n).to_string(), n))
                });
                Decl::one(Field, name)
            }
            "variable_declarator" => {
                let Some(name) = node.child_by_field_name("name") else { return Visit::Skip };
                if name.kind() != "identifier" {
                    return Visit::Skip;
                }
                let constant =
                    node.parent().and_then(|p| p.child(0)).map(|k| k.kind()) == Some("const");
                let kind = match node.child_by_field_name("value").map(|v| v.kind()) {
                    Some(
                        "arrow_function"
                        | "function_expression"
                        | "function"
                        | "generator_function",
                    ) => Function,
                    Some("class") => Class,
                    _ if parent == Some(Class) => Field,
                    _ if constant => Constant,
                    _ => Variable,
                };
                Decl::one(kind, Some((self.text(name).to_string(), name)))
            }
            "export_statement"
            | "ambient_declaration"
            | "expression_statement"
            | "statement_block"
            | "class_body"
            | "interface_body"
            | "object_type"
            | "lexical_declaration"
            | "variable_declaration" => Visit::Through,
            _ => Visit::Skip,
        }
    }

    fn go<'t>(&self, node: Node<'t>) -> Visit<'t> {
        use SymbolKind::*;
        let names = |node: Node<'t>| -> Vec<(String, Node<'t>)> {
            let mut cursor = node.walk();
            node.children_by_field_name("name", &mut cursor)
                .map(|n| (self.text(n).to_string(), n))
                .collect()
        };
        match node.kind() {
            "function_declaration" => Decl::one(Function, self.named(node)),
            "method_declaration" => {
                let receiver = node
                    .child_by_field_name("receiver")
                    .and_then(|r| first_of_kind(r, &["type_identifier"]));
                match Decl::one(Method, self.named(node)) {
                    Visit::Decl(mut d) => {
                        d.scope.extend(receiver.map(|r| self.text(r).to_string()));
                        Visit::Decl(d)
                    }
                    other => other,
                }
            }
            "type_spec" | "type_alias" => {
                let kind = match node.child_by_field_name("type").map(|t| t.kind()) {
                    Some("struct_type") => Struct,
                    Some("interface_type") => Interface,
                    _ => TypeAlias,
                };
                Decl::container(kind, self.named(node))
            }
            "field_declaration" => Decl::many(Field, names(node)),
            "method_elem" | "method_spec" => Decl::one(Method, self.named(node)),
            "const_spec" => Decl::many(Constant, names(node)),
            "var_spec" => Decl::many(Variable, names(node)),
            "type_declaration"
            | "const_declaration"
            | "var_declaration"
            | "var_spec_list"
            | "struct_type"
            | "interface_type"
            | "field_declaration_list" => Visit::Through,
            _ => Visit::Skip,
        }
    }

    fn rust<'t>(&self, node: Node<'t>, parent: Option<SymbolKind>) -> Visit<'t> {
        use SymbolKind::*;
        let in_impl = matches!(parent, Some(Impl | Trait));
        match node.kind() {
            "function_item" | "function_signature_item" => {
                Decl::one(if in_impl { Method } else { Function }, self.named(node))
            }
            "struct_item" => Decl::container(Struct, self.named(node)),
            "union_item" => Decl::container(Union, self.named(node)),
            "enum_item" => Decl::one(Enum, self.named(node)),
            "trait_item" => Decl::container(Trait, self.named(node)),
            "mod_item" => Decl::container(Module, self.named(node)),
            "macro_definition" => Decl::one(Macro, self.named(node)),
            "const_item" => Decl::one(Constant, self.named(node)),
            "static_item" => Decl::one(Variable, self.named(node)),
            "type_item" | "associated_type" => Decl::one(TypeAlias, self.named(node)),
            "field_declaration" => Decl::one(Field, self.named(node)),
            "impl_item" => {
                let Some(ty) = node.child_by_field_name("type") else { return Visit::Skip };
                let name = type_name(ty).map(|n| (self.text(n).to_string(), n));
                let header_end =
                    node.child_by_field_name("body").map_or(node.end_byte(), |b| b.start_byte());
                let header = squash(&self.source[node.start_byte()..header_end]);
                match Decl::container(Impl, name) {
                    Visit::Decl(d) => Visit::Decl(Decl { detail: Some(header), ..d }),
                    other => other,
                }
            }
            "declaration_list" | "field_declaration_list" | "foreign_mod_item" => Visit::Through,
            _ => Visit::Skip,
        }
    }

    fn c_family<'t>(&self, node: Node<'t>, parent: Option<SymbolKind>) -> Visit<'t> {
        use SymbolKind::*;
        let in_type = matches!(parent, Some(Class | Struct | Union));
        let has_body = node.child_by_field_name("body").is_some();
        match node.kind() {
            "function_definition" | "declaration" | "field_declaration" => {
                let declarator = node.child_by_field_name("declarator");
                let function = declarator.is_some_and(is_function_declarator);
                if !function {
                    return match node.kind() {
                        "field_declaration" => {
                            let mut cursor = node.walk();
                            let names = node
                                .children_by_field_name("declarator", &mut cursor)
                                .filter_map(declarator_name)
                                .map(|n| (self.text(n).to_string(), n))
                                .collect();
                            Decl::many(Field, names)
                        }
                        "declaration" => Visit::Through,
                        _ => Visit::Skip,
                    };
                }
                let Some(name) = declarator.and_then(declarator_name) else { return Visit::Skip };
                let (scope, name) = self.qualified(name);
                let kind =
                    match (node.kind() == "function_definition", in_type || !scope.is_empty()) {
                        (true, true) => Method,
                        (true, false) => Function,
                        (false, true) => Method,
                        (false, false) => Prototype,
                    };
                match Decl::one(kind, Some((self.text(name).to_string(), name))) {
                    Visit::Decl(d) => Visit::Decl(Decl { scope, ..d }),
                    other => other,
                }
            }
            "struct_specifier" | "union_specifier" | "class_specifier" | "enum_specifier" => {
                let kind = match node.kind() {
                    "struct_specifier" => Struct,
                    "union_specifier" => Union,
                    "class_specifier" => Class,
                    _ => Enum,
                };
                match (self.named(node), has_body) {
                    (Some(name), true) if kind == Enum => Decl::one(kind, Some(name)),
                    (Some(name), true) => Decl::container(kind, Some(name)),
                    (None, true) if kind != Enum => Visit::Through,
                    _ => Visit::Skip,
                }
            }
            "type_definition" => {
                let mut cursor = node.walk();
                let names = node
                    .children_by_field_name("declarator", &mut cursor)
                    .filter_map(declarator_name)
                    .map(|n| (self.text(n).to_string(), n))
                    .collect();
                match Decl::many(TypeAlias, names) {
                    Visit::Decl(d) => Visit::Decl(Decl { container: true, ..d }),
                    other => other,
                }
            }
            "alias_declaration" | "concept_definition" => Decl::one(TypeAlias, self.named(node)),
            "preproc_def" | "preproc_function_def" => Decl::one(Macro, self.named(node)),
            "namespace_definition" => match self.named(node) {
                Some(name) => Decl::container(Namespace, Some(name)),
                None => Visit::Through,
            },
            "translation_unit"
            | "preproc_ifdef"
            | "preproc_if"
            | "preproc_else"
            | "preproc_elif"
            | "preproc_elifdef"
            | "linkage_specification"
            | "declaration_list"
            | "field_declaration_list"
            | "template_declaration" => Visit::Through,
            _ => Visit::Skip,
        }
    }

    /// `Foo::Bar::baz` → (`["Foo", "Bar"]`, the node of `baz`); template arguments dropped.
    fn qualified<'t>(&self, node: Node<'t>) -> (Vec<String>, Node<'t>) {
        let mut scope = Vec::new();
        let mut node = node;
        while node.kind() == "qualified_identifier" {
            if let Some(s) = node.child_by_field_name("scope") {
                let base = type_name(s).unwrap_or(s);
                scope.push(self.text(base).to_string());
            }
            match node.child_by_field_name("name") {
                Some(name) => node = name,
                None => break,
            }
        }
        if node.kind() == "template_function" || node.kind() == "template_method" {
            node = node.child_by_field_name("name").unwrap_or(node);
        }
        (scope, node)
    }

    fn java<'t>(&self, node: Node<'t>) -> Visit<'t> {
        use SymbolKind::*;
        match node.kind() {
            "class_declaration" | "record_declaration" => Decl::container(Class, self.named(node)),
            "interface_declaration" | "annotation_type_declaration" => {
                Decl::container(Interface, self.named(node))
            }
            "enum_declaration" => Decl::container(Enum, self.named(node)),
            "method_declaration" | "annotation_type_element_declaration" => {
                Decl::one(Method, self.named(node))
            }
            "constructor_declaration" | "compact_constructor_declaration" => {
                Decl::one(Constructor, self.named(node))
            }
            "field_declaration" | "constant_declaration" => {
                let mut cursor = node.walk();
                let names = node
                    .children_by_field_name("declarator", &mut cursor)
                    .filter_map(|d| d.child_by_field_name("name"))
                    .map(|n| (self.text(n).to_string(), n))
                    .collect();
                Decl::many(Field, names)
            }
            "class_body"
            | "interface_body"
            | "enum_body"
            | "enum_body_declarations"
            | "annotation_type_body" => Visit::Through,
            _ => Visit::Skip,
        }
    }

    fn dart<'t>(&self, node: Node<'t>, parent: Option<SymbolKind>) -> Visit<'t> {
        use SymbolKind::*;
        let in_class = parent == Some(Class);
        // A signature's kind and name: `int get x`, `Counter(this.value)`, `void f()`.
        let signature = |sig: Node<'t>| -> Option<(SymbolKind, (String, Node<'t>))> {
            let inner = if sig.kind() == "method_signature" { sig.named_child(0)? } else { sig };
            let kind = match inner.kind() {
                "getter_signature" | "setter_signature" => Property,
                "constructor_signature"
                | "factory_constructor_signature"
                | "constant_constructor_signature" => Constructor,
                "function_signature" | "operator_signature" if in_class => Method,
                "function_signature" => Function,
                _ => return None,
            };
            let name = self.named(inner)?;
            Some((kind, name))
        };
        match node.kind() {
            "class_declaration" | "mixin_declaration" | "extension_declaration" => {
                Decl::container(Class, self.named(node))
            }
            "enum_declaration" => Decl::one(Enum, self.named(node)),
            "function_declaration" | "method_declaration" => {
                match node.child_by_field_name("signature").and_then(signature) {
                    Some((kind, name)) => Decl::one(kind, Some(name)),
                    None => Visit::Skip,
                }
            }
            "declaration" => {
                let mut cursor = node.walk();
                let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
                if let Some((kind, name)) = children.iter().find_map(|c| signature(*c)) {
                    return Decl::one(kind, Some(name));
                }
                let names = children
                    .iter()
                    .filter(|c| c.kind() == "initialized_identifier_list")
                    .flat_map(|list| {
                        let mut cursor = list.walk();
                        list.named_children(&mut cursor).collect::<Vec<_>>()
                    })
                    .filter_map(|n| self.named(n))
                    .collect();
                Decl::many(if in_class { Field } else { Variable }, names)
            }
            "class_body" | "extension_body" | "member_declaration" => Visit::Through,
            _ => Visit::Skip,
        }
    }
}

/// The 1-based line of byte `at`.
fn line_of(source: &str, at: usize) -> usize {
    source.as_bytes()[..at.min(source.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first descendant of `node` (itself included) of one of `kinds`, depth first.
fn first_of_kind<'t>(node: Node<'t>, kinds: &[&str]) -> Option<Node<'t>> {
    if kinds.contains(&node.kind()) {
        return Some(node);
    }
    let mut cursor = node.walk();
    let children: Vec<Node<'t>> = node.named_children(&mut cursor).collect();
    children.into_iter().find_map(|c| first_of_kind(c, kinds))
}

/// The name of a type as written (`Vec` of `Vec<T>`, `Foo` of `&mut a::Foo`).
fn type_name(node: Node<'_>) -> Option<Node<'_>> {
    match node.kind() {
        "generic_type" | "reference_type" | "pointer_type" | "template_type" => node
            .child_by_field_name("type")
            .or_else(|| node.child_by_field_name("name"))
            .and_then(type_name),
        "scoped_type_identifier" | "qualified_identifier" => {
            node.child_by_field_name("name").and_then(type_name)
        }
        _ => Some(node),
    }
}

/// Whether a C/C++ declarator declares a function (`f(int)`, `*f(void)`).
fn is_function_declarator(node: Node<'_>) -> bool {
    let mut node = node;
    loop {
        if node.kind() == "function_declarator" {
            return true;
        }
        match node.child_by_field_name("declarator").or_else(|| {
            (node.kind() == "parenthesized_declarator").then(|| node.named_child(0)).flatten()
        }) {
            Some(inner) if node.kind() != "init_declarator" => node = inner,
            _ => return false,
        }
    }
}

/// The identifier a C/C++ declarator declares, through pointers, arrays and initializers.
fn declarator_name(node: Node<'_>) -> Option<Node<'_>> {
    let mut node = node;
    loop {
        match node.kind() {
            "function_declarator"
            | "pointer_declarator"
            | "reference_declarator"
            | "init_declarator"
            | "array_declarator"
            | "attributed_declarator" => {
                node = node.child_by_field_name("declarator")?;
            }
            "parenthesized_declarator" => node = node.named_child(0)?,
            "identifier"
            | "field_identifier"
            | "type_identifier"
            | "destructor_name"
            | "operator_name"
            | "qualified_identifier"
            | "primitive_type" => return Some(node),
            _ => return None,
        }
    }
}
