//! `kind` as ast-grep's CSS-like selector: `call_expression > identifier`, `a b`, `a + b`,
//! `a ~ b`, lists `a, b`, and the pseudo-classes `:has()`, `:not()`, `:is()`, `:nth-child()`,
//! `:nth-last-child()` (with `of`), compiled to the rules they stand for.
//!
//! `a > b` is `{kind: b, inside: {kind: a}}`, `a b` the same with `stopBy: end`, `a + b`
//! `{kind: b, follows: {kind: a}}`, `a ~ b` with `stopBy: end`; `:has(x)` looks at every
//! descendant and `:has(> x)` at children only.

use super::{NthChild, Relation, Rule, StopBy};
use crate::error::AstError;

/// One token of a selector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token<'a> {
    Ident(&'a str),
    /// `>`, `+`, `~`, or ` ` (descendant).
    Combinator(char),
    Dot,
    Colon,
    Open,
    Close,
    Comma,
}

/// What went wrong: a kind the callback refused (already worded, with its key), or the
/// selector's syntax (worded here).
enum Failure {
    Kind(AstError),
    Syntax(String),
}

impl From<AstError> for Failure {
    fn from(e: AstError) -> Failure {
        Failure::Kind(e)
    }
}

struct Input<'a, 'k> {
    rest: &'a str,
    ahead: Option<Token<'a>>,
    /// A node kind's name to its rule (or why it is none).
    kind: &'k mut dyn FnMut(&str) -> Result<Rule, AstError>,
}

/// True when `text` is more than one node kind name: it needs the selector parser.
pub(super) fn is_selector(text: &str) -> bool {
    text.trim().contains(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
}

/// Compiles selector `text` given at key `path`; `kind` turns one kind name into its rule (and
/// reports an unknown one).
pub(super) fn parse(
    path: &str,
    text: &str,
    kind: &mut dyn FnMut(&str) -> Result<Rule, AstError>,
) -> Result<Rule, AstError> {
    let mut input = Input { rest: text.trim(), ahead: None, kind };
    let parsed = input.list().and_then(|rule| {
        if input.is_empty() {
            Ok(rule)
        } else {
            Err(Failure::Syntax(format!("unexpected `{}`", input.rest_text())))
        }
    });
    parsed.map_err(|f| match f {
        Failure::Kind(e) => e,
        Failure::Syntax(why) => AstError::Rule(format!(
            "`{path}`: `{text}` is not a valid selector: {why}. A selector is node kinds joined \
             by `>` (child), a space (descendant), `+` (next sibling), `~` (a later sibling) or \
             `,` (either), with `:has()`, `:not()`, `:is()`, `:nth-child()`, `:nth-last-child()`"
        )),
    })
}

fn bad(why: impl Into<String>) -> Failure {
    Failure::Syntax(why.into())
}

/// `rules` as one rule: the rule itself when there is one.
fn all(mut rules: Vec<Rule>) -> Rule {
    if rules.len() == 1 { rules.remove(0) } else { Rule::All(rules) }
}

fn relation(rule: Rule, stop_by: StopBy) -> Box<Relation> {
    Box::new(Relation { rule, stop_by, field: None })
}

impl<'a> Input<'a, '_> {
    fn is_empty(&self) -> bool {
        self.rest.is_empty() && self.ahead.is_none()
    }

    fn rest_text(&self) -> String {
        match self.ahead {
            Some(Token::Ident(i)) => format!("{i}{}", self.rest),
            Some(_) | None => self.rest.to_string(),
        }
    }

    fn lex(&mut self) -> Result<Option<Token<'a>>, Failure> {
        let Some(c) = self.rest.chars().next() else { return Ok(None) };
        let (token, len, trim) = match c {
            c if c.is_whitespace() => {
                let len = self.rest.find(|c: char| !c.is_whitespace()).unwrap_or(self.rest.len());
                let next = self.rest[len..].chars().next();
                if next.is_none_or(|n| matches!(n, '+' | '~' | '>' | ')' | ',')) {
                    self.rest = self.rest.trim_start();
                    return self.lex();
                }
                (Token::Combinator(' '), len, true)
            }
            '+' | '~' | '>' => (Token::Combinator(c), 1, true),
            '.' => (Token::Dot, 1, false),
            ':' => (Token::Colon, 1, false),
            '(' => (Token::Open, 1, true),
            ')' => (Token::Close, 1, false),
            ',' => (Token::Comma, 1, true),
            c if c.is_ascii_alphabetic() || c == '_' || c == '-' => {
                let len = self
                    .rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                    .unwrap_or(self.rest.len());
                (Token::Ident(&self.rest[..len]), len, false)
            }
            other => return Err(bad(format!("`{other}` cannot appear in a selector"))),
        };
        self.rest = &self.rest[len..];
        if trim {
            self.rest = self.rest.trim_start();
        }
        Ok(Some(token))
    }

    fn peek(&mut self) -> Result<Option<Token<'a>>, Failure> {
        if self.ahead.is_none() {
            self.ahead = self.lex()?;
        }
        Ok(self.ahead)
    }

    fn next(&mut self) -> Result<Option<Token<'a>>, Failure> {
        match self.ahead.take() {
            Some(t) => Ok(Some(t)),
            None => self.lex(),
        }
    }

    /// `complex, complex, …`: any of them.
    fn list(&mut self) -> Result<Rule, Failure> {
        let mut rules = vec![self.complex()?];
        while self.peek()? == Some(Token::Comma) {
            self.next()?;
            rules.push(self.complex()?);
        }
        Ok(if rules.len() == 1 { rules.remove(0) } else { Rule::Any(rules) })
    }

    /// `compound (combinator compound)*`: each step constrains the node matched last.
    fn complex(&mut self) -> Result<Rule, Failure> {
        let mut rule = self.compound()?;
        while let Some(Token::Combinator(c)) = self.peek()? {
            self.next()?;
            let next = self.compound()?;
            let relational = match c {
                '>' => Rule::Inside(relation(rule, StopBy::Neighbor)),
                ' ' => Rule::Inside(relation(rule, StopBy::End)),
                '+' => Rule::Follows(relation(rule, StopBy::Neighbor)),
                _ => Rule::Follows(relation(rule, StopBy::End)),
            };
            rule = Rule::All(vec![next, relational]);
        }
        Ok(rule)
    }

    /// `kind? (:pseudo(…))*`, at least one of them.
    fn compound(&mut self) -> Result<Rule, Failure> {
        let mut rules = Vec::new();
        if let Some(Token::Ident(name)) = self.peek()? {
            self.next()?;
            rules.push((self.kind)(name)?);
        }
        loop {
            match self.peek()? {
                Some(Token::Dot) => {
                    return Err(bad("class selectors (`.name`) are not supported, as in ast-grep"));
                }
                Some(Token::Colon) => {
                    self.next()?;
                    rules.push(self.pseudo()?);
                }
                _ => break,
            }
        }
        if rules.is_empty() {
            return Err(bad(match self.peek()? {
                Some(_) => format!("a node kind is missing before `{}`", self.rest_text()),
                None => "a node kind is missing at the end".to_string(),
            }));
        }
        Ok(all(rules))
    }

    fn pseudo(&mut self) -> Result<Rule, Failure> {
        let Some(Token::Ident(name)) = self.next()? else {
            return Err(bad("`:` must be followed by has, not, is, nth-child or nth-last-child"));
        };
        if self.next()? != Some(Token::Open) {
            return Err(bad(format!("`:{name}` must be followed by `(`")));
        }
        let rule = match name {
            "has" => {
                let child = self.peek()? == Some(Token::Combinator('>'));
                if child {
                    self.next()?;
                }
                let inner = self.complex()?;
                Rule::Has(relation(inner, if child { StopBy::Neighbor } else { StopBy::End }))
            }
            "not" => Rule::Not(Box::new(self.complex()?)),
            "is" => self.list()?,
            "nth-child" | "nth-last-child" => self.nth(name == "nth-last-child")?,
            other => {
                return Err(bad(format!(
                    "unknown pseudo-class `:{other}` (known: has, not, is, nth-child, nth-last-child)"
                )));
            }
        };
        if self.next()? != Some(Token::Close) {
            return Err(bad(format!("`:{name}(` is not closed by `)`")));
        }
        Ok(rule)
    }

    /// `An+B` and optionally `of complex`.
    fn nth(&mut self, reverse: bool) -> Result<Rule, Failure> {
        debug_assert!(self.ahead.is_none());
        let len = self
            .rest
            .find(|c: char| !matches!(c, '0'..='9' | 'n' | 'N' | '+' | '-' | ' '))
            .unwrap_or(self.rest.len());
        let formula = self.rest[..len].trim();
        self.rest = self.rest[len..].trim_start();
        let (a, b) = NthChild::parse_formula(formula)
            .ok_or_else(|| bad(format!("`{formula}` is not a position such as `2n+1`")))?;
        let of = if self.peek()? == Some(Token::Ident("of")) {
            self.next()?;
            self.rest = self.rest.trim_start();
            Some(self.complex()?)
        } else {
            None
        };
        Ok(Rule::NthChild(Box::new(NthChild { a, b, reverse, of })))
    }
}
