//! One panel model (a *seat*) answering one question with a JSON ballot, on the chat client of
//! `specgap-agents` (its retries with seeded backoff, the deadline, usage and cost per try).
//!
//! A reply that is not the JSON object asked for gets one repair retry: the same request with
//! the use's repair text put before the user message (seed 002 A.9.3, A.9.5). A second
//! malformed reply makes the ballot [`BallotOutcome::Malformed`]; a service that fails after the
//! client's own retries makes it [`BallotOutcome::Failed`]. Both are dropped from the vote.

use serde_json::{Map, Value, json};
use specgap_agents::chat::wire::WireMessage;
use specgap_agents::chat::{ChatClient, ClientError};
use specgap_engine::session::SessionLink;
use specgap_store::BallotOutcome;

use crate::config::PanelModel;
use crate::error::PanelError;

/// What one seat's call produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Asked<T> {
    /// How it ended.
    pub outcome: BallotOutcome,
    /// The parsed ballot ([`BallotOutcome::Ballot`] only).
    pub parsed: Option<T>,
    /// The parsed ballot as JSON, as stored.
    pub vote: Option<Value>,
    /// Every request body sent.
    pub requests: Vec<Value>,
    /// Every reply text received (an error message for a failed try).
    pub responses: Vec<Value>,
    /// Why there is no ballot.
    pub error: Option<String>,
    /// The request was abandoned at the deadline or on a stop request: not the model's
    /// failure, so the caller keeps nothing of this subject.
    pub abandoned: bool,
}

/// A ballot's shape check: the JSON object of the reply → the ballot and its stored form, or
/// what is wrong with it.
pub type Parse<'a, T> = &'a dyn Fn(&Map<String, Value>) -> Result<(T, Value), String>;

/// One seat's chat client.
#[derive(Debug)]
pub struct SeatClient {
    /// 0-based position of the model in the panel file.
    pub seat: u32,
    /// The model name.
    pub model: String,
    client: ChatClient,
}

impl SeatClient {
    /// A client for `model` at `seat`; `seed` seeds the client's backoff jitter.
    ///
    /// # Errors
    /// [`PanelError::Client`] when the HTTP client cannot be built.
    pub fn new(seat: u32, model: &PanelModel, seed: u64) -> Result<Self, PanelError> {
        let client =
            ChatClient::new(&model.chat_config(), seed).map_err(|source| PanelError::Client { model: model.model.clone(), source })?;
        Ok(SeatClient { seat, model: model.model.clone(), client })
    }

    /// Takes the deadline and usage sink the following calls are held to and recorded in.
    pub fn attach(&mut self, link: &SessionLink) {
        self.client.attach(link);
    }

    /// Asks for a ballot: `system` and `user`, then on a malformed reply `repair` + a blank
    /// line + `user` once more.
    pub fn ask<T>(&mut self, system: &str, user: &str, repair: &str, parse: Parse<'_, T>) -> Asked<T> {
        let mut asked = Asked {
            outcome: BallotOutcome::Malformed,
            parsed: None,
            vote: None,
            requests: Vec::new(),
            responses: Vec::new(),
            error: None,
            abandoned: false,
        };
        let retry = format!("{repair}\n\n{user}");
        for message in [user, retry.as_str()] {
            let messages = [WireMessage::text("system", system), WireMessage::text("user", message)];
            asked.requests.push(self.client.request_body(&messages, &[]));
            match self.client.complete(&messages, &[]) {
                Ok(completion) => {
                    asked.responses.push(json!(completion.text));
                    let checked = crate::json::object_in(&completion.text)
                        .ok_or_else(|| "the reply is not a json object".to_string())
                        .and_then(|object| parse(&object));
                    match checked {
                        Ok((parsed, vote)) => {
                            asked.outcome = BallotOutcome::Ballot;
                            asked.parsed = Some(parsed);
                            asked.vote = Some(vote);
                            asked.error = None;
                            return asked;
                        }
                        Err(problem) => asked.error = Some(problem),
                    }
                }
                Err(error) => {
                    asked.abandoned = matches!(error, ClientError::Abandoned { .. });
                    asked.responses.push(json!({ "error": error.to_string() }));
                    asked.outcome = BallotOutcome::Failed;
                    asked.error = Some(error.to_string());
                    return asked;
                }
            }
        }
        asked
    }
}
