//! The in-process channel port: cards arrive on a receiver; the harness replies to each.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! # use std::sync::Arc;
//! # use agent_tools_ask::{Answer, AskRequest, AskSession, OptionSpec, Reply, Target};
//! # use agent_tools_ask::ports::channel::channel_port;
//! let (port, mut inbox) = channel_port(8);
//! let session = AskSession::new(Arc::new(port), Target::new("the harness"));
//! // elsewhere:
//! tokio::spawn(async move {
//!     while let Some(presented) = inbox.recv().await {
//!         presented.reply(Reply::Answered(Answer::options([2])));
//!     }
//! });
//! # let request = AskRequest::new("Which?", vec![OptionSpec::new("A"), OptionSpec::new("B")]);
//! # let cancel = tokio_util::sync::CancellationToken::new();
//! # let response = session.ask(&request, &cancel).await.unwrap();
//! # assert!(response.render().contains("Chosen: 2. B"));
//! # }
//! ```

use async_trait::async_trait;
use tokio::sync::{mpsc, oneshot};

use crate::{
    card::Card,
    port::{QuestionPort, Target},
    reply::{Rejection, Reply},
};

/// A card waiting for the harness's reply.
#[derive(Debug)]
pub struct Presented {
    pub target: Target,
    pub card: Card,
    /// Set when the previous answer to this card was rejected: show why.
    pub rejected: Option<Rejection>,
    reply: oneshot::Sender<Reply>,
}

impl Presented {
    /// Sends the operator's reply. A card dropped without a reply counts as "no operator".
    pub fn reply(self, reply: Reply) {
        let _ = self.reply.send(reply);
    }
}

/// The sending half, given to the session.
#[derive(Debug, Clone)]
pub struct ChannelPort {
    tx: mpsc::Sender<Presented>,
}

/// The receiving half, kept by the harness.
pub type Inbox = mpsc::Receiver<Presented>;

/// A channel port with room for `buffer` unanswered cards.
pub fn channel_port(buffer: usize) -> (ChannelPort, Inbox) {
    let (tx, rx) = mpsc::channel(buffer.max(1));
    (ChannelPort { tx }, rx)
}

#[async_trait]
impl QuestionPort for ChannelPort {
    async fn present(&self, target: &Target, card: &Card, rejected: Option<&Rejection>) -> Reply {
        let (reply, answer) = oneshot::channel();
        let presented = Presented {
            target: target.clone(),
            card: card.clone(),
            rejected: rejected.cloned(),
            reply,
        };
        if self.tx.send(presented).await.is_err() {
            return Reply::NoOperator {
                reason: "the harness that answers cards has closed its inbox".into(),
            };
        }
        answer.await.unwrap_or_else(|_| Reply::NoOperator {
            reason: "the harness dropped the card without replying".into(),
        })
    }
}
