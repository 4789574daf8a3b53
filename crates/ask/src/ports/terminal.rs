//! The terminal port: prints the card, reads a number, several numbers, a label or text.
//!
//! `skip` declines the card. End of input means nobody is there any more: "no operator".
//! An empty line asks again; it is never taken as consent or as a choice.

use async_trait::async_trait;
use tokio::{
    io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader},
    sync::Mutex,
};

use crate::{
    card::{Card, CardKind},
    port::{QuestionPort, Target},
    reply::{Answer, Rejection, Reply, SkipKind},
};

struct Io {
    reader: Box<dyn AsyncBufRead + Unpin + Send>,
    writer: Box<dyn AsyncWrite + Unpin + Send>,
}

/// Shows cards on a terminal, one at a time.
pub struct TerminalPort {
    io: Mutex<Io>,
}

impl std::fmt::Debug for TerminalPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminalPort").finish_non_exhaustive()
    }
}

impl TerminalPort {
    /// Reads answers from `reader` and writes cards to `writer`.
    pub fn new(
        reader: impl AsyncBufRead + Unpin + Send + 'static,
        writer: impl AsyncWrite + Unpin + Send + 'static,
    ) -> Self {
        TerminalPort { io: Mutex::new(Io { reader: Box::new(reader), writer: Box::new(writer) }) }
    }

    /// Reads from stdin and writes to stderr, so stdout stays free for results.
    pub fn stdio() -> Self {
        Self::new(BufReader::new(tokio::io::stdin()), tokio::io::stderr())
    }
}

/// Parses `2`, `2,3` or `2 3` as option numbers.
fn numbers(line: &str) -> Option<Vec<u32>> {
    let parts: Vec<&str> = line.split([',', ' ', ';']).filter(|p| !p.is_empty()).collect();
    if parts.is_empty() {
        return None;
    }
    parts.iter().map(|p| p.trim_end_matches('.').parse::<u32>().ok()).collect()
}

fn prompt(card: &Card) -> String {
    let what = match (card.options.is_empty(), card.multi_select, card.allow_free_text) {
        (true, _, _) => "type your answer".to_string(),
        (false, true, true) => "numbers like 1,3 or text".to_string(),
        (false, true, false) => "numbers like 1,3".to_string(),
        (false, false, true) => "a number or text".to_string(),
        (false, false, false) => "a number".to_string(),
    };
    let skip = match card.kind {
        CardKind::Question => "`skip` to skip",
        CardKind::Approval => "`skip` denies",
    };
    format!("card {} ({what}; {skip})> ", card.number)
}

/// Reads one reply from a line of input.
fn parse(card: &Card, line: &str) -> Reply {
    if line.eq_ignore_ascii_case("skip") || line.eq_ignore_ascii_case("s") {
        return Reply::Skipped { how: SkipKind::Declined };
    }
    if let Some(numbers) = numbers(line) {
        return Reply::Answered(Answer::options(numbers));
    }
    if let Some(number) = card.decode_choice(line) {
        return Reply::Answered(Answer::options([number]));
    }
    Reply::Answered(Answer::text(line))
}

#[async_trait]
impl QuestionPort for TerminalPort {
    async fn present(&self, _target: &Target, card: &Card, rejected: Option<&Rejection>) -> Reply {
        let mut io = self.io.lock().await;
        let intro = match rejected {
            Some(rejection) => format!("Not accepted: {}\n", rejection.reason),
            None => format!("\n{}", card.render()),
        };
        if let Err(e) = io.writer.write_all(intro.as_bytes()).await {
            return Reply::NoOperator { reason: format!("cannot write to the terminal: {e}") };
        }
        loop {
            let prompt = prompt(card);
            let written = async {
                io.writer.write_all(prompt.as_bytes()).await?;
                io.writer.flush().await
            }
            .await;
            if let Err(e) = written {
                return Reply::NoOperator { reason: format!("cannot write to the terminal: {e}") };
            }
            let mut line = String::new();
            match io.reader.read_line(&mut line).await {
                Ok(0) => {
                    return Reply::NoOperator {
                        reason: "the terminal closed (end of input)".into(),
                    };
                }
                Ok(_) => {}
                Err(e) => {
                    return Reply::NoOperator {
                        reason: format!("cannot read from the terminal: {e}"),
                    };
                }
            }
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            return parse(card, line);
        }
    }
}
