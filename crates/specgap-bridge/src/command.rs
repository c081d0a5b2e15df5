//! The harness tools as commands on the agent's `PATH` (DESIGN §5; the names are normative):
//!
//! ```text
//! ask_user "<question>" ["<question>" ...]   one invocation = one clarification round
//! submit ["<summary>"]
//! ```
//!
//! One question is sent as `question`, several as `questions` (each answered separately, seed
//! 002 A.9.3). The answer (the reply, or the submission's result message with the owner's
//! feedback after a failed submission) is printed on standard output; a refusal goes to
//! standard error. Exit statuses ([`exit`]):
//!
//! | status | meaning |
//! | ---: | --- |
//! | 0 | answered; the submission was accepted or received |
//! | 1 | `submit`: returned with feedback (printed); keep working |
//! | 2 | usage error (nothing was sent) |
//! | 3 | refused by the harness (not offered here, or a rule of the episode) |
//! | 4 | the episode is over: stop working |
//! | 5 | the harness cannot be reached (it is gone, or this is not an episode's sandbox) |

use std::io::Write;

use serde_json::{Value, json};

use crate::client::{BridgeClient, ClientError};
use crate::wire::{HarnessTool, Response};

/// Exit statuses of the commands (module table).
pub mod exit {
    /// Answered; accepted or received.
    pub const OK: u8 = 0;
    /// `submit` returned with feedback.
    pub const FEEDBACK: u8 = 1;
    /// Bad command line; nothing was sent.
    pub const USAGE: u8 = 2;
    /// Refused by the harness.
    pub const REFUSED: u8 = 3;
    /// The episode is over.
    pub const ENDED: u8 = 4;
    /// The harness cannot be reached.
    pub const UNREACHABLE: u8 = 5;
}

const ASK_USAGE: &str = "usage: ask_user \"<question>\" [\"<question>\" ...]\n\
    Asks the person you work for; each question is answered separately and the answers are printed.\n\
    One invocation is one round of questions.";
const SUBMIT_USAGE: &str = "usage: submit [\"<summary>\"]\n\
    Hands in the workspace as it is now; prints whether it was accepted and, if not, the feedback.\n\
    Exit status 0: accepted or received; 1: returned with feedback; 4: the episode is over.";

/// The arguments object of a command line, or the usage text to print (with whether that is
/// an error).
fn arguments(tool: HarnessTool, args: &[String]) -> Result<Value, (&'static str, bool)> {
    let usage = match tool {
        HarnessTool::AskUser => ASK_USAGE,
        _ => SUBMIT_USAGE,
    };
    if args.len() == 1 && (args[0] == "-h" || args[0] == "--help") {
        return Err((usage, false));
    }
    let args = if args.first().is_some_and(|a| a == "--") { &args[1..] } else { args };
    match tool {
        HarnessTool::AskUser => match args {
            [] => Err((usage, true)),
            _ if args.iter().any(|q| q.trim().is_empty()) => Err((usage, true)),
            [question] => Ok(json!({ "question": question })),
            questions => Ok(json!({ "questions": questions })),
        },
        HarnessTool::Submit => match args {
            [] => Ok(json!({})),
            [summary] => Ok(json!({ "summary": summary })),
            _ => Err((usage, true)),
        },
        HarnessTool::WritePlan => match args {
            [plan] if !plan.trim().is_empty() => Ok(json!({ "plan": plan })),
            _ => Err(("usage: write_plan \"<plan>\"", true)),
        },
    }
}

/// The exit status of a harness response to a call of `tool`.
pub fn status_of(tool: HarnessTool, response: &Response) -> u8 {
    match (response.is_error, response.end) {
        (true, true) => exit::ENDED,
        (true, false) => exit::REFUSED,
        (false, false) if tool == HarnessTool::Submit => exit::FEEDBACK,
        (false, _) => exit::OK,
    }
}

/// Runs a command: parses `args` (the words after the command name), calls the harness
/// through `client`, prints the answer and returns the exit status ([`exit`]).
pub fn run<'a>(
    tool: HarnessTool,
    args: &[String],
    client: Result<BridgeClient, ClientError>,
    out: &'a mut dyn Write,
    err: &'a mut dyn Write,
) -> u8 {
    let arguments = match arguments(tool, args) {
        Ok(arguments) => arguments,
        Err((usage, is_error)) => {
            let stream = if is_error { err } else { out };
            let _ = writeln!(stream, "{usage}");
            return if is_error { exit::USAGE } else { exit::OK };
        }
    };
    let response = match client.and_then(|client| client.call(tool, arguments)) {
        Ok(response) => response,
        Err(e) => {
            let _ = writeln!(err, "{}: {e}", tool.name());
            return exit::UNREACHABLE;
        }
    };
    let stream = if response.is_error { err } else { out };
    let text = response.text.trim_end_matches('\n');
    let _ = writeln!(stream, "{text}");
    let _ = stream.flush();
    status_of(tool, &response)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn one_question_is_question_and_several_are_questions() {
        assert_eq!(arguments(HarnessTool::AskUser, &words(&["why?"])), Ok(json!({"question": "why?"})));
        assert_eq!(arguments(HarnessTool::AskUser, &words(&["a?", "b?"])), Ok(json!({"questions": ["a?", "b?"]})));
        assert_eq!(arguments(HarnessTool::AskUser, &words(&["--", "-x?"])), Ok(json!({"question": "-x?"})));
        assert_eq!(arguments(HarnessTool::AskUser, &words(&[])), Err((ASK_USAGE, true)));
        assert_eq!(arguments(HarnessTool::AskUser, &words(&["a?", " "])), Err((ASK_USAGE, true)));
        assert_eq!(arguments(HarnessTool::AskUser, &words(&["--help"])), Err((ASK_USAGE, false)));
    }

    #[test]
    fn submit_takes_at_most_one_summary() {
        assert_eq!(arguments(HarnessTool::Submit, &words(&[])), Ok(json!({})));
        assert_eq!(arguments(HarnessTool::Submit, &words(&["done"])), Ok(json!({"summary": "done"})));
        assert_eq!(arguments(HarnessTool::Submit, &words(&["a", "b"])), Err((SUBMIT_USAGE, true)));
    }

    #[test]
    fn statuses_follow_error_end_and_tool() {
        let ok = Response::ok("x");
        assert_eq!(status_of(HarnessTool::AskUser, &ok), exit::OK);
        assert_eq!(status_of(HarnessTool::Submit, &ok), exit::FEEDBACK);
        assert_eq!(status_of(HarnessTool::Submit, &ok.clone().ended()), exit::OK);
        assert_eq!(status_of(HarnessTool::AskUser, &Response::error("no")), exit::REFUSED);
        assert_eq!(status_of(HarnessTool::Submit, &Response::error("over").ended()), exit::ENDED);
    }

    #[test]
    fn a_missing_harness_is_status_5_with_a_message() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let status =
            run(HarnessTool::AskUser, &words(&["q?"]), Err(ClientError::NotConfigured("SPECGAP_BRIDGE_SOCKET")), &mut out, &mut err);
        assert_eq!(status, exit::UNREACHABLE);
        assert!(out.is_empty());
        assert_eq!(
            String::from_utf8(err).unwrap(),
            "ask_user: the harness tools are not set up here: SPECGAP_BRIDGE_SOCKET is not set (run this inside a specgap episode)\n"
        );
    }
}
