//! The question-detector panel of the delivery text channel (seed 002 A.9.3): it decides, live,
//! whether an agent's reply asks the client something and what, so that the simulated
//! customer answers exactly that.
//!
//! [`PanelDetector`] implements the engine's [`QuestionDetector`]: a reply without a question
//! mark (`?` or `？`) is not a question and costs no request; any other reply — with or
//! without tool calls, before and after the deliverable exists — is sent, its first 2,000 and
//! last 8,000 characters kept when longer ([`clip`]), to every seat in the seeded call order;
//! each returns `{"asking": …, "questions": [...]}` (one repair retry on malformed JSON); the
//! reply asks when a strict majority of the ballots returned say so, and its questions are
//! those of [`crate::vote::detector_verdict`]. Rhetorical questions and offers to do more are
//! not questions; compound questions come back split. No ballot at all is a
//! [`DetectorError`] (an infrastructure error of the attempt: the customer cannot hear).
//! The engine skips the detector when the reply lists its questions under the questions
//! heading.
//!
//! The detector is attached to the episode's user ([`DetectingUser`]) because it decides what
//! the customer answers: its panel is stored in the user's component of `run.toml`
//! (`detector` table, [`DETECTOR_KEY`]), so it is part of the user hash and the episode key.
//! [`DetectingUsers`] builds the users of a run that way.

use serde_json::{Map, Value, json};
use specgap_engine::detector::{Detection, DetectorError, QuestionDetector, ReplyText};
use specgap_engine::runner::{PlannedEpisode, UserFactory};
use specgap_engine::session::{FeedbackContext, Question, Reply, SessionLink, User, UserError};
use specgap_engine::text_channel::has_question_mark;
use specgap_protocol::run::ComponentRef;
use specgap_store::Ballot;
use specgap_task::TaskPackage;

use crate::config::Panel;
use crate::order::{call_order, subject_seed};
use crate::prompts::fill;
use crate::seat::SeatClient;
use crate::vote::{DetectorBallot, detector_verdict};

/// The key of the detector's table in a user's component configuration.
pub const DETECTOR_KEY: &str = "detector";
/// Characters kept from the start of an overlong reply (seed 002 A.9.3).
pub const CLIP_HEAD: usize = 2_000;
/// Characters kept from the end of an overlong reply.
pub const CLIP_TAIL: usize = 8_000;

/// `text`, or its first [`CLIP_HEAD`] and last [`CLIP_TAIL`] characters joined by a marker
/// line when it is longer than both together.
pub fn clip(text: &str) -> String {
    let chars = text.chars().count();
    if chars <= CLIP_HEAD + CLIP_TAIL {
        return text.to_string();
    }
    let head: String = text.chars().take(CLIP_HEAD).collect();
    let tail: String = text.chars().skip(chars - CLIP_TAIL).collect();
    format!("{head}\n[... {} characters left out ...]\n{tail}", chars - CLIP_HEAD - CLIP_TAIL)
}

/// The detector panel of one episode attempt.
#[derive(Debug)]
pub struct PanelDetector {
    panel: Panel,
    seats: Vec<SeatClient>,
    seed: u64,
    episode: String,
}

impl PanelDetector {
    /// A detector for `panel` in episode `episode` of a run with seed `seed`.
    ///
    /// # Errors
    /// [`UserError`] (deterministic) when a model client cannot be built.
    pub fn new(panel: Panel, seed: u64, episode: &str) -> Result<Self, UserError> {
        let seats = panel
            .models
            .iter()
            .enumerate()
            .map(|(seat, model)| SeatClient::new(seat as u32, model, subject_seed(seed, episode, &format!("detector:{seat}"))))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| UserError::with_source("cannot start the question detector", true, e))?;
        Ok(PanelDetector { panel, seats, seed, episode: episode.to_string() })
    }
}

impl QuestionDetector for PanelDetector {
    fn attach(&mut self, link: &SessionLink) {
        for seat in &mut self.seats {
            seat.attach(link);
        }
    }

    fn detect(&mut self, reply: &ReplyText<'_>) -> Result<Detection, DetectorError> {
        if !has_question_mark(reply.text) {
            return Ok(Detection::default());
        }
        let user = fill(&self.panel.prompts.user, &[("reply", &clip(reply.text))]);
        let subject = format!("turn:{}", reply.turn);
        let mut ballots: Vec<Ballot> = Vec::new();
        let mut returned = Vec::new();
        let order = call_order(self.seed, &self.episode, &subject, self.seats.len());
        for (position, seat) in order.into_iter().enumerate() {
            let client = &mut self.seats[seat as usize];
            let asked = client.ask(&self.panel.prompts.system, &user, &self.panel.prompts.repair, &parse_detection);
            let abandoned = asked.abandoned;
            if let Some(ballot) = &asked.parsed {
                returned.push(ballot.clone());
            }
            ballots.push(Ballot {
                panel: self.panel.name.clone(),
                subject: subject.clone(),
                seat,
                model: client.model.clone(),
                position: position as u32,
                prompt_version: self.panel.prompts.version.clone(),
                outcome: asked.outcome,
                vote: asked.vote,
                request: Value::Array(asked.requests),
                response: Value::Array(asked.responses),
                error: asked.error,
            });
            if abandoned {
                return Err(DetectorError { message: "a detector request was abandoned".into(), abandoned: true, ballots });
            }
        }
        match detector_verdict(&returned) {
            Some((asking, questions)) => Ok(Detection { questions: if asking { questions } else { Vec::new() }, ballots }),
            None => Err(DetectorError {
                message: format!("none of the {} detector models returned a ballot on turn {}", self.seats.len(), reply.turn),
                abandoned: false,
                ballots,
            }),
        }
    }
}

/// A detector ballot: `asking` (a boolean) and `questions` (strings; required and non-empty
/// when asking, ignored otherwise).
fn parse_detection(object: &Map<String, Value>) -> Result<(DetectorBallot, Value), String> {
    let asking = object.get("asking").and_then(Value::as_bool).ok_or("`asking` is not true or false")?;
    let questions: Vec<String> = if asking {
        let items = object.get("questions").and_then(Value::as_array).ok_or("`questions` is not a list")?;
        let questions: Vec<String> = items
            .iter()
            .map(|q| q.as_str().map(|s| s.trim().to_string()).ok_or_else(|| format!("`questions` holds {q}, not a string")))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .filter(|q| !q.is_empty())
            .collect();
        if questions.is_empty() {
            return Err("`asking` is true but no question is listed".into());
        }
        questions
    } else {
        Vec::new()
    };
    let vote = json!({ "asking": asking, "questions": questions });
    Ok((DetectorBallot { asking, questions }, vote))
}

/// A user that hears reply text through a detector panel; answers and feedback are the
/// wrapped user's.
pub struct DetectingUser {
    inner: Box<dyn User + Send>,
    detector: PanelDetector,
}

impl DetectingUser {
    /// `inner` with `detector`.
    pub fn new(inner: Box<dyn User + Send>, detector: PanelDetector) -> Self {
        DetectingUser { inner, detector }
    }
}

impl User for DetectingUser {
    fn attach(&mut self, link: &SessionLink) {
        self.inner.attach(link);
    }

    fn answer(&mut self, question: &Question) -> Result<Reply, UserError> {
        self.inner.answer(question)
    }

    fn feedback(&mut self, context: &FeedbackContext) -> Result<Reply, UserError> {
        self.inner.feedback(context)
    }

    fn detector(&mut self) -> Option<&mut dyn QuestionDetector> {
        Some(&mut self.detector)
    }
}

/// A user factory that wraps `inner`'s users in a [`DetectingUser`] when the user's component
/// configuration holds a [`DETECTOR_KEY`] table (a stored [`Panel`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct DetectingUsers<F> {
    /// The factory of the users themselves.
    pub inner: F,
}

impl<F: UserFactory> UserFactory for DetectingUsers<F> {
    fn make(&self, user: &ComponentRef, episode: &PlannedEpisode, package: &TaskPackage) -> Result<Box<dyn User + Send>, UserError> {
        let made = self.inner.make(user, episode, package)?;
        let Some(table) = user.config.get(DETECTOR_KEY).and_then(toml::Value::as_table) else {
            return Ok(made);
        };
        let panel = Panel::from_table(table).map_err(|e| UserError::with_source("cannot read the stored question detector", true, e))?;
        let detector = PanelDetector::new(panel, episode.key.seed, &episode.id)?;
        Ok(Box::new(DetectingUser::new(made, detector)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlong_replies_keep_their_head_and_tail() {
        assert_eq!(clip("short?"), "short?");
        let text: String = "a".repeat(3000) + &"b".repeat(5000) + &"c".repeat(4000);
        let clipped = clip(&text);
        assert!(clipped.starts_with(&"a".repeat(2000)));
        assert!(clipped.contains("\n[... 2000 characters left out ...]\n"));
        assert!(clipped.ends_with(&("b".repeat(4000) + &"c".repeat(4000))));
        // Characters, not bytes.
        let wide: String = "é".repeat(10_001);
        assert_eq!(clip(&wide).chars().filter(|c| *c == 'é').count(), 10_000);
    }

    #[test]
    fn asking_ballots_must_list_their_questions() {
        let object = |v: Value| v.as_object().unwrap().clone();
        let (b, _) = parse_detection(&object(json!({"asking": true, "questions": ["Which unit?", " ", "What range?"]}))).unwrap();
        assert_eq!(b.questions, ["Which unit?", "What range?"]);
        let (b, vote) = parse_detection(&object(json!({"asking": false, "questions": ["x"]}))).unwrap();
        assert_eq!((b.asking, vote), (false, json!({"asking": false, "questions": []})));
        assert_eq!(
            parse_detection(&object(json!({"asking": true, "questions": []}))).unwrap_err(),
            "`asking` is true but no question is listed"
        );
    }
}
