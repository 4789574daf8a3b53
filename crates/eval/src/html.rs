//! HTML for the model: tables become markdown tables, everything else readable text.
//!
//! Not a browser: a tolerant tag scanner that knows which elements break lines, which hold
//! table cells, and which (`script`, `style`) hold nothing a reader should see.

/// `html` as text a model reads well.
pub(crate) fn html_to_text(html: &str) -> String {
    let mut out = String::new();
    let mut table: Option<Table> = None;
    let mut skip: Option<String> = None;
    let mut rest = html;
    while !rest.is_empty() {
        let Some(lt) = rest.find('<') else {
            push_text(&mut out, &mut table, rest, skip.is_some());
            break;
        };
        push_text(&mut out, &mut table, &rest[..lt], skip.is_some());
        let after = &rest[lt + 1..];
        let Some(gt) = after.find('>') else {
            push_text(&mut out, &mut table, &rest[lt..], skip.is_some());
            break;
        };
        let tag = &after[..gt];
        rest = &after[gt + 1..];
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        if let Some(open) = &skip {
            if closing && *open == name {
                skip = None;
            }
            continue;
        }
        match (name.as_str(), closing) {
            ("script" | "style" | "head", false) => skip = Some(name),
            ("table", false) => table = Some(Table::default()),
            ("table", true) => {
                if let Some(t) = table.take() {
                    block(&mut out);
                    out.push_str(&t.markdown());
                    out.push('\n');
                }
            }
            ("tr", false) => {
                if let Some(t) = table.as_mut() {
                    t.rows.push(Vec::new());
                }
            }
            ("td" | "th", false) => {
                if let Some(t) = table.as_mut() {
                    if t.rows.is_empty() {
                        t.rows.push(Vec::new());
                    }
                    if let Some(row) = t.rows.last_mut() {
                        row.push(String::new());
                    }
                }
            }
            ("br", _) => out.push('\n'),
            ("li", false) => {
                block(&mut out);
                out.push_str("- ");
            }
            ("p" | "div" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "ul" | "ol" | "pre", _)
            | ("blockquote" | "section" | "article" | "header" | "footer", _) => block(&mut out),
            _ => {}
        }
    }
    let collapsed: Vec<&str> = out.lines().map(str::trim_end).collect();
    let mut text = collapsed.join("\n");
    while text.contains("\n\n\n") {
        text = text.replace("\n\n\n", "\n\n");
    }
    text.trim().to_string()
}

#[derive(Default)]
struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    fn markdown(&self) -> String {
        let rows: Vec<&Vec<String>> = self.rows.iter().filter(|r| !r.is_empty()).collect();
        let width = rows.iter().map(|r| r.len()).max().unwrap_or(0);
        if width == 0 {
            return String::new();
        }
        let mut lines = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            let mut cells: Vec<String> =
                row.iter().map(|c| c.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
            cells.resize(width, String::new());
            lines.push(format!("| {} |", cells.join(" | ").replace('\n', " ")));
            if i == 0 {
                lines.push(format!("|{}|", vec!["---"; width].join("|")));
            }
        }
        lines.join("\n")
    }
}

fn push_text(out: &mut String, table: &mut Option<Table>, raw: &str, skipped: bool) {
    if skipped || raw.is_empty() {
        return;
    }
    let text = decode_entities(raw);
    match table.as_mut() {
        Some(t) => {
            if let Some(cell) = t.rows.last_mut().and_then(|r| r.last_mut()) {
                cell.push_str(&text.replace('|', "\\|"));
            }
        }
        None => {
            let squeezed: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
            if squeezed.is_empty() {
                if !out.ends_with([' ', '\n']) && !out.is_empty() && text.contains(' ') {
                    out.push(' ');
                }
                return;
            }
            if text.starts_with(char::is_whitespace) && !out.ends_with([' ', '\n']) {
                out.push(' ');
            }
            out.push_str(&squeezed);
            if text.ends_with(char::is_whitespace) {
                out.push(' ');
            }
        }
    }
}

fn block(out: &mut String) {
    let trimmed = out.trim_end_matches(' ').len();
    out.truncate(trimmed);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
}

fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    text.replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::html_to_text;

    #[test]
    fn a_table_becomes_a_markdown_table_with_its_header() {
        let html = "<table border=\"1\"><thead><tr><th></th><th>value</th></tr>\
            <tr><th>state</th><th></th></tr></thead><tbody><tr><th>CA</th><td>1 &amp; 2</td></tr>\
            </tbody></table>";
        assert_eq!(html_to_text(html), "|  | value |\n|---|---|\n| state |  |\n| CA | 1 & 2 |");
    }

    #[test]
    fn other_html_is_readable_text() {
        let html = "<style>b{}</style><h1>Title</h1><p>some <b>bold</b> text<br>next</p>\
            <ul><li>one</li><li>two</li></ul>";
        assert_eq!(html_to_text(html), "Title\nsome bold text\nnext\n- one\n- two");
    }
}
